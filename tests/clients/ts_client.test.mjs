// The TypeScript client (clients/typescript, @agentjail/client) as a user
// gets it: `npm pack` makes the tarball, a fresh project installs it, and
// every test imports it from there, against a real serve this file starts.
// Then the example agent loop replays a recorded transcript, a TypeScript
// file of the user's type-checks against the package's declarations, the
// result text is held to the C library's words, and TLS is refused unless
// the CA is given.
//
// Safety: the code runs only inside the sandbox (the process tier), under a
// uid range of this file's own (AJ_SERVE_UID_BASE + 7000000), which the
// last test checks is empty; every server listens on loopback.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { startServe as startServeIn } from '../lib/serve.mjs';
import { sandboxProcesses } from '../mcp/procs.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const clientDir = join(root, 'clients', 'typescript');
const AGENTJAIL = process.env.AJ_CLI ?? join(root, 'build', 'test', 'agentjail');
const PYTHON = process.env.PYTHON ?? '/usr/bin/python3';
const UID_BASE = Number(process.env.AJ_SERVE_UID_BASE ?? 2150000000) + 7000000;

function startServe(args, env = process.env) {
  return startServeIn(AGENTJAIL, { base: UID_BASE, name: 'ts-test', args: ['--timeout', '10', ...args], env });
}

async function stop(s) {
  if (!s || s.child.exitCode !== null) return;
  s.child.kill('SIGTERM');
  const [code] = await once(s.child, 'exit');
  // A clean stop: exit 0, so no sanitizer report was made.
  assert.equal(code, 0, s.stderr().slice(-3000));
}

let project, aj, serve, keysDir;
const servers = [];

before(async () => {
  // What a user installs: the packed tarball, into a project of its own.
  project = mkdtempSync(join(tmpdir(), 'aj-ts-client-'));
  const tarball = execFileSync('npm', ['pack', '--silent', '--pack-destination', project],
    { cwd: clientDir }).toString().trim().split('\n').pop();
  writeFileSync(join(project, 'package.json'),
    JSON.stringify({ name: 'agent', private: true, type: 'module' }));
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--silent', '--offline',
    join(project, tarball)], { cwd: project });
  aj = await import(pathToFileURL(join(project, 'node_modules', '@agentjail', 'client', 'dist',
    'index.js')));
  keysDir = mkdtempSync(join(tmpdir(), 'aj-ts-keys-'));
  const file = join(keysDir, 'keys.json');
  const add = (name, ...more) => execFileSync(AGENTJAIL, ['keys', 'add', '--file', file, name,
    ...more], { stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim();
  const key = add('alice', '--sessions', '8');
  const slowKey = add('slow', '--runs-per-minute', '1');
  serve = await startServe(['--keys', file, '--session-idle', '120',
    '--checkpoint-dir', join(keysDir, 'checkpoints')]);
  serve.key = key;
  serve.slowKey = slowKey;
});

after(async () => {
  for (const s of [serve, ...servers]) await stop(s);
  if (project) rmSync(project, { recursive: true, force: true });
  if (keysDir) rmSync(keysDir, { recursive: true, force: true });
});

const sb = () => aj.connect({ url: serve.url, key: serve.key });

test('a run prints and ends; a failure is a status, never a throw', async () => {
  const ex = await sb().run('print(6 * 7)');
  assert.deepEqual([ex.status, ex.exitCode, ex.stdout, ex.ok, ex.tier], ['ok', 0, '42\n', true,
    'process']);
  const bad = await sb().run('import sys\nprint("e", file=sys.stderr)\nsys.exit(3)');
  assert.deepEqual([bad.status, bad.exitCode, bad.stderr], ['error', 3, 'e\n']);
  assert.equal((await sb().run('while True: pass', { timeout: 1 })).status, 'timeout');
  assert.equal((await sb().run('console.log(6 * 7)', { language: 'javascript' })).stdout, '42\n');
  assert.equal(await sb().tier(), 'process');
});

