#!/usr/bin/env node
// bench/clients.mjs: time to first output through each way a remote caller
// reaches agentjail serve (issue 37): a sandbox made and print(1) run in it,
// until its stdout reaches the caller, by five paths side by side in one run,
// round by round:
//
//   v1 fetch   POST /v1/sessions, then POST /v1/sessions/ID/runs as an event
//              stream, read until the stdout event (node's fetch): the API
//              with nothing in front, the baseline
//   v1 curl    the same two calls by curl, spawned (what a shell user pays)
//   ts client  @agentjail/client (clients/typescript): connect().session(),
//              then run("print(1)", {onStdout}) until the callback
//   py client  agentjail.connect() in a Python process of its own (timed
//              there, from before session() to the on_stdout callback; this
//              script only says when)
//   e2b sdk    E2B's own code-interpreter SDK, unmodified: Sandbox.create()
//              and runCode("print(1)", {onStdout}) until the callback
//
// Each path's sandbox is closed after its round (outside the figure). Medians
// and p95, and each path's median over v1 fetch's (and its p50 minus v1
// fetch's: what the client adds); figures only, never a verdict. Also
// commands.run("true") through the SDK against exec of true through the TS
// client and over fetch, in one kept sandbox/session each.
//
//   node bench/clients.mjs [ROUNDS] [serve args...]   (make bench-clients)
import { spawn, execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const sdk = await import(join(root, 'tests/e2b/node_modules/@e2b/code-interpreter/dist/index.mjs'));
const aj = await import(join(root, 'clients/typescript/dist/index.js'));
const AGENTJAIL = join(root, 'build', 'agentjail');
const rounds = Number(process.argv[2] ?? 20);
const extra = process.argv.slice(3);
const UID_BASE = Number(process.env.AJ_SERVE_UID_BASE ?? 2160000000) + 7000000;

const child = spawn(AGENTJAIL, ['serve', '--listen', '127.0.0.1:0', '--uid-base', String(UID_BASE),
  '--state-dir', `/run/agentjail-bench-e2b-${UID_BASE}`, ...extra],
{ stdio: ['ignore', 'pipe', 'ignore'] });
const seen = {};
let out = '';
for await (const chunk of child.stdout) {
  out += chunk;
  for (const line of out.split('\n')) {
    const [k, v] = line.split('=');
    if (k && v) seen[k] = v;
  }
  if (seen.AGENTJAIL_URL) break;
}
const url = seen.AGENTJAIL_URL, key = seen.AGENTJAIL_KEY;
if (!url) throw new Error('agentjail serve did not start (its arguments?)');
process.env.E2B_API_URL = url;
process.env.E2B_SANDBOX_URL = url;
process.env.E2B_API_KEY = key;
const auth = { Authorization: `Bearer ${key}` };

async function v1Fetch() {
  const t0 = performance.now();
  const s = await (await fetch(`${url}/v1/sessions`, { method: 'POST', headers: auth, body: '{}' })).json();
  const r = await fetch(`${url}/v1/sessions/${s.id}/runs`, {
    method: 'POST', headers: { ...auth, Accept: 'text/event-stream' }, body: '{"code":"print(1)"}',
  });
  const reader = r.body.getReader();
  let text = '', t = -1;
  while (t < 0) {
    const { value, done } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
    if (text.includes('event: stdout')) t = performance.now() - t0;
  }
  await reader.cancel();
  await fetch(`${url}/v1/sessions/${s.id}`, { method: 'DELETE', headers: auth });
  return t;
}

function curl(args) {
  return execFileSync('curl', ['-sS', '-H', `Authorization: Bearer ${key}`, ...args]).toString();
}

async function v1Curl() {
  const t0 = performance.now();
  const s = JSON.parse(curl(['-d', '{}', `${url}/v1/sessions`]));
  const text = curl(['-N', '-H', 'Accept: text/event-stream', '-d', '{"code":"print(1)"}',
    `${url}/v1/sessions/${s.id}/runs`]);
  const t = text.includes('event: stdout') ? performance.now() - t0 : -1;
  curl(['-X', 'DELETE', `${url}/v1/sessions/${s.id}`]);
  return t;
}

async function tsClient() {
  const t0 = performance.now();
  const s = await aj.connect({ url, key }).session();
  let t = -1;
  await s.run('print(1)', { onStdout: () => { if (t < 0) t = performance.now() - t0; } });
  await s.close();
  return t;
}

// The Python client in a process of its own, kept across rounds: a line in
// asks for a round, a line out is its figure.
const py = spawn(process.env.PYTHON ?? '/usr/bin/python3', ['-u', '-c', `
import sys, time
sys.path.insert(0, ${JSON.stringify(join(root, 'python'))})
import agentjail
sb = agentjail.connect(${JSON.stringify(url)}, ${JSON.stringify(key)})
for line in sys.stdin:
    t0 = time.perf_counter()
    first = []
    s = sb.session()
    s.run("print(1)", on_stdout=lambda text: first or first.append(time.perf_counter()))
    s.close()
    print((first[0] - t0) * 1000 if first else -1, flush=True)
`], { stdio: ['pipe', 'pipe', 'inherit'] });
const pyLines = (async function* () {
  let buf = '';
  for await (const chunk of py.stdout) {
    buf += chunk;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) { yield buf.slice(0, i); buf = buf.slice(i + 1); }
  }
})();
async function pyClient() {
  py.stdin.write('go\n');
  return Number((await pyLines.next()).value);
}

