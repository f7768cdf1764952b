// agentjail serve's E2B-compatible API driven by E2B's own SDKs from npm
// (e2b and @e2b/code-interpreter, unmodified: package.json pins the latest
// the registry served), pointed at serve by E2B_API_URL, E2B_SANDBOX_URL and
// E2B_API_KEY as a user switching from E2B would. The calls are E2B's
// documented examples: create, runCode with state, a matplotlib chart as a
// PNG result, JavaScript, files, commands with onStdout, a background command
// killed by pid, a PTY with resize, list with a metadata filter, setTimeout,
// connect from a second client, kill, and allowOut letting one loopback host
// through and no other; then what is not supported fails naming itself, and
// another key's sandbox is as unknown as a made-up one.
//
// Safety: the code runs only inside the sandbox (the process tier), under a
// uid range of this file's own (AJ_SERVE_UID_BASE + 6000000, 2156000000
// unless moved), which the last test checks is empty; the network servers
// listen on loopback only.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { once } from 'node:events';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Sandbox as Base, NotFoundError, CommandExitError } from 'e2b';
import { Sandbox } from '@e2b/code-interpreter';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const AGENTJAIL = process.env.AJ_CLI ?? join(root, 'build', 'test', 'agentjail');
const UID_BASE = Number(process.env.AJ_SERVE_UID_BASE ?? 2150000000) + 6000000;
const decode = (b) => new TextDecoder().decode(b);

function sandboxProcesses(base = UID_BASE) {
  let n = 0;
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const uid = Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
      if (uid >= base && uid < base + 64) n++;
    } catch { /* gone meanwhile */ }
  }
  return n;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Polls pred until it holds or ms pass: a state to reach, never a duration
// to assert; the default minute only catches a hang.
async function waitFor(pred, ms = 60000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await pred()) return true;
    await sleep(50);
  }
  return pred();
}

// A loopback HTTP server answering "NAME" to every request.
async function namedServer(host, name) {
  const srv = createServer((_, res) => res.end(name));
  srv.listen(0, host);
  await once(srv, 'listening');
  return srv;
}