test('output reaches the callbacks as it comes; a stream yields events then the result',
  async () => {
    const seen = [];
    const ex = await sb().run('for i in range(3): print(i, flush=True)',
      { onStdout: (t) => seen.push(t) });
    assert.equal(seen.join(''), '0\n1\n2\n');
    assert.equal(ex.stdout, '0\n1\n2\n');
    const events = [];
    const stream = sb().stream('print("a", flush=True)\nprint("b")');
    for await (const ev of stream) events.push(ev);
    assert.ok(stream.runId);
    assert.equal(events.at(-1).type, 'result');
    assert.equal(events.filter((e) => e.type === 'stdout').map((e) => e.text).join(''), 'a\nb\n');
  });

test('an abort signal cancels the run; leaving a stream early cancels it too', async () => {
  const box = sb();
  const ac = new AbortController();
  let runId;
  const running = box.run('import time\nprint("started", flush=True)\ntime.sleep(30)',
    { signal: ac.signal, onStdout: () => ac.abort() });
  await assert.rejects(running, (e) => e.name === 'AbortError');
  const stream = box.stream('import time\nprint("x", flush=True)\ntime.sleep(30)');
  for await (const ev of stream) { runId = stream.runId; if (ev.type === 'stdout') break; }
  const ended = await box.handle(runId).wait(60000);
  assert.equal(ended.status, 'killed');
});

test('a submitted run is waited for and its events read again', async () => {
  const h = await sb().submit('print("later")');
  assert.equal((await h.wait(60000)).stdout, 'later\n');
  const evs = [];
  for await (const ev of h.events()) evs.push(ev);
  assert.equal(evs.at(-1).execution.stdout, 'later\n');
  const { runs } = await sb().runs({ limit: 5 });
  assert.ok(runs.some((r) => r.id === h.id));
});

test('a session keeps state and files; errors are typed', async () => {
  const s = await sb().session();
  try {
    await s.run('x = 21');
    assert.equal((await s.run('print(x * 2)')).stdout, '42\n');
    await s.putFile('data/a.txt', 'hello');
    assert.equal(new TextDecoder().decode(await s.getFile('data/a.txt')), 'hello');
    assert.deepEqual(await s.listFiles('data'), [{ name: 'a.txt', type: 'file', size: 5 }]);
    await assert.rejects(s.getFile('missing'), (e) => e instanceof aj.FileTransferError
      && e.errno === 'ENOENT' && e.status === 404);
    await assert.rejects(s.putFile('../x', 'y'), (e) => e instanceof aj.FileTransferError
      && e.errno === 'EACCES');
    const chart = await s.run('import matplotlib\nmatplotlib.use("Agg")\n'
      + 'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])');
    assert.deepEqual(chart.images.map((i) => i.mime), ['image/png']);
    assert.deepEqual([...chart.images[0].data.subarray(0, 4)], [0x89, 0x50, 0x4e, 0x47]);
    await assert.rejects(s.egressKeep({ hosts: ['example.com:443'] }),
      (e) => e instanceof aj.EgressError);
    // A notebook cell: the last value apart; a context of its own.
    const c = await s.cell('x * 2');
    assert.deepEqual([c.stdout, c.value], ['', '42']);
    assert.equal((await s.cell('x = 1\nx', { context: 'c1' })).value, '1');
    assert.equal((await s.cell('x')).value, '21');
    assert.match((await s.cell('x', { context: 'c1', fresh: true })).stderr, /NameError/);
    await assert.rejects(s.cell('1', { context: 'a b' }), (e) => e instanceof aj.ConfigError
      && e.status === 400 && /context: a name is/.test(e.message));
  } finally {
    await s.close();
  }
  await assert.rejects(s.run('1'), (e) => e instanceof aj.SessionClosed);
  await s.close();
});