async function e2bSdk() {
  const t0 = performance.now();
  const sbx = await sdk.Sandbox.create();
  let t = -1;
  await sbx.runCode('print(1)', { onStdout: () => { if (t < 0) t = performance.now() - t0; } });
  await sbx.kill();
  return t;
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] : NaN;
};

async function table(title, rows) {
  const got = Object.fromEntries(Object.keys(rows).map((k) => [k, []]));
  for (let r = -2; r < rounds; r++) {
    for (const [name, fn] of Object.entries(rows)) {
      const t = await fn();
      if (r >= 0 && t >= 0) got[name].push(t);
    }
  }
  const base = pct(Object.values(got)[0], 50);
  console.log(title);
  for (const [name, xs] of Object.entries(got))
    console.log(`  ${name.padEnd(10)} p50 ${pct(xs, 50).toFixed(2).padStart(8)} ms  p95 ` +
      `${pct(xs, 95).toFixed(2).padStart(8)} ms  x${(pct(xs, 50) / base).toFixed(3)}  ` +
      `${(pct(xs, 50) - base >= 0 ? '+' : '')}${(pct(xs, 50) - base).toFixed(2)} ms  ` +
      `(${xs.length} rounds)`);
}

try {
  await table(`create + print(1) until its stdout, ${rounds} interleaved rounds ` +
    `(serve ${extra.join(' ') || 'defaults'}):`, { 'v1 fetch': v1Fetch, 'v1 curl': v1Curl,
    'ts client': tsClient, 'py client': pyClient, 'e2b sdk': e2bSdk });
  const sbx = await sdk.Sandbox.create();
  const s = await (await fetch(`${url}/v1/sessions`, { method: 'POST', headers: auth, body: '{}' })).json();
  const ts = await aj.connect({ url, key }).session();
  await table('a command, true, in a kept sandbox:', {
    'v1 exec': async () => {
      const t0 = performance.now();
      await (await fetch(`${url}/v1/sessions/${s.id}/exec`, { method: 'POST', headers: auth,
        body: '{"argv":["true"]}' })).json();
      return performance.now() - t0;
    },
    'ts exec': async () => {
      const t0 = performance.now();
      await ts.exec(['true']);
      return performance.now() - t0;
    },
    'e2b sdk': async () => {
      const t0 = performance.now();
      await sbx.commands.run('true');
      return performance.now() - t0;
    },
  });
  await sbx.kill();
  await ts.close();
} finally {
  py.stdin.end();
  child.kill('SIGTERM');
}