async function startServe(args, base = UID_BASE) {
  const child = spawn(AGENTJAIL, ['serve', '--listen', '127.0.0.1:0', '--uid-base',
    String(base), '--state-dir', `/run/agentjail-e2b-test-${base}`,
    '--timeout', '30', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const errs = [];
  child.stderr.on('data', (d) => errs.push(d));
  const seen = {};
  for await (const chunk of child.stdout) {
    out += chunk;
    for (const line of out.split('\n')) {
      const [k, v] = line.split('=');
      if (k && v) seen[k] = v;
    }
    if (seen.AGENTJAIL_URL) break;
  }
  assert.ok(seen.AGENTJAIL_URL, `serve did not start: ${out}`);
  return { child, url: seen.AGENTJAIL_URL, key: seen.AGENTJAIL_KEY,
    stderr: () => Buffer.concat(errs).toString() };
}

let serve, inside, outside, keysDir, otherKey;

before(async () => {
  inside = await namedServer('127.0.0.1', 'inside');
  outside = await namedServer('127.0.0.2', 'outside');
  // Two keys, each in E2B's shape: the second one's view of the first's
  // sandboxes is tested below.
  keysDir = mkdtempSync(join(tmpdir(), 'aj-e2b-keys-'));
  const file = join(keysDir, 'keys.json');
  const add = (name) => execFileSync(AGENTJAIL, ['keys', 'add', '--file', file, name, '--e2b',
    '--sessions', '8'], { stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim();
  const mine = add('alice');
  otherKey = add('bob');
  serve = await startServe(['--keys', file, '--checkpoint-dir', join(keysDir, 'checkpoints'),
    '--allow-cidr', `127.0.0.1/32:${inside.address().port}`,
    '--allow-cidr', `127.0.0.2/32:${outside.address().port}`]);
  serve.key = mine;
  process.env.E2B_API_KEY = mine;
  process.env.E2B_API_URL = serve.url;
  process.env.E2B_SANDBOX_URL = serve.url;
});

after(async () => {
  if (serve) {
    // A clean stop: exit 0, so no sanitizer report (a leak, an error) was made.
    serve.child.kill('SIGTERM');
    const [code] = await once(serve.child, 'exit');
    assert.equal(code, 0, serve.stderr().slice(-3000));
  }
  inside?.close();
  outside?.close();
  if (keysDir) rmSync(keysDir, { recursive: true, force: true });
});

describe('E2B code interpreter', () => {
  test('runCode keeps state, its last value is the main result, a chart comes back as a PNG, '
    + 'JavaScript runs', async () => {
    const sbx = await Sandbox.create();
    try {
      await sbx.runCode('x = 1');
      const e = await sbx.runCode('x += 1\nprint(x)');
      assert.equal(e.error, undefined);
      // Output comes in the chunks it was read in (print's text and its
      // newline may be two): their text is what counts.
      assert.equal(e.logs.stdout.join(''), '2\n');
      // E2B's README example: the last expression is the main result.
      const last = await sbx.runCode('x+=1; x');
      assert.equal(last.text, '3');
      assert.deepEqual(last.logs.stdout, []);
      assert.equal(last.results.filter((r) => r.isMainResult).length, 1);
      const html = await sbx.runCode('class T:\n    def _repr_html_(self): return "<b>t</b>"\n'
        + '    def __repr__(self): return "T()"\nT()');
      assert.deepEqual([html.text, html.results[0].html], ['T()', '<b>t</b>']);
      assert.equal((await sbx.runCode('y = 5')).text, undefined);
      const failed = await sbx.runCode('1 / 0');
      assert.equal(failed.error.name, 'ZeroDivisionError');
      assert.equal(failed.error.value, 'division by zero');
      const chart = await sbx.runCode("import matplotlib.pyplot as plt\n" +
        "plt.plot([1, 2, 3, 4])\nplt.ylabel('some numbers')\nplt.show()");
      assert.equal(chart.error, undefined);
      const png = chart.results.find((r) => r.png);
      assert.ok(png, `no PNG among ${JSON.stringify(chart.results.map((r) => r.formats()))}`);
      assert.equal(Buffer.from(png.png, 'base64').subarray(1, 4).toString(), 'PNG');
      const js = await sbx.runCode('const a = [1, 2, 3]; console.log(a.length * 2)',
        { language: 'js' });
      assert.equal(js.logs.stdout.join(''), '6\n');
      // A context of its own is a namespace of its own: x is not there,
      // and what it sets is not seen outside it.
      const ctx = await sbx.createCodeContext({ language: 'python' });
      assert.equal((await sbx.runCode('x', { context: ctx })).error.name, 'NameError');
      await sbx.runCode('z = 10', { context: ctx });
      assert.equal((await sbx.runCode('z * 2', { context: ctx })).text, '20');
      assert.equal((await sbx.runCode('z')).error.name, 'NameError');
      assert.ok((await sbx.listCodeContexts()).some((c) => c.id === ctx.id));
      // A restart forgets its state; the interpreter's own context keeps x.
      await sbx.restartCodeContext(ctx);
      assert.equal((await sbx.runCode('z', { context: ctx })).error.name, 'NameError');
      assert.equal((await sbx.runCode('x')).text, '3');
      await sbx.restartCodeContext('python');
      assert.equal((await sbx.runCode('x')).error.name, 'NameError');
      await sbx.removeCodeContext(ctx);
      assert.ok(!(await sbx.listCodeContexts()).some((c) => c.id === ctx.id));
      await assert.rejects(sbx.runCode('1', { context: ctx }), { name: 'NotFoundError' });
      // JavaScript's one state, restarted.
      const jsCtx = await sbx.createCodeContext({ language: 'js' });
      await sbx.runCode('globalThis.k = 1', { context: jsCtx });
      await sbx.restartCodeContext(jsCtx);
      assert.equal((await sbx.runCode('console.log(typeof k)', { context: jsCtx })).logs.stdout
        .join(''), 'undefined\n');
    } finally {
      await sbx.kill();
    }
  });
});

describe('E2B pause, connect and fork', () => {
  test('pause keeps the state, connect resumes it, fork copies it', async () => {
    const sbx = await Sandbox.create();
    const made = [];
    try {
      await sbx.runCode('x = 41\ndef more(v):\n    return v + x');
      await sbx.files.write('note.txt', 'kept');
      assert.equal(await sbx.pause(), true);
      assert.equal(await sbx.pause(), false); // paused already: E2B's 409
      assert.equal((await sbx.getInfo()).state, 'paused');
      const back = await Sandbox.connect(sbx.sandboxId);
      assert.equal((await back.getInfo()).state, 'running');
      assert.equal((await back.runCode('more(1)')).text, '42');
      assert.equal(await back.files.read('note.txt'), 'kept');
      const copies = await back.fork({ count: 2 });
      assert.equal(copies.length, 2);
      for (const [i, c] of copies.entries()) {
        assert.ok(c instanceof Sandbox, String(c));
        made.push(c);
        await c.runCode(`x = ${i}`);
        assert.equal((await c.runCode('more(1)')).text, String(i + 1));
      }
      assert.equal((await back.runCode('more(1)')).text, '42');
    } finally {
      for (const c of made) await c.kill();
      await sbx.kill();
    }
  });

  test('a snapshot outlives its sandbox and makes new ones; it is the key\'s own', async () => {
    const sbx = await Sandbox.create();
    const made = [];
    try {
      await sbx.runCode('import pathlib\nbase = 100');
      await sbx.files.write('data.txt', 'from the snapshot');
      const snap = await sbx.createSnapshot({ name: 'warm-start' });
      assert.deepEqual(snap.names, ['warm-start']);
      const named = await sbx.createSnapshot();
      assert.deepEqual(named.names, [named.snapshotId]);
      await sbx.runCode('base = 0');
      await sbx.kill();
      const listed = await Base.listSnapshots({ sandboxId: sbx.sandboxId }).nextItems();
      assert.deepEqual(listed.map((s) => s.snapshotId).sort(),
        [snap.snapshotId, named.snapshotId].sort());
      assert.deepEqual((await Base.listSnapshots({ name: 'warm-start' }).nextItems())
        .map((s) => s.snapshotId), [snap.snapshotId]);
      // By id and by name (with E2B's tag), each a sandbox with the state.
      for (const t of [snap.snapshotId, 'warm-start:default']) {
        const c = await Sandbox.create(t);
        made.push(c);
        assert.equal((await c.runCode('base + 1')).text, '101');
        assert.equal(await c.files.read('data.txt'), 'from the snapshot');
      }
      // Another key: none of them, by list, create or delete.
      const as = { apiKey: otherKey };
      assert.deepEqual(await Base.listSnapshots(as).nextItems(), []);
      await assert.rejects(Sandbox.create(snap.snapshotId, as), /not found/);
      assert.equal(await Base.deleteSnapshot(snap.snapshotId, as), false);
      assert.equal(await Base.deleteSnapshot(snap.snapshotId), true);
      assert.equal(await Base.deleteSnapshot(snap.snapshotId), false);
      assert.equal(await Base.deleteSnapshot(named.snapshotId), true);
      await assert.rejects(Sandbox.create(snap.snapshotId), /not found/);
    } finally {
      for (const c of made) await c.kill();
    }
  });
});

describe('E2B sandbox', () => {
  let sbx;
  before(async () => { sbx = await Base.create({ metadata: { suite: 'e2b-test' } }); });
  after(async () => { await sbx?.kill(); });

  test('files: write, read, list, exists, rename, remove, gzip', async () => {
    await sbx.files.write('/home/user/hello.txt', 'Hello, world!');
    assert.equal(await sbx.files.read('/home/user/hello.txt'), 'Hello, world!');
    await sbx.files.write([{ path: '/home/user/data/a.bin', data: new Uint8Array([0, 1, 255]) }]);
    assert.deepEqual(Array.from(await sbx.files.read('/home/user/data/a.bin',
      { format: 'bytes' })), [0, 1, 255]);
    const names = (await sbx.files.list('/home/user')).map((e) => e.name);
    assert.ok(names.includes('hello.txt') && names.includes('data'), names.join(' '));
    assert.equal(await sbx.files.exists('/home/user/nope.txt'), false);
    await sbx.files.rename('/home/user/hello.txt', '/home/user/data/hello.txt');
    assert.equal((await sbx.files.getInfo('/home/user/data/hello.txt')).size, 13);
    await sbx.files.remove('/home/user/data');
    assert.equal(await sbx.files.exists('/home/user/data'), false);
    await assert.rejects(sbx.files.read('/home/user/gone.txt'), { name: 'FileNotFoundError' });
    // Compressed on the way up and asked compressed on the way down.
    await sbx.files.write('/home/user/z.txt', 'zipped '.repeat(1000), { gzip: true });
    assert.equal(await sbx.files.read('/home/user/z.txt', { gzip: true }), 'zipped '.repeat(1000));
  });

  test('commands: output as it comes, exit codes, a background command killed by pid',
    async () => {
      const lines = [];
      const r = await sbx.commands.run('echo one; echo two >&2; echo three',
        { onStdout: (d) => lines.push(d) });
      assert.equal(r.exitCode, 0);
      assert.equal(r.stdout, 'one\nthree\n');
      assert.equal(r.stderr, 'two\n');
      assert.equal(lines.join(''), 'one\nthree\n');
      await assert.rejects(sbx.commands.run('exit 3'),
        (e) => e instanceof CommandExitError && e.exitCode === 3);
      const bg = await sbx.commands.run('sleep 60', { background: true });
      assert.ok((await sbx.commands.list()).some((p) => p.pid === bg.pid));
      assert.equal(await sbx.commands.kill(bg.pid), true);
      await assert.rejects(bg.wait(), (e) => e instanceof CommandExitError);
      assert.ok(await waitFor(async () =>
        !(await sbx.commands.list()).some((p) => p.pid === bg.pid)));
    });

  test('a PTY follows a resize', async () => {
    let shown = '';
    const t = await sbx.pty.create({ cols: 80, rows: 24, onData: (d) => { shown += decode(d); } });
    await sbx.pty.sendInput(t.pid, new TextEncoder().encode('stty size\n'));
    assert.ok(await waitFor(() => shown.includes('24 80')), shown);
    await sbx.pty.resize(t.pid, { cols: 100, rows: 30 });
    await sbx.pty.sendInput(t.pid, new TextEncoder().encode('stty size\n'));
    assert.ok(await waitFor(() => shown.includes('30 100')), shown);
    assert.equal(await sbx.pty.kill(t.pid), true);
  });

  test('list by metadata, setTimeout, and connect from a second client', async () => {
    const page = await Base.list({ query: { metadata: { suite: 'e2b-test' } } }).nextItems();
    assert.deepEqual(page.map((s) => s.sandboxId), [sbx.sandboxId]);
    const none = await Base.list({ query: { metadata: { suite: 'other' } } }).nextItems();
    assert.deepEqual(none, []);
    await sbx.setTimeout(600 * 1000);
    const info = await sbx.getInfo();
    assert.ok(info.endAt.getTime() - Date.now() > 500 * 1000);
    const second = await Base.connect(sbx.sandboxId);
    assert.equal((await second.commands.run('echo from the second')).stdout,
      'from the second\n');
  });
});

test('allowOut lets one loopback host through and no other', async () => {
  const sbx = await Base.create({ network: { allowOut: ['127.0.0.1'], denyOut: ['0.0.0.0/0'] } });
  try {
    const ok = await sbx.commands.run(`curl -sS http://127.0.0.1:${inside.address().port}/`);
    assert.equal(ok.stdout, 'inside');
    await assert.rejects(
      sbx.commands.run(`curl -sS -f http://127.0.0.2:${outside.address().port}/`),
      (e) => e instanceof CommandExitError && !e.stdout.includes('outside'));
  } finally {
    await sbx.kill();
  }
  // A destination outside the deployer's rules is refused at create.
  await assert.rejects(Base.create({ network: { allowOut: ['10.9.9.9'] } }),
    /10\.9\.9\.9 is not among the destinations this deployment allows/);
});

test('what is not supported fails naming itself', async () => {
  await assert.rejects(Base.create('my-own-template'), /template 'my-own-template' not found/);
  const sbx = await Base.create();
  try {
    await assert.rejects(sbx.getMetrics(), /metrics .* is not supported by agentjail/);
  } finally {
    await sbx.kill();
  }
  await assert.rejects(Base.getInfo(sbx.sandboxId), NotFoundError);
});

test("another key's sandbox is as unknown as a made-up one", async () => {
  const sbx = await Base.create();
  try {
    const as = { apiKey: otherKey };
    await assert.rejects(Base.getInfo(sbx.sandboxId, as), NotFoundError);
    await assert.rejects(Base.getInfo('0123456789abcdef0123456789abcdef', as), NotFoundError);
    assert.equal(await Base.kill(sbx.sandboxId, as), false);
    await assert.rejects(Base.create({ apiKey: `e2b_${'0'.repeat(64)}` }),
      (e) => e.name === 'AuthenticationError' && /a valid key is required: X-API-KEY/.test(e.message));
    await assert.rejects(Base.connect(sbx.sandboxId, as));
    assert.deepEqual(await Base.list(as).nextItems(), []);
    // The sandbox goes on for its own key.
    assert.equal((await sbx.commands.run('echo still')).stdout, 'still\n');
  } finally {
    await sbx.kill();
  }
});

// network.rules through the SDK: a header transform for a host is put in by
// the egress proxy outside the sandbox (docs/secrets.md). An HTTPS origin on
// loopback with a certificate from a CA made here (openssl), which serve's
// proxy trusts (--egress-ca) and so does the sandbox (--trust-ca, for the
// tunnel that carries no secret); a second serve of this test's own.
test('network.rules header transforms reach their host and never the code', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'aj-e2b-tls-'));
  const sh = (cmd) => execFileSync('sh', ['-c', cmd], { cwd: dir, stdio: 'ignore' });
  sh("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key "
    + "-out ca.pem -days 2 -subj '/CN=e2b test CA' -addext basicConstraints=critical,CA:TRUE "
    + '-addext keyUsage=critical,keyCertSign');
  writeFileSync(join(dir, 'ext'), 'subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n');
  sh('openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout srv.key '
    + '-out srv.csr -subj /CN=localhost && openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key '
    + '-CAcreateserial -out srv.pem -days 2 -extfile ext');
  const seen = [], refs = [];
  const origin = createHttpsServer({ key: readFileSync(join(dir, 'srv.key')),
    cert: readFileSync(join(dir, 'srv.pem')) }, (req, res) => {
    seen.push(req.headers['x-api-key'] ?? '-');
    refs.push(req.headers['x-ref'] ?? '-');
    res.setHeader('X-Echo', req.headers['x-api-key'] ?? '-');
    res.end(`key ${req.headers['x-api-key'] ?? '-'}`);
  });
  origin.listen(0, '127.0.0.1');
  await once(origin, 'listening');
  const port = origin.address().port;
  const keys = join(keysDir, 'keys.json');
  // A server secret the request names as E2B names a project secret.
  const REF = `e2b-ref-${process.pid}-${Date.now()}`;
  const secretsFile = join(dir, 'secrets.json');
  writeFileSync(secretsFile, JSON.stringify([{ name: 'ORIGIN', value: REF,
    hosts: [`localhost:${port}`], placeholder: true }]));
  chmodSync(secretsFile, 0o600);
  const second = await startServe(['--keys', keys, '--secrets', secretsFile,
    '--allow-host', `localhost:${port}`, '--allow-cidr', `127.0.0.1/32:${port}`,
    '--egress-ca', join(dir, 'ca.pem'), '--trust-ca', join(dir, 'ca.pem')], UID_BASE + 100);
  const VALUE = `e2b-secret-${process.pid}-${Date.now()}`;
  const opts = { apiKey: serve.key, apiUrl: second.url, sandboxUrl: second.url };
  try {
    const sbx = await Base.create({ ...opts, network: { rules: {
      localhost: [{ transform: { headers: { 'X-Api-Key': VALUE,
        'X-Ref': 'ref ${e2b.secrets.ORIGIN}' } } }] } } });
    try {
      const got = await sbx.commands.run(`curl -sS -D - https://localhost:${port}/; env`);
      assert.equal(seen.at(-1), VALUE);
      assert.equal(refs.at(-1), `ref ${REF}`);
      assert.ok(got.stdout.includes(`X-Echo: ${'*'.repeat(VALUE.length)}`)
        || got.stdout.includes(`x-echo: ${'*'.repeat(VALUE.length)}`), got.stdout);
      for (const v of [VALUE, REF])
        assert.ok(!got.stdout.includes(v) && !got.stderr.includes(v), got.stdout);
    } finally {
      await sbx.kill();
    }
    // A host no deployer rule names is refused at create, naming it.
    await assert.rejects(Base.create({ ...opts, network: { rules: {
      'api.example.com': [{ transform: { headers: { 'X-Api-Key': VALUE } } }] } } }),
    (e) => /api\.example\.com/.test(e.message) && !e.message.includes(VALUE));
  } finally {
    second.child.kill('SIGTERM');
    const [code] = await once(second.child, 'exit');
    origin.close();
    rmSync(dir, { recursive: true, force: true });
    assert.equal(code, 0, second.stderr().slice(-3000));
    assert.ok(!second.stderr().includes(VALUE) && !second.stderr().includes(REF));
    assert.ok(await waitFor(() => sandboxProcesses(UID_BASE + 100) === 0));
  }
});

test('no sandbox process is left behind', async () => {
  assert.ok(await waitFor(() => sandboxProcesses() === 0), `${sandboxProcesses()} left`);
});