test('pause, resume and fork keep a session\'s state', async () => {
  const s = await sb().session();
  const copies = [];
  try {
    await s.run('x = [1]\ndef f():\n    return sum(x)');
    const info = await s.pause();
    assert.equal(info.note, '');
    await assert.rejects(s.pause(), (e) => e instanceof aj.CheckpointError && e.status === 409);
    assert.equal((await s.run('x.append(2)\nprint(f())')).stdout, '3\n');
    await s.pause();
    await s.resume();
    copies.push(...await s.fork(2));
    for (const [i, c] of copies.entries())
      assert.equal((await c.run(`x.append(${i})\nprint(f())`)).stdout, `${3 + i}\n`);
    assert.equal((await s.run('print(x)')).stdout, '[1, 2]\n');
    await assert.rejects(s.fork(0), (e) => e instanceof aj.ConfigError);
  } finally {
    for (const c of copies) await c.close();
    await s.close();
  }
});

test('a checkpoint kept on serve is restored, listed and deleted', async () => {
  const s = await sb().session();
  let again;
  try {
    await s.run('x = 41');
    const c = await s.checkpoint({ name: 'first' });
    assert.equal(c.session, s.id);
    assert.equal(c.name, 'first');
    assert.ok(c.expires > c.created && c.bytes > 0);
    await s.run('x = 0');
    assert.ok((await sb().checkpoints()).some((k) => k.id === c.id));
    again = await sb().restore(c.id);
    assert.equal((await again.run('print(x + 1)')).stdout, '42\n');
    assert.equal(await sb().deleteCheckpoint(c.id), true);
    assert.equal(await sb().deleteCheckpoint(c.id), false);
    await assert.rejects(sb().restore(c.id),
      (e) => e instanceof aj.CheckpointError && e.status === 404);
  } finally {
    await again?.close();
    await s.close();
  }
});

test('commands, background commands and a terminal', async () => {
  const s = await sb().session();
  try {
    await s.putFile('sub/f.txt', 'x');
    const ex = await s.exec('echo out; echo err >&2; exit 4');
    assert.deepEqual([ex.status, ex.exitCode, ex.stdout, ex.stderr], ['error', 4, 'out\n', 'err\n']);
    assert.equal((await s.exec(['ls'], { cwd: 'sub' })).stdout, 'f.txt\n');
    assert.equal((await s.exec('cat', { stdin: 'fed' })).stdout, 'fed');
    assert.equal((await s.exec('echo $G', { env: { G: 'hi' } })).stdout, 'hi\n');
    const seen = [];
    await s.exec('echo streamed', { onStdout: (t) => seen.push(t) });
    assert.equal(seen.join(''), 'streamed\n');
    await assert.rejects(s.exec('true', { cwd: '../..' }), (e) => e instanceof aj.InvalidCommand);

    const p = await s.spawn('read line; echo got $line', { keepStdin: true });
    assert.ok((await s.processes()).some((q) => q.pid === p.pid && q.running));
    await p.sendStdin('one\n');
    await p.closeStdin();
    const out = [];
    assert.equal((await p.wait({ onStdout: (t) => out.push(t) })).stdout, 'got one\n');
    assert.equal(out.join(''), 'got one\n');
    const sleeper = await s.spawn('sleep 60');
    assert.equal(await sleeper.poll(), undefined);
    await sleeper.kill('SIGKILL');
    assert.equal((await sleeper.wait()).status, 'killed');
    await assert.rejects(s.process(999999).kill(), (e) => e instanceof aj.ProcessError
      && e.status === 404);

    const t = await s.pty({ cols: 80, rows: 24, command: ['/bin/sh'] });
    await t.resize(100, 30);
    await t.sendStdin('stty size; exit\n');
    assert.match((await t.wait()).stdout, /30 100/);
  } finally {
    await s.close();
  }
});

test('a key serve does not hold, and one over its rate, are typed', async () => {
  await assert.rejects(aj.connect({ url: serve.url, key: 'wrong' }).run('1'),
    (e) => e instanceof aj.Unauthorized && e.status === 401);
  const slow = aj.connect({ url: serve.url, key: serve.slowKey });
  assert.equal((await slow.run('print(1)')).stdout, '1\n');
  await assert.rejects(slow.run('print(1)'), (e) => e instanceof aj.RateLimited
    && e.code === 'rate_limited' && e.retryAfter >= 1);
  assert.throws(() => aj.connect({ url: 'ftp://x' }), (e) => e instanceof aj.ConfigError
    && e.status === 0 && /^connect: url/.test(e.message));
});

test('the tool: serve\'s definition, the library\'s words, every API shape', async () => {
  const tool = await sb().tool();
  assert.equal(tool.name, 'run_python');
  assert.match(tool.description, /Python/);
  assert.deepEqual(tool.parameters.required, ['code']);
  assert.equal(tool.openai().function.name, 'run_python');
  assert.equal(tool.anthropic().input_schema.type, 'object');
  const v = tool.vercel((schema) => ({ wrapped: schema }));
  assert.deepEqual(v.inputSchema.wrapped.required, ['code']);
  assert.match(await v.execute({ code: 'print(5)' }), /--- stdout ---\n5\n/);
  const msg = await tool.handleOpenAI({ id: 'c1', function: { name: 'run_python',
    arguments: '{"code": "print(1)"}' } });
  assert.equal(msg.tool_call_id, 'c1');
  assert.match(msg.content, /^status: ok \(exit code 0\)/);
  const res = await tool.handleAnthropic({ id: 't1', name: 'run_python', input: { code: '1/0' } });
  assert.equal(res.is_error, true);
  assert.match(res.content[0].text, /ZeroDivisionError/);
  const out = await tool.handleOpenAIResponse({ call_id: 'r1', name: 'nope', arguments: '{}' });
  assert.equal(out.output, 'Unknown tool: nope');
  const session = await sb().tool({ session: true });
  assert.match(session.description, /session/);
  await session.call({ code: 'y = 3' });
  assert.match((await session.call({ code: 'print(y)' })).text, /--- stdout ---\n3\n/);
  await session.close();
});

test('the result text and argument checks are the C library\'s words', async () => {
  // The corpus and the library's own text of each, from the Python
  // binding over libagentjail.
  const corpus = [
    { status: 'ok', exit_code: 0, stdout: '42\n', stderr: 'ünïcode ✓\n' },
    { status: 'error', exit_code: 3, stderr: 'Traceback\n', message: 'a note' },
    { status: 'killed', signal: 9, message: 'cancelled by the caller' },
    { status: 'timeout', stdout: 'x'.repeat(100), stdout_truncated: true, stderr_truncated: true },
    { status: 'ok', exit_code: 0, images: [{ name: 'figure-1.png', mime: 'image/png',
      data: Buffer.from('\x89PNG....').toString('base64') }], images_dropped: 2 },
    { status: 'ok', exit_code: 0, egress: { limit: 'out_mb reached', connections: [
      { host: 'a.example', port: 443, allowed: true, reason: 'rule' },
      { host: 'b.example', port: 80, allowed: false, reason: 'no rule allows it' },
      { host: 'c.example', port: 443, allowed: true, failure: 'refused', reason: 'refused' },
      { host: 'd.example', port: 1, allowed: false, reason: 'r' },
      { host: 'e.example', port: 2, allowed: false, reason: 'r' }] } },
  ];
  const args = ['{"code": "print(1)"}', '{"code": 7}', '[1]', '{"x": 1}', '{"code": "a", "m": 1}'];
  const prog = `
import json, sys
sys.path.insert(0, ${JSON.stringify(join(root, 'python'))})
from agentjail.result import execution_from_json
from agentjail._native import ffi, lib
corpus, args = json.load(sys.stdin)
texts = [execution_from_json(dict({"tier": "process", "wall_ms": 1, "cpu_ms": 1,
                                   "memory_kb": 1}, **o)).text() for o in corpus]
words = []
for a in args:
    code, n, err = ffi.new("char **"), ffi.new("size_t *"), ffi.new("struct aj_error *")
    if lib.aj_tool_arguments(a.encode(), len(a.encode()), code, n, err):
        words.append(ffi.string(err.message).decode())
    else:
        words.append(None)
        lib.aj_free(code[0])
print(json.dumps([texts, words]))
`;
  const [texts, words] = JSON.parse(execFileSync(PYTHON, ['-c', prog],
    { input: JSON.stringify([corpus, args]) }).toString());
  corpus.forEach((o, i) => {
    const ex = { ...o, tier: 'process', wall_ms: 1, cpu_ms: 1, memory_kb: 1 };
    assert.equal(aj.resultText(executionFrom(ex)), texts[i], `corpus[${i}]`);
  });
  args.forEach((a, i) => {
    const { why } = aj.codeArgument(a);
    assert.equal(why === undefined ? null : `Invalid arguments for run_python: ${why}`, words[i]);
  });
});

// An Execution as the client makes it, from a result object.
function executionFrom(o) {
  const images = (o.images ?? []).map((i) => ({ name: i.name, mime: i.mime,
    data: new Uint8Array(Buffer.from(i.data, 'base64')) }));
  return { status: o.status, ok: o.status === 'ok', exitCode: o.exit_code ?? null,
    signal: o.signal ?? null, stdout: o.stdout ?? '', stderr: o.stderr ?? '',
    stdoutTruncated: !!o.stdout_truncated, stderrTruncated: !!o.stderr_truncated, wallMs: 1,
    cpuMs: 1, memoryKb: 1, message: o.message ?? null, tier: 'process', images,
    imagesDropped: o.images_dropped ?? 0, egress: o.egress ?? null, background: [],
    value: null, valueHtml: null, runId: null, raw: o };
}

test('the example agent loop replays its transcript', () => {
  // The example as a user would have it: a file of their project, which
  // imports the installed package by name.
  copyFileSync(join(clientDir, 'examples', 'agent.mjs'), join(project, 'agent.mjs'));
  const out = execFileSync('node', ['agent.mjs'], {
    cwd: project,
    env: { ...process.env, AGENTJAIL_URL: serve.url, AGENTJAIL_KEY: serve.key,
      TRANSCRIPT: join(here, 'transcript.json') },
  }).toString();
  assert.equal(out, [
    'tool call_1: status: ok (exit code 0) | 385',
    'tool call_2: status: ok (exit code 0) | 19.621',
    'tool call_3: Invalid arguments for run_python: \'code\' must be a string holding the '
      + 'Python program',
    'answer: 385, and its square root is about 19.621.', ''].join('\n'));
});

test('a user\'s TypeScript type-checks against the package\'s declarations', () => {
  writeFileSync(join(project, 'use.ts'), `
import { connect, Execution, RunEvent, SessionClosed } from '@agentjail/client';
async function main(): Promise<number> {
  const sb = connect({ url: 'http://127.0.0.1:1', key: 'k' });
  const ex: Execution = await sb.run('print(1)', { timeout: 5, onStdout: (t: string) => t });
  for await (const ev of sb.stream('print(2)')) {
    const e: RunEvent = ev;
    if (e.type === 'result') return e.execution.exitCode ?? -1;
  }
  const s = await sb.session({ env: { A: 'b' } });
  const p = await s.spawn(['sleep', '1'], { keepStdin: true });
  await p.kill('SIGTERM');
  try { await s.run('1'); } catch (e) { if (e instanceof SessionClosed) return e.status; }
  return ex.exitCode ?? 0;
}
void main;
`);
  writeFileSync(join(project, 'wrong.ts'), `
import { connect } from '@agentjail/client';
const n: number = connect().run('1');
void n;
`);
  const tsc = join(clientDir, 'node_modules', '.bin', 'tsc');
  const opts = ['--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext',
    '--target', 'es2022', '--lib', 'es2022,dom', '--skipLibCheck', 'false'];
  execFileSync(tsc, [...opts, 'use.ts'], { cwd: project });
  // And a wrong use is refused: the declarations say something.
  assert.throws(() => execFileSync(tsc, [...opts, 'wrong.ts'], { cwd: project, stdio: 'pipe' }),
    (e) => /Promise<Execution>/.test(e.stdout.toString()));
});

test('TLS is refused unless the CA is given', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'aj-ts-tls-'));
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt',
    'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', '2',
    '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
  const s = await startServe(['--tls-cert', cert, '--tls-key', key,
    '--checkpoint-dir', join(dir, 'checkpoints')]);
  servers.push(s);
  try {
    assert.match(s.url, /^https:/);
    await assert.rejects(aj.connect({ url: s.url, key: s.key }).run('print(1)'),
      (e) => e instanceof aj.ServeError && e.status === 0 && /not trusted/.test(e.message)
        && /NODE_EXTRA_CA_CERTS/.test(e.message));
    // Node reads extra CAs at its start: a process of its own.
    const prog = `import('${pathToFileURL(join(project, 'node_modules', '@agentjail', 'client',
      'dist', 'index.js'))}').then(async (aj) => {
      const ex = await aj.connect({ url: process.env.AGENTJAIL_URL, key: process.env.AGENTJAIL_KEY }).run('print(7)');
      process.stdout.write(ex.stdout);
    });`;
    const out = execFileSync('node', ['-e', prog], { env: { ...process.env,
      NODE_EXTRA_CA_CERTS: cert, AGENTJAIL_URL: s.url, AGENTJAIL_KEY: s.key } }).toString();
    assert.equal(out, '7\n');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// Secrets (issue 39, docs/secrets.md): each value of these tests is one no
// message, property or printout may hold.
const SECRET = 'ghp_ts-s3cr3t-VALUE-never-shown';
const ghSecret = { name: 'GH', value: SECRET, hosts: ['api.github.com:443'],
  header: 'Authorization', format: 'Bearer {value}' };
const npmSecret = { name: 'NPM', value: `npm-${SECRET}`, hosts: ['registry.npmjs.org:443'],
  placeholder: true };

test('secrets go in the run and session bodies, never in a header or a printout', async () => {
  // No serve: the transport's fetch is the test's, and records each request.
  const sent = [];
  const fake = async (url, init) => {
    const path = new URL(url).pathname;
    const body = init.body === undefined ? undefined : JSON.parse(init.body);
    sent.push({ method: init.method, path, headers: init.headers, body });
    const answer = (status, o) => new Response(JSON.stringify(o), { status,
      headers: { 'Content-Type': 'application/json' } });
    if (path.endsWith('/egress') && body.secrets.includes('AWS'))
      return answer(400, { error: { code: 'bad_egress',
        message: "secrets: 'AWS' is not one of the session's secrets" } });
    if (path === '/v1/sessions') return answer(201, { id: 's-1' });
    if (body?.background) return answer(202, { id: 'r-1' });
    if (path.endsWith('/runs')) return answer(200, { status: 'ok', exit_code: 0, stdout: '1\n',
      stderr: '', wall_ms: 1, tier: 'process' });
    return answer(200, {});
  };
  const secrets = [ghSecret, npmSecret];
  const sbx = aj.connect({ url: 'http://127.0.0.1:9', key: 'k', fetch: fake, secrets });
  assert.equal((await sbx.run('print(1)')).stdout, '1\n');
  await sbx.submit('print(1)');
  const s = await sbx.session({ allowHosts: ['api.github.com:443'] });
  await s.run('print(1)');
  await sbx.session({ secrets: [npmSecret] });
  await sbx.restore('c-1');
  await s.secretsKeep(['GH']);
  await s.secretsKeep();
  await assert.rejects(s.secretsKeep(['AWS']), (e) => e instanceof aj.EgressError
    && e.status === 400 && /'AWS'/.test(e.message));
  await assert.rejects(s.secretsKeep([1]), (e) => e instanceof aj.ConfigError);
  assert.deepEqual(sent.map((r) => [r.method, r.path, r.body]), [
    ['POST', '/v1/runs', { code: 'print(1)', secrets }],
    ['POST', '/v1/runs', { code: 'print(1)', secrets, background: true }],
    ['POST', '/v1/sessions', { allow_hosts: ['api.github.com:443'], secrets }],
    // A session's runs carry none: its secrets are the session's.
    ['POST', '/v1/sessions/s-1/runs', { code: 'print(1)' }],
    ['POST', '/v1/sessions', { secrets: [npmSecret] }],
    ['POST', '/v1/sessions', { secrets, from_checkpoint: 'c-1' }],
    ['POST', '/v1/sessions/s-1/egress', { secrets: ['GH'] }],
    ['POST', '/v1/sessions/s-1/egress', { secrets: [] }],
    ['POST', '/v1/sessions/s-1/egress', { secrets: ['AWS'] }],
  ]);
  const { inspect } = await import('node:util');
  for (const shown of [...sent.map((r) => r.path + JSON.stringify(r.headers)),
    inspect(sbx, { depth: 10, showHidden: true }), JSON.stringify(sbx), String(sbx),
    inspect(s, { depth: 10, showHidden: true }), JSON.stringify(s)])
    assert.ok(!shown.includes(SECRET), shown);
  // The shape is checked before anything is sent; a refusal holds no value.
  const before = sent.length;
  assert.throws(() => aj.connect({ url: 'http://127.0.0.1:9', fetch: fake,
    secrets: { GH: SECRET } }), (e) => e instanceof aj.ConfigError
    && /^secrets: must be an array/.test(e.message) && !e.message.includes(SECRET));
  await assert.rejects(sbx.session({ secrets: [SECRET] }), (e) => e instanceof aj.ConfigError
    && e.message === 'secrets: item 1 is not an object');
  assert.equal(sent.length, before);
});

// Needs serve's side of issue 39 ("secrets" in POST /v1/runs and
// /v1/sessions, and the egress proxy's placeholders): the program sees a
// placeholder secret's text only, never a value; a bad secret is refused in
// the library's words without its value; a session narrows its secrets.
test('serve: a run and a session with secrets see placeholders only', async () => {
  const s = await startServe(['--allow-host', 'example.org']);
  servers.push(s);
  const sbx = aj.connect({ url: s.url, key: s.key, secrets: [ghSecret, npmSecret] });
  const code = 'import os, json\nprint(json.dumps({k: v for k, v in os.environ.items()'
    + " if k.startswith('AJ_SECRET_')}))\nprint(open('/proc/self/environ').read())";
  const ex = await sbx.run(code);
  assert.equal(ex.status, 'ok', ex.stderr);
  assert.deepEqual(JSON.parse(ex.stdout.split('\n')[0]), { AJ_SECRET_NPM: 'AJ_SECRET_NPM' });
  assert.ok(!ex.stdout.includes(SECRET) && !JSON.stringify(ex).includes(SECRET));
  const session = await sbx.session();
  try {
    const cell = await session.run(code);
    assert.deepEqual(JSON.parse(cell.stdout.split('\n')[0]), { AJ_SECRET_NPM: 'AJ_SECRET_NPM' });
    await assert.rejects(session.secretsKeep(['GH', 'AWS']), (e) => e instanceof aj.EgressError
      && /'AWS'/.test(e.message));
    await session.secretsKeep(['GH']);
    await assert.rejects(session.secretsKeep(['NPM']), (e) => e instanceof aj.EgressError);
    assert.equal((await session.run('print(2)')).stdout, '2\n');
  } finally {
    await session.close();
  }
  const bad = aj.connect({ url: s.url, key: s.key,
    secrets: [{ ...ghSecret, value: `${SECRET}\r\nX: 1` }] });
  await assert.rejects(bad.run('print(1)'), (e) => e instanceof aj.ConfigError
    && e.status === 400 && /secrets: GH: the value holds a control/.test(e.message)
    && !e.message.includes(SECRET) && !JSON.stringify(e.body ?? {}).includes(SECRET));
});

test('nothing is left running in the sandboxes\' uids', async () => {
  const end = Date.now() + 30000;
  while (sandboxProcesses(UID_BASE) && Date.now() < end)
    await new Promise((r) => setTimeout(r, 50));
  assert.equal(sandboxProcesses(UID_BASE), 0);
});
