// agentjail mcp, driven by real MCP clients: the official TypeScript SDK v1
// (protocol 2025-11-25, with the handshake) and its v2 client pinned to
// 2026-07-28 (no handshake), then raw JSON-RPC lines for what no polite
// client sends. Run by `make test` (node --test) against the sanitizer build.
//
// Safety: the hostile programs here only ever run inside the sandbox; the
// network test's listener is on 127.0.0.1.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, rmSync, chmodSync } from 'node:fs';
import { sandboxProcesses as countProcesses, sleep, waitFor } from './procs.mjs';
import { makeGate } from './gate.mjs';
import { createServer } from 'node:net';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const AGENTJAIL = process.env.AJ_CLI ?? join(root, 'build', 'test', 'agentjail');
// The sandbox uids the server's runs get: a process of one of them after a
// test is a run left behind. The default range, or with AJ_TEST_UID_BASE a
// range (and slot directory) of this run's own, given through a config file
// every server here reads first, so that another suite's sandboxes on the
// machine are never counted as this one's.
const UID_BASE = Number(process.env.AJ_TEST_UID_BASE ?? 2000000000);
const ISOLATE = [];
if (process.env.AJ_TEST_UID_BASE) {
  const dir = mkdtempSync(join(root, 'build', 'mcp-uids-'));
  writeFileSync(join(dir, 'uids.json'), JSON.stringify({
    uid_base: UID_BASE, state_dir: `/run/agentjail-mcp-test-${UID_BASE}` }));
  ISOLATE.push('--config', join(dir, 'uids.json'));
  after(() => rmSync(dir, { recursive: true, force: true }));
}
const LIMITS = [...ISOLATE, '--timeout', '5', '--cpu', '2'];
const gate = makeGate(root);
after(() => gate.remove());

const token = randomBytes(16).toString('hex');

const sandboxProcesses = () => countProcesses(UID_BASE);

describe('SDK v1 client, protocol 2025-11-25', () => {
  let client, secretDir;
  before(async () => {
    // A secret of the deployer's: a 0600 file in a 0700 directory the
    // program can name, and a variable in the server's environment.
    secretDir = mkdtempSync(join(root, 'build', 'mcp-secret-'));
    chmodSync(secretDir, 0o700);
    writeFileSync(join(secretDir, 'secret'), token, { mode: 0o600 });
    client = new Client({ name: 'agentjail-test', version: '1.0.0' });
    await client.connect(new StdioClientTransport({
      command: AGENTJAIL, args: ['mcp', ...LIMITS],
      env: { ...getDefaultEnvironment(), OPENAI_API_KEY: token },
      stderr: 'ignore',
    }));
  });
  after(async () => {
    await client.close();
    rmSync(secretDir, { recursive: true, force: true });
  });

  const run = (code) => client.callTool({ name: 'run_python', arguments: { code } });

  test('negotiates 2025-11-25 and names itself', () => {
    assert.equal(client.getServerVersion().name, 'agentjail');
  });

  test('lists exactly run_python, with schemas, limits and honest annotations', async () => {
    const { tools } = await client.listTools();
    assert.equal(tools.length, 1);
    const t = tools[0];
    assert.equal(t.name, 'run_python');
    assert.deepEqual(t.inputSchema.required, ['code']);
    assert.deepEqual(Object.keys(t.inputSchema.properties), ['code']);
    assert.equal(t.inputSchema.additionalProperties, false);
    assert.equal(t.outputSchema.type, 'object');
    assert.ok(t.outputSchema.required.includes('status'));
    assert.match(t.description, /5 s of wall-clock time/);
    assert.match(t.description, /256 MiB of memory/);
    assert.match(t.description, /no network/);
    assert.equal(t.annotations.openWorldHint, false);
    assert.equal(t.annotations.destructiveHint, false);
  });

  test('a benign program: output, structured result, no error', async () => {
    const r = await run('print(6 * 7)');
    assert.equal(r.isError, false);
    assert.equal(r.structuredContent.status, 'ok');
    assert.equal(r.structuredContent.exit_code, 0);
    assert.equal(r.structuredContent.stdout, '42\n');
    assert.equal(r.structuredContent.tier, 'process');
    assert.match(r.content[0].text, /status: ok \(exit code 0\)/);
    assert.match(r.content[0].text, /--- stdout ---\n42\n/);
  });

  test('a failing program is isError, with the traceback for the model', async () => {
    const r = await run('import sys\nprint("bad", file=sys.stderr)\nsys.exit(3)');
    assert.equal(r.isError, true);
    assert.equal(r.structuredContent.status, 'error');
    assert.equal(r.structuredContent.exit_code, 3);
    assert.match(r.content[0].text, /--- stderr ---\nbad/);
  });

  test('the seed six: CPU loop', async () => {
    const r = await run('while True:\n    pass');
    assert.equal(r.isError, true);
    assert.equal(r.structuredContent.status, 'timeout');
  });

  test('the seed six: 512 MB allocation', async () => {
    const r = await run('b = bytearray(512 * 1024 * 1024)\nfor i in range(0, len(b), 4096):\n    b[i] = 1');
    assert.equal(r.structuredContent.status, 'memory');
    assert.equal(r.isError, true);
  });

  test('the seed six: fork bomb', async () => {
    const r = await run([
      'import os, time', 'made = 0', 'for i in range(200):', '    try:',
      '        if os.fork() == 0:', '            time.sleep(1)', '            os._exit(0)',
      '        made += 1', '    except OSError:', '        break', 'print(made)'].join('\n'));
    assert.notEqual(r.structuredContent.status, 'sandbox_error');
    assert.ok(Number(r.structuredContent.stdout) < 64, r.structuredContent.stdout);
  });

  test('the seed six: disk fill', async () => {
    const r = await run([
      'import errno', 'n = 0', 'try:', "    with open('fill', 'wb') as f:",
      '        for i in range(4096):', "            f.write(b'x' * 1048576)", '            n += 1',
      'except OSError as e:', '    print(n, errno.errorcode[e.errno])'].join('\n'));
    assert.match(r.structuredContent.stdout, /^\d+ (EFBIG|ENOSPC)\n$/);
  });

  test('the seed six: host secrets', async () => {
    const r = await run([
      'import os', 'print(dict(os.environ))',
      `for p in ['${join(secretDir, 'secret')}', '/proc/1/environ', '/etc/shadow']:`,
      '    try:', '        print(open(p).read())', '    except OSError as e:', '        print(p, e)'].join('\n'));
    const all = JSON.stringify(r);
    assert.ok(!all.includes(token), 'the secret reached the agent');
    assert.ok(!all.includes('OPENAI_API_KEY'));
    assert.match(r.structuredContent.stdout, /Permission denied/);
  });

  test('the seed six: network', async () => {
    let accepted = 0;
    const server = createServer((s) => { accepted++; s.destroy(); });
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    const port = server.address().port;
    const r = await run([
      'import socket', 's = socket.socket()', 's.settimeout(2)',
      'try:', `    s.connect(('127.0.0.1', ${port}))`, "    print('CONNECTED')",
      'except OSError as e:', "    print('blocked', e)"].join('\n'));
    server.close();
    assert.equal(accepted, 0);
    assert.match(r.structuredContent.stdout, /^blocked/);
  });

  test('the description names the notable packages the sandbox really has, and no others', async () => {
    const mods = ['numpy', 'pandas', 'scipy', 'matplotlib', 'sklearn', 'polars'];
    const r = await run(`import importlib.util, json\nprint(json.dumps([m for m in ${JSON.stringify(mods)} if importlib.util.find_spec(m)]))`);
    const has = JSON.parse(r.structuredContent.stdout);
    const { tools } = await client.listTools();
    const m = /Installed besides the Python standard library: (.*?)\. /.exec(tools[0].description);
    const named = m ? m[1].split(', ').map((n) => n.split(' ')[0]).filter((n) => mods.includes(n)) : [];
    assert.deepEqual(named.sort(), [...has].sort(), tools[0].description);
    if (has.length === 0) assert.match(tools[0].description, /Only the Python standard library is available/);
  });

  test('an unknown tool is a protocol error, and the server keeps serving', async () => {
    await assert.rejects(client.callTool({ name: 'run_bash', arguments: { code: 'ls' } }),
      (e) => e.code === -32602 && /Unknown tool: run_bash/.test(e.message));
    const r = await run('print("still here")');
    assert.equal(r.structuredContent.stdout, 'still here\n');
  });

  test('arguments outside the schema are an isError result the model can read (SEP-1303)', async () => {
    // MCP 2025-11-25: input validation failures are tool execution
    // errors, so callTool resolves and the model sees what to correct.
    const cases = [
      [{ code: 'print(1)', timeout: 3600 }, /unexpected argument 'timeout': run_python takes only 'code'/],
      [{ code: 42 }, /'code' must be a string/],
      [{}, /'code' must be a string/],
      [undefined, /'code' must be a string/],
    ];
    for (const [args, words] of cases) {
      const r = await client.callTool({ name: 'run_python', arguments: args });
      assert.equal(r.isError, true);
      assert.equal(r.content[0].type, 'text');
      assert.match(r.content[0].text, /^Invalid arguments for run_python: /);
      assert.match(r.content[0].text, words);
    }
    const r = await run('print("still here")');
    assert.equal(r.structuredContent.stdout, 'still here\n');
  });

  test('a cancelled call kills its run', async () => {
    const ac = new AbortController();
    const p = client.callTool({ name: 'run_python', arguments: { code: 'import time\ntime.sleep(4)' } },
      undefined, { signal: ac.signal });
    assert.ok(await waitFor(() => sandboxProcesses() > 0), 'the run should be going');
    ac.abort('the agent changed its mind');
    await assert.rejects(p);
    // The sandbox is gone well before its 4 s sleep would end: poll a
    // bounded while for it to disappear, then insist.
    for (let i = 0; i < 20 && sandboxProcesses() > 0; i++) await sleep(100);
    assert.equal(sandboxProcesses(), 0);
    assert.equal((await run('print(2)')).structuredContent.stdout, '2\n');
  });

  test('calls run concurrently', async () => {
    const rs = await Promise.all([1, 2, 3, 4].map((i) => run(`import time\ntime.sleep(0.5)\nprint(${i})`)));
    assert.deepEqual(rs.map((r) => r.structuredContent.stdout), ['1\n', '2\n', '3\n', '4\n']);
  });
});

describe('SDK v2 client, protocol 2026-07-28', () => {
  let client;
  before(async () => {
    client = new ClientV2({ name: 'agentjail-test', version: '2.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(new StdioV2({ command: AGENTJAIL, args: ['mcp', ...LIMITS], stderr: 'ignore' }));
  });
  after(async () => { await client.close(); });

  test('speaks the modern era, without a handshake', () => {
    assert.equal(client.getProtocolEra(), 'modern');
  });

  test('lists and calls run_python', async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['run_python']);
    const r = await client.callTool({ name: 'run_python', arguments: { code: 'print("modern")' } });
    assert.equal(r.isError, false);
    assert.equal(r.structuredContent.stdout, 'modern\n');
    const bad = await client.callTool({ name: 'run_python', arguments: { code: 'raise SystemExit(5)' } });
    assert.equal(bad.isError, true);
    assert.equal(bad.structuredContent.exit_code, 5);
  });
});

describe('warm mode (--preload json), SDK v2 client', () => {
  let client;
  before(async () => {
    client = new ClientV2({ name: 'agentjail-test', version: '2.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(new StdioV2({ command: AGENTJAIL,
      args: ['mcp', ...LIMITS, '--preload', 'json'], stderr: 'ignore' }));
  });
  after(async () => { await client.close(); });

  test('each call is a fork of the zygote, with its own files', async () => {
    const code = 'import os, sys\n' +
      'print("json" in sys.modules, b"agentjail zygote" in open("/proc/self/cmdline", "rb").read(),\n' +
      '      os.path.exists("/tmp/left"))\n' +
      'open("/tmp/left", "w").write("x")\n';
    for (let i = 0; i < 3; i++) {
      const r = await client.callTool({ name: 'run_python', arguments: { code } });
      assert.equal(r.isError, false);
      assert.equal(r.structuredContent.stdout, 'True True False\n');
    }
  });
});

// ---- sessions: agentjail mcp --sessions ----

const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const text = (r) => r.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');

describe('sessions (--sessions), SDK v1 client', () => {
  let client;
  before(async () => {
    client = new Client({ name: 'agentjail-test', version: '1.0.0' });
    await client.connect(new StdioClientTransport({
      command: AGENTJAIL, args: ['mcp', '--sessions', ...LIMITS, '--transfer-mb', '1'],
      stderr: 'ignore',
    }));
  });
  after(async () => { await client.close(); });

  const call = (name, args) => client.callTool({ name, arguments: args });
  const run = (code) => call('run_python', { code });

  test('lists run_python and the file tools, and says that state persists', async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['run_python', 'upload_file', 'download_file', 'list_files']);
    const rp = tools[0];
    assert.deepEqual(Object.keys(rp.inputSchema.properties), ['code']);
    assert.match(rp.description, /State persists between calls/);
    assert.match(rp.description, /\/tmp\/work/);
    assert.match(rp.description, /come back as images/);
    assert.match(rp.description, /5 s of\s+wall-clock time/);
    const up = tools[1];
    assert.deepEqual(up.inputSchema.required, ['path', 'content']);
    assert.deepEqual(up.inputSchema.properties.encoding.enum, ['utf-8', 'base64']);
    assert.match(up.description, /At most 1 MiB/);
    assert.equal(tools[2].annotations.readOnlyHint, true);
    assert.equal(tools[3].inputSchema.required, undefined);
  });

  test('variables and imports persist from one call to the next', async () => {
    let r = await run('import math\nx = 41');
    assert.equal(r.isError, false);
    r = await run('x += 1\nprint(x, math.floor(math.pi))');
    assert.equal(r.isError, false);
    assert.equal(r.structuredContent.stdout, '42 3\n');
  });

  test('upload a file, read it from code, download what the code wrote', async () => {
    let r = await call('upload_file', { path: 'data/in.csv', content: 'a,b\n1,2\n3,4\n' });
    assert.equal(r.isError, false, text(r));
    assert.deepEqual(r.structuredContent, { path: 'data/in.csv', bytes: 12 });
    r = await run([
      'import csv, os', "rows = list(csv.DictReader(open('data/in.csv')))",
      "os.makedirs('results', exist_ok=True)",
      "open('results/sum.txt', 'w').write(str(sum(int(r['a']) + int(r['b']) for r in rows)))",
      'print(os.getcwd())'].join('\n'));
    assert.equal(r.isError, false, text(r));
    assert.equal(r.structuredContent.stdout, '/tmp/work\n');
    r = await call('download_file', { path: 'results/sum.txt' });
    assert.equal(r.isError, false, text(r));
    assert.equal(r.content[0].text, '10');
    assert.equal(r.structuredContent.encoding, 'utf-8');
    assert.equal(r.structuredContent.content, '10');
  });

  test('binary files travel base64 both ways', async () => {
    const bytes = Buffer.from([0, 1, 2, 0xff, 0xfe, 0x80]);
    let r = await call('upload_file', { path: 'blob.bin', content: bytes.toString('base64'), encoding: 'base64' });
    assert.equal(r.isError, false, text(r));
    r = await run("print(list(open('blob.bin', 'rb').read()))");
    assert.equal(r.structuredContent.stdout, '[0, 1, 2, 255, 254, 128]\n');
    r = await call('download_file', { path: 'blob.bin' });
    assert.equal(r.structuredContent.encoding, 'base64');
    assert.deepEqual(Buffer.from(r.structuredContent.content, 'base64'), bytes);
    assert.match(r.content[0].text, /not UTF-8 text/);
  });

  test('list_files shows the workspace, or a directory in it', async () => {
    let r = await call('list_files', {});
    assert.equal(r.isError, false, text(r));
    const names = r.structuredContent.entries.map((e) => e.name);
    for (const n of ['data', 'results', 'blob.bin']) assert.ok(names.includes(n), names.join(' '));
    assert.equal(r.structuredContent.entries.find((e) => e.name === 'data').type, 'directory');
    r = await call('list_files', { path: 'data' });
    assert.deepEqual(r.structuredContent.entries, [{ name: 'in.csv', type: 'file', size: 12 }]);
    assert.match(r.content[0].text, /in\.csv\s+\(12 bytes\)/);
  });

  test('what the library refuses is an isError result with its message, not a protocol error', async () => {
    let r = await call('download_file', { path: '../../etc/passwd' });
    assert.equal(r.isError, true);
    assert.match(r.content[0].text, /'\.\.' is not allowed/);
    r = await call('upload_file', { path: '/etc/agentjail-test', content: 'x' });
    assert.equal(r.isError, true);
    assert.match(r.content[0].text, /outside the workspace/);
    r = await run("import os\nos.symlink('/etc/passwd', 'link')");
    assert.equal(r.isError, false, text(r));
    r = await call('download_file', { path: 'link' });
    assert.equal(r.isError, true);
    assert.ok(!text(r).includes('root:'), 'a symlink was followed out of the workspace');
    r = await call('download_file', { path: 'missing.txt' });
    assert.equal(r.isError, true);
    r = await call('upload_file', { path: 'big.bin', content: 'x'.repeat(1024 * 1024 + 1) });
    assert.equal(r.isError, true);
    assert.match(r.content[0].text, /transfer limit/);
  });

  test('the file tools\' arguments outside the schema are isError results too (SEP-1303)', async () => {
    const cases = [
      ['download_file', { path: 'a', mode: 'r' }, /unexpected argument 'mode'/],
      ['upload_file', { path: 'a', content: 'x', encoding: 'hex' }, /'encoding' must be "utf-8" or "base64"/],
      ['upload_file', { path: 'a' }, /'content' is required/],
      ['download_file', {}, /'path' is required/],
      ['list_files', { path: 7 }, /'path' must be a string/],
      ['run_python', { source: 'print(1)' }, /unexpected argument 'source'/],
    ];
    for (const [name, args, words] of cases) {
      const r = await call(name, args);
      assert.equal(r.isError, true, name);
      assert.match(r.content[0].text, new RegExp(`^Invalid arguments for ${name}: `));
      assert.match(r.content[0].text, words);
    }
    await assert.rejects(call('run_bash', { code: 'ls' }), (e) => e.code === -32602);
  });

  test('a matplotlib figure comes back as an image content block with PNG bytes', async () => {
    const r = await run([
      'import matplotlib.pyplot as plt', 'fig, ax = plt.subplots()',
      'ax.plot([1, 2, 3], [1, 4, 9])', "ax.set_title('squares')"].join('\n'));
    assert.equal(r.isError, false, text(r));
    const images = r.content.filter((c) => c.type === 'image');
    assert.equal(images.length, 1);
    assert.equal(images[0].mimeType, 'image/png');
    const png = Buffer.from(images[0].data, 'base64');
    assert.ok(png.subarray(0, 8).equals(PNG_MAGIC), 'not a PNG');
    assert.equal(r.content[0].type, 'text');
    assert.match(r.content[0].text, /--- images ---\n\S+\.png \(image\/png, \d+ bytes\)/);
    assert.equal(r.structuredContent.images.length, 1);
    assert.equal(r.structuredContent.images[0].data, images[0].data);
  });

  test('a crash ends the interpreter, and the next call says its state was lost', async () => {
    let r = await run('kept = 1\nopen("survivor.txt", "w").write("still here")');
    assert.equal(r.isError, false);
    r = await run('import os; os._exit(3)');
    assert.equal(r.isError, true);
    assert.equal(r.structuredContent.exit_code, 3);
    r = await run('print(open("survivor.txt").read())\nprint(kept)');
    assert.equal(r.isError, true);
    assert.match(text(r), /variables and imports from earlier calls are gone/);
    assert.match(r.structuredContent.stdout, /still here/);
    assert.match(r.structuredContent.stderr, /NameError/);
  });
});

describe('sessions: limits, cancellation, the end of the connection', () => {
  test('a session closed by its idle limit is replaced, and the text says the state is gone', async () => {
    const client = new Client({ name: 'agentjail-test', version: '1.0.0' });
    await client.connect(new StdioClientTransport({
      command: AGENTJAIL, args: ['mcp', '--sessions', ...LIMITS, '--session-idle', '1'], stderr: 'ignore',
    }));
    try {
      let r = await client.callTool({ name: 'run_python', arguments: { code: 'y = 7' } });
      assert.equal(r.isError, false);
      // The idle timeout passes and the reaper closes it: its processes go
      // (waited for as the event it is, not for a fixed 2.5 s).
      assert.ok(await waitFor(() => sandboxProcesses() === 0), 'the idle session was not closed');
      r = await client.callTool({ name: 'list_files', arguments: {} });
      assert.equal(r.isError, false);
      assert.match(r.content[0].text, /a new session was started, because the previous one closed \(it was idle/);
      r = await client.callTool({ name: 'run_python', arguments: { code: 'print(y)' } });
      assert.match(r.structuredContent.stderr, /NameError/);
      assert.doesNotMatch(text(r), /new session/, 'said once, at the first call after');
    } finally {
      await client.close();
    }
  });

  test('notifications/cancelled stops a session call; the next call runs, told the state was lost', async () => {
    // A wall clock of 600 s: only the cancel can end the slow call before
    // the next call's answer, which a minute's deadline waits for.
    const s = rawServer(['--sessions', '--timeout', '600', '--cpu', '2']);
    const callMsg = (id, code) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'run_python', arguments: { code } } });
    s.send(callMsg(1, 'z = 5'));
    assert.equal((await s.next()).result.isError, false);
    // The slow call says it is running by a child the host can count.
    const before = sandboxProcesses();
    s.send(callMsg('slow', 'import os, time\nif os.fork() == 0:\n    time.sleep(3600)\ntime.sleep(3600)'));
    assert.ok(await waitFor(() => sandboxProcesses() > before), 'the slow call should be going');
    s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'slow', reason: 'test' } });
    s.send(callMsg(2, 'print(globals().get("z"))'));
    const m = await Promise.race([s.next(), sleep(60000).then(() => null)]);
    assert.ok(m, 'the cancelled call did not stop');
    assert.equal(m.id, 2, 'the cancelled request must get no response');
    assert.equal(m.result.structuredContent.stdout, 'None\n');
    assert.match(m.result.content[0].text, /variables and imports from earlier calls are gone/);
    s.end();
    assert.equal(await s.exited, 0);
    assert.equal(sandboxProcesses(), 0, 'the session outlived the server');
  });

  test('without --sessions the tool list is unchanged and the file tools do not exist', async () => {
    const s = rawServer();
    s.send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    const m = await s.next();
    assert.deepEqual(m.result.tools.map((t) => t.name), ['run_python']);
    assert.match(m.result.tools[0].description, /nothing persists between calls/);
    s.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'list_files', arguments: {} } });
    const e = await s.next();
    assert.equal(e.error.code, -32602);
    assert.match(e.error.message, /Unknown tool: list_files/);
    s.end();
    await s.exited;
  });

  test('the 2026-07-28 client lists the session tools too', async () => {
    const client = new ClientV2({ name: 'agentjail-test', version: '2.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(new StdioV2({ command: AGENTJAIL, args: ['mcp', '--sessions', ...LIMITS], stderr: 'ignore' }));
    try {
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name), ['run_python', 'upload_file', 'download_file', 'list_files']);
      await client.callTool({ name: 'run_python', arguments: { code: 'w = "modern"' } });
      const r = await client.callTool({ name: 'run_python', arguments: { code: 'print(w)' } });
      assert.equal(r.structuredContent.stdout, 'modern\n');
    } finally {
      await client.close();
    }
  });
});

// ---- raw lines: what a polite client never sends ----

const servers = [];
// Whatever a test does, no server it started outlives the file.
after(() => { for (const p of servers) p.kill('SIGKILL'); });

function rawServer(args = LIMITS) {
  const p = spawn(AGENTJAIL, ['mcp', ...ISOLATE, ...args], { stdio: ['pipe', 'pipe', 'ignore'] });
  servers.push(p);
  let buf = '';
  const waiting = [];
  const lines = [];
  p.stdout.on('data', (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      lines.push(JSON.parse(line)); // every line must be one JSON message
      while (waiting.length && lines.length) waiting.shift()(lines.shift());
    }
  });
  const exited = new Promise((r) => p.on('exit', (code) => r(code)));
  return {
    send: (msg) => p.stdin.write((typeof msg === 'string' ? msg : JSON.stringify(msg)) + '\n'),
    next: () => new Promise((r) => (lines.length ? r(lines.shift()) : waiting.push(r))),
    end: () => p.stdin.end(),
    exited,
    pending: () => lines.length,
  };
}

const modernMeta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

describe('raw protocol', () => {
  test('malformed, batched, mistyped and unknown messages get the right errors; the server goes on', async () => {
    const s = rawServer();
    s.send('{"jsonrpc": "2.0", "id": 1, "method": ');
    let m = await s.next();
    assert.equal(m.error.code, -32700);
    assert.strictEqual(m.id, null, 'an id that could not be read is null (JSON-RPC 2.0 section 5)');
    s.send([{ jsonrpc: '2.0', id: 2, method: 'ping' }]);
    m = await s.next();
    assert.equal(m.error.code, -32600);
    assert.strictEqual(m.id, null);
    // The specification's own examples: an invalid request without an id
    // is answered (it is no valid notification), with a null id.
    s.send({ jsonrpc: '2.0', method: 1, params: 'bar' });
    m = await s.next();
    assert.equal(m.error.code, -32600);
    assert.strictEqual(m.id, null);
    s.send({ foo: 'boo' });
    m = await s.next();
    assert.equal(m.error.code, -32600);
    assert.strictEqual(m.id, null);
    s.send([]);
    m = await s.next();
    assert.equal(m.error.code, -32600);
    assert.strictEqual(m.id, null);
    s.send({ jsonrpc: '1.0', id: 3, method: 'ping' });
    m = await s.next();
    assert.equal(m.error.code, -32600);
    assert.equal(m.id, 3);
    s.send({ jsonrpc: '2.0', id: 4, method: 'resources/list' });
    assert.deepEqual(await s.next(), { jsonrpc: '2.0', error: { code: -32601, message: 'Method not found' }, id: 4 });
    s.send({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: 'run_python' });
    assert.equal((await s.next()).error.code, -32600);
    s.send({ jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'run_python', arguments: { code: ['x'] } } });
    m = await s.next();
    assert.equal(m.result.isError, true, 'a wrong argument is the model\'s to correct');
    assert.match(m.result.content[0].text, /'code' must be a string/);
    s.send({ jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'run_python', arguments: 'print(1)' } });
    m = await s.next();
    assert.equal(m.error.code, -32602, 'arguments that are not an object make a malformed request');
    assert.match(m.error.message, /params.arguments must be an object/);
    s.send({ jsonrpc: '2.0', id: null, method: 'ping' });
    m = await s.next();
    assert.equal(m.error.code, -32600);
    assert.strictEqual(m.id, null);
    s.send({ jsonrpc: '2.0', id: { a: 1 }, method: 'ping' }); // an id of the wrong type
    m = await s.next();
    assert.equal(m.error.code, -32600);
    assert.strictEqual(m.id, null);
    s.send({ jsonrpc: '2.0', method: 'notifications/unknown' }); // no answer, ever
    s.send({ jsonrpc: '2.0', id: 7, method: 'ping' });
    assert.deepEqual(await s.next(), { jsonrpc: '2.0', id: 7, result: {} });
    s.end();
    assert.equal(await s.exited, 0);
  });

  test('code holding a NUL is answered under its own id, an isError result naming the NUL', async () => {
    // It was a -32700 Parse error with a null id: the call never got its answer.
    const s = rawServer();
    s.send('{"jsonrpc":"2.0","id":"nul","method":"tools/call","params":{"name":"run_python","arguments":{"code":"print(1)\\u0000"}}}');
    let m = await s.next();
    assert.equal(m.id, 'nul');
    assert.equal(m.result.isError, true);
    assert.match(m.result.content[0].text, /code: contains a NUL byte at offset 8/);
    // A NUL anywhere the server reads as a name stays a request it refuses,
    // still under the id.
    s.send('{"jsonrpc":"2.0","id":2,"method":"tools/call\\u0000","params":{}}');
    m = await s.next();
    assert.equal(m.id, 2);
    assert.equal(m.error.code, -32600);
    assert.match(m.error.message, /NUL byte/);
    s.send({ jsonrpc: '2.0', id: 3, method: 'ping' });
    assert.deepEqual(await s.next(), { jsonrpc: '2.0', id: 3, result: {} });
    s.end();
    assert.equal(await s.exited, 0);
  });

  test('a blank line before the first message is skipped, not a crash', async () => {
    // Found by fuzz/fuzz_mcp_request.c: the line buffer did not exist yet
    // and its terminator was written through NULL (SIGSEGV).
    const s = rawServer();
    s.send('');
    s.send({ jsonrpc: '2.0', id: 1, method: 'ping' });
    const first = await Promise.race([s.next(), s.exited.then((code) => ({ exited: code }))]);
    assert.deepEqual(first, { jsonrpc: '2.0', id: 1, result: {} });
    s.send('');
    s.send({ jsonrpc: '2.0', id: 2, method: 'ping' });
    assert.equal((await s.next()).id, 2);
    s.end();
    assert.equal(await s.exited, 0);
  });

  test('a line past the size limit is refused whole, and the next one is served', async () => {
    const s = rawServer();
    s.send('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + 'x'.repeat(26 * 1024 * 1024) + '"}}');
    const m = await s.next();
    assert.equal(m.error.code, -32700);
    assert.match(m.error.message, /longer than the server accepts/);
    assert.strictEqual(m.id, null);
    s.send({ jsonrpc: '2.0', id: 2, method: 'ping' });
    assert.equal((await s.next()).id, 2);
    s.end();
    await s.exited;
  });

  test('the 2026-07-28 envelope: discover, cacheable lists, resultType, -32022, missing _meta', async () => {
    const s = rawServer();
    s.send({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: modernMeta } });
    let m = await s.next();
    assert.equal(m.result.resultType, 'complete');
    assert.ok(m.result.supportedVersions.includes('2026-07-28'));
    assert.ok(m.result.capabilities.tools);
    assert.ok(Number.isInteger(m.result.ttlMs) && m.result.ttlMs >= 0);
    assert.ok(['public', 'private'].includes(m.result.cacheScope));
    assert.equal(m.result._meta['io.modelcontextprotocol/serverInfo'].name, 'agentjail');
    s.send({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: modernMeta } });
    m = await s.next();
    assert.equal(m.result.resultType, 'complete');
    assert.ok(Number.isInteger(m.result.ttlMs));
    s.send({ jsonrpc: '2.0', id: 3, method: 'tools/list', params: { _meta: { ...modernMeta, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } } });
    m = await s.next();
    assert.equal(m.error.code, -32022);
    assert.equal(m.error.data.requested, '2099-01-01');
    assert.ok(m.error.data.supported.includes('2026-07-28'));
    s.send({ jsonrpc: '2.0', id: 4, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } });
    assert.equal((await s.next()).error.code, -32602);
    s.send({ jsonrpc: '2.0', id: 5, method: 'server/discover' });
    assert.equal((await s.next()).error.code, -32602);
    s.send({ jsonrpc: '2.0', id: 6, method: 'tools/call', params: { _meta: modernMeta, name: 'run_python', arguments: { code: 'print(1)' } } });
    m = await s.next();
    assert.equal(m.result.resultType, 'complete');
    assert.equal(m.result.structuredContent.stdout, '1\n');
    s.send({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { _meta: modernMeta, name: 'run_python', arguments: { code: 1 } } });
    m = await s.next();
    assert.equal(m.result.resultType, 'complete');
    assert.equal(m.result.isError, true);
    assert.match(m.result.content[0].text, /'code' must be a string/);
    s.end();
    await s.exited;
  });

  test('notifications/cancelled: the run stops and its request gets no response', async () => {
    const s = rawServer();
    s.send({ jsonrpc: '2.0', id: 'slow', method: 'tools/call', params: { name: 'run_python', arguments: { code: 'import time\ntime.sleep(4)' } } });
    assert.ok(await waitFor(() => sandboxProcesses() > 0), 'the run should be going');
    s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'slow', reason: 'test' } });
    s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'never-sent' } });
    s.send({ jsonrpc: '2.0', id: 'after', method: 'ping' });
    assert.equal((await s.next()).id, 'after');
    assert.ok(await waitFor(() => sandboxProcesses() === 0), 'the cancelled run was not stopped');
    // A response would have come with the run's end: none may come.
    await sleep(1500);
    assert.equal(s.pending(), 0, 'the cancelled request must get no response');
    assert.equal(sandboxProcesses(), 0);
    s.end();
    await s.exited;
  });

  test('EOF ends the server, and no run outlives it', async () => {
    const s = rawServer(['--timeout', '60']);
    s.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'run_python', arguments: { code: 'import time\ntime.sleep(50)' } } });
    assert.ok(await waitFor(() => sandboxProcesses() > 0), 'the run should be going');
    s.end();
    assert.equal(await s.exited, 0);
    assert.equal(sandboxProcesses(), 0);
  });

  test('a configuration file with an unknown key is refused at start', async () => {
    const dir = mkdtempSync(join(root, 'build', 'mcp-config-'));
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ tier: 'process', memmory: 64 }));
    const p = spawn(AGENTJAIL, ['mcp', ...ISOLATE, '--config', bad], { stdio: ['pipe', 'pipe', 'pipe'] });
    let err = '';
    p.stderr.on('data', (d) => { err += d; });
    const code = await new Promise((r) => p.on('exit', r));
    assert.equal(code, 2);
    assert.match(err, /unknown key 'memmory'/);
    const good = join(dir, 'good.json');
    writeFileSync(good, JSON.stringify({ tier: 'process', memory: 64, timeout: 3 }));
    const s = spawn(AGENTJAIL, ['mcp', ...ISOLATE, '--config', good], { stdio: ['pipe', 'pipe', 'ignore'] });
    s.stdin.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) + '\n');
    let out = '';
    s.stdout.on('data', (d) => { out += d; });
    await new Promise((r) => s.on('exit', r));
    assert.match(JSON.parse(out).result.tools[0].description, /64 MiB of memory/);
    rmSync(dir, { recursive: true, force: true });
  });
});

// ---- output as it happens: notifications during a tools/call ----

// Every message up to and including the response to id, each with whether
// a sandbox process was alive when it arrived (the program's state then).
async function untilResponse(s, id) {
  const got = [];
  for (;;) {
    const m = await s.next();
    got.push({ m, running: sandboxProcesses() > 0 });
    if (m.id === id && (m.result || m.error)) return got;
  }
}
const progressOf = (got) => got.filter((g) => g.m.method === 'notifications/progress');
const logsOf = (got) => got.filter((g) => g.m.method === 'notifications/message');
const callParams = (code, meta) => ({ ...(meta ? { _meta: meta } : {}), name: 'run_python', arguments: { code } });
const PRINT_SLEEP_PRINT = 'import time\nprint("first line", flush=True)\ntime.sleep(2)\nprint("second line", flush=True)';

// The call with id 1 printed "first line", slept, printed "second line":
// the first came as a progress notification while it ran, before its
// result; then the server ends cleanly.
async function firstLineStreams(s) {
  const got = await untilResponse(s, 1);
  const first = got.findIndex((g) => g.m.method === 'notifications/progress' && /first line/.test(g.m.params.message));
  assert.ok(first >= 0 && first < got.length - 1, JSON.stringify(got.map((g) => g.m)));
  assert.ok(got[first].running);
  assert.equal(got.at(-1).m.result.structuredContent.stdout, 'first line\nsecond line\n');
  s.end();
  assert.equal(await s.exited, 0);
}

describe('output as it happens (stdio)', () => {
  test('with a progressToken the first line arrives while the program sleeps, before the second and the result', async () => {
    const s = rawServer();
    s.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: callParams(PRINT_SLEEP_PRINT, { progressToken: 'tok-1' }) });
    const got = await untilResponse(s, 1);
    const progress = progressOf(got);
    const first = got.findIndex((g) => g.m.method === 'notifications/progress' && /first line/.test(g.m.params.message));
    const second = got.findIndex((g) => g.m.method === 'notifications/progress' && /second line/.test(g.m.params.message));
    const result = got.length - 1;
    assert.ok(first >= 0, JSON.stringify(got));
    assert.ok(first < second && second < result, 'notifications in the order of the output, then the result');
    assert.ok(got[first].running, 'the first line must reach the client while the program still runs');
    for (const { m } of progress) assert.equal(m.params.progressToken, 'tok-1');
    const values = progress.map((g) => g.m.params.progress);
    for (let i = 1; i < values.length; i++) assert.ok(values[i] > values[i - 1], `progress must increase: ${values}`);
    assert.equal(values.at(-1), Buffer.byteLength('first line\nsecond line\n'));
    assert.equal(progress.map((g) => g.m.params.message).join(''), 'first line\nsecond line\n');
    // The result is the one a call without notifications gets.
    const r = got[result].m.result;
    assert.equal(r.isError, false);
    assert.equal(r.structuredContent.stdout, 'first line\nsecond line\n');
    s.end();
    assert.equal(await s.exited, 0);
  });

  test('without a progressToken or logging: no notification at all, as before', async () => {
    const s = rawServer();
    s.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: callParams('import sys\nprint("out", flush=True)\nprint("err", file=sys.stderr, flush=True)\nprint("out again")') });
    const got = await untilResponse(s, 1);
    assert.equal(got.length, 1, JSON.stringify(got.map((g) => g.m)));
    assert.equal(got[0].m.result.structuredContent.stdout, 'out\nout again\n');
    // A level above info asks for nothing a program prints.
    s.send({ jsonrpc: '2.0', id: 2, method: 'logging/setLevel', params: { level: 'warning' } });
    assert.deepEqual((await s.next()).result, {});
    s.send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: callParams('print("quiet")') });
    const quiet = await untilResponse(s, 3);
    assert.equal(quiet.length, 1, JSON.stringify(quiet.map((g) => g.m)));
    s.end();
    await s.exited;
  });

  test('logging/setLevel info: stdout and stderr as notifications/message, their text whole, before the result', async () => {
    const s = rawServer();
    s.send({ jsonrpc: '2.0', id: 'bad', method: 'logging/setLevel', params: { level: 'verbose' } });
    let m = await s.next();
    assert.equal(m.error.code, -32602);
    assert.match(m.error.message, /debug, info, notice/);
    s.send({ jsonrpc: '2.0', id: 1, method: 'logging/setLevel', params: { level: 'info' } });
    assert.deepEqual((await s.next()).result, {});
    // A character split across two writes (and so two chunks) is joined.
    const code = 'import sys, time\nprint("to out", flush=True)\nprint("to err", file=sys.stderr, flush=True)\n' +
      'sys.stdout.buffer.write(b"\\xc3"); sys.stdout.flush(); time.sleep(0.3)\n' +
      'sys.stdout.buffer.write(b"\\xa9!\\n"); sys.stdout.flush()';
    s.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: callParams(code) });
    const got = await untilResponse(s, 2);
    const logs = logsOf(got).map((g) => g.m.params);
    assert.equal(progressOf(got).length, 0, 'no progressToken, no progress');
    for (const p of logs) assert.equal(p.level, 'info');
    const text = (logger) => logs.filter((p) => p.logger === logger).map((p) => p.data).join('');
    assert.equal(text('stdout'), 'to out\n\u00e9!\n');
    assert.equal(text('stderr'), 'to err\n');
    assert.equal(got.at(-1).m.result.structuredContent.stdout, 'to out\n\u00e9!\n');
    s.end();
    await s.exited;
  });

  test('2026-07-28: the request\'s _meta logLevel asks for log messages, a request without it gets none', async () => {
    const s = rawServer();
    s.send({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: modernMeta } });
    assert.deepEqual((await s.next()).result.capabilities.logging, {});
    s.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: callParams('print("plain")', modernMeta) });
    assert.equal((await untilResponse(s, 2)).length, 1);
    s.send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: callParams('print("logged")', { ...modernMeta, 'io.modelcontextprotocol/logLevel': 'debug' }) });
    const got = await untilResponse(s, 3);
    assert.equal(logsOf(got).map((g) => g.m.params.data).join(''), 'logged\n');
    assert.equal(got.at(-1).m.result.resultType, 'complete');
    s.send({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: callParams('print(1)', { ...modernMeta, 'io.modelcontextprotocol/logLevel': 'loud' }) });
    assert.equal((await s.next()).error.code, -32602);
    s.send({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: callParams('print(1)', { progressToken: { a: 1 } }) });
    const m = await s.next();
    assert.equal(m.error.code, -32602);
    assert.match(m.error.message, /progressToken must be a string or a number/);
    s.end();
    await s.exited;
  });

  test('the output cap holds while streaming; a long chunk\'s progress message is cut, its log message is not', async () => {
    const s = rawServer([...LIMITS, '--output', '8']);
    s.send({ jsonrpc: '2.0', id: 0, method: 'logging/setLevel', params: { level: 'info' } });
    await s.next();
    s.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: callParams('import sys\nsys.stdout.write("y" * 3000); sys.stdout.flush()\nwhile True:\n    sys.stdout.write("x" * 1000)', { progressToken: 7 }) });
    const got = await untilResponse(s, 1);
    const r = got.at(-1).m.result;
    assert.equal(r.structuredContent.status, 'output_limit');
    const progress = progressOf(got).map((g) => g.m.params);
    assert.ok(progress.length > 0);
    assert.ok(progress.at(-1).progress <= 8 * 1024, `past the cap: ${progress.at(-1).progress}`);
    const logged = logsOf(got).map((g) => g.m.params.data).join('');
    assert.ok(logged.length <= 8 * 1024);
    assert.ok(r.structuredContent.stdout.startsWith(logged), 'the log is a prefix of the captured output');
    for (const p of progress) {
      assert.equal(p.progressToken, 7);
      assert.ok(Buffer.byteLength(p.message) <= 1024 + 3, `message of ${Buffer.byteLength(p.message)} bytes`);
    }
    assert.ok(progress.some((p) => p.message.endsWith('\u2026')), 'a chunk longer than 1 KiB is cut, and says so');
    for (let i = 0; i < 20 && sandboxProcesses() > 0; i++) await sleep(100);
    assert.equal(sandboxProcesses(), 0);
    s.end();
    await s.exited;
  });

  test('a session call streams too (--sessions)', async () => {
    const s = rawServer(['--sessions', ...LIMITS]);
    s.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: callParams(PRINT_SLEEP_PRINT, { progressToken: 'ses' }) });
    await firstLineStreams(s);
  });

  test('concurrent streaming calls: every line one whole message, each call\'s notifications its own output', async () => {
    const s = rawServer();
    const ids = [1, 2, 3, 4];
    // rawServer parses every line as JSON: a message cut by another would throw.
    const code = (i) => `import sys\nfor n in range(300):\n    print("call-${i}", n, "." * 200, flush=True)\n    print("err-${i}", n, file=sys.stderr, flush=True)`;
    for (const i of ids)
      s.send({ jsonrpc: '2.0', id: i, method: 'tools/call', params: callParams(code(i), { progressToken: `c${i}` }) });
    const byToken = new Map(ids.map((i) => [`c${i}`, []]));
    const results = new Map();
    while (results.size < ids.length) {
      const m = await s.next();
      if (m.method === 'notifications/progress') {
        assert.ok(!results.has(Number(m.params.progressToken.slice(1))), 'a notification after its call\'s result');
        byToken.get(m.params.progressToken).push(m.params);
      } else {
        results.set(m.id, m.result);
      }
    }
    for (const i of ids) {
      const r = results.get(i).structuredContent;
      const notes = byToken.get(`c${i}`);
      assert.equal(notes.at(-1).progress, Buffer.byteLength(r.stdout) + Buffer.byteLength(r.stderr));
      const owners = notes.flatMap((p) => [...(p.message ?? '').matchAll(/(?:call|err)-(\d+) /g)].map((m) => Number(m[1])));
      assert.ok(owners.length > 0 && owners.every((n) => n === i), 'another call\'s output in this call\'s notifications');
    }
    s.end();
    await s.exited;
  });

  test('the SDK v1 client gets the progress through callTool\'s onprogress', async () => {
    const client = new Client({ name: 'agentjail-test', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ command: AGENTJAIL, args: ['mcp', ...LIMITS, ...gate.bind], stderr: 'ignore' }));
    try {
      const seen = [];
      const onprogress = (p) => {
        seen.push(p);
        if (seen.map((q) => q.message).join('') === 'a\nb\n') gate.open('stdio-v1');
      };
      const r = await client.callTool({ name: 'run_python', arguments: { code: gate.program('stdio-v1') } },
        undefined, { onprogress });
      assert.equal(r.structuredContent.stdout, 'a\nb\n');
      assert.equal(seen.map((p) => p.message).join(''), 'a\nb\n');
      assert.equal(seen.at(-1).progress, 4);
    } finally {
      await client.close();
    }
  });
});

// ---- run_command: a shell in the session, when the deployer turns it on ----

const COMMANDS = ['--sessions', '--tools', 'run_python,run_command'];

describe('run_command (--sessions --tools run_python,run_command), SDK v1 client', () => {
  let client;
  before(async () => {
    client = new Client({ name: 'agentjail-test', version: '1.0.0' });
    await client.connect(new StdioClientTransport({
      command: AGENTJAIL, args: ['mcp', ...COMMANDS, ...LIMITS], stderr: 'ignore',
    }));
  });
  after(async () => { await client.close(); });

  const call = (name, args) => client.callTool({ name, arguments: args });

  test('lists run_command beside run_python and the file tools, its words saying what is there', async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name),
      ['run_python', 'run_command', 'upload_file', 'download_file', 'list_files']);
    const rc = tools[1];
    assert.deepEqual(rc.inputSchema.required, ['command']);
    assert.deepEqual(Object.keys(rc.inputSchema.properties), ['command', 'timeout']);
    assert.equal(rc.inputSchema.additionalProperties, false);
    assert.equal(rc.inputSchema.properties.timeout.maximum, 5);
    assert.ok(rc.outputSchema.required.includes('exit_code'));
    assert.match(rc.description, /\/bin\/sh -c, a POSIX shell/);
    assert.match(rc.description, /working directory is the workspace \/tmp\/work/);
    assert.match(rc.description, /5 s of wall-clock time/);
    assert.match(rc.description, /256 MiB of\s+memory/);
    assert.match(rc.description, /There is no network/);
    assert.equal(rc.annotations.destructiveHint, true);
    assert.equal(rc.annotations.openWorldHint, false);
  });

  test('a command runs in the session: its output and exit status, the files run_python sees', async () => {
    let r = await call('run_python', { code: "open('from_python.txt', 'w').write('py')\nkept = 7" });
    assert.equal(r.isError, false, text(r));
    r = await call('run_command', { command: 'pwd; cat from_python.txt; echo; echo oops >&2; echo sh > from_sh.txt; exit 3' });
    assert.equal(r.isError, true);
    assert.equal(r.structuredContent.status, 'error');
    assert.equal(r.structuredContent.exit_code, 3);
    assert.equal(r.structuredContent.stdout, '/tmp/work\npy\n');
    assert.equal(r.structuredContent.stderr, 'oops\n');
    assert.match(text(r), /status: error \(exit code 3\)\n--- stdout ---\n\/tmp\/work\npy\n/);
    r = await call('run_python', { code: "print(open('from_sh.txt').read().strip(), kept)" });
    assert.equal(r.structuredContent.stdout, 'sh 7\n');
  });

  test('its own timeout stops it and keeps Python\'s state; arguments outside the schema are isError', async () => {
    await call('run_python', { code: 'still = "here"' });
    let r = await call('run_command', { command: 'sleep 30', timeout: 0.5 });
    assert.equal(r.isError, true);
    assert.equal(r.structuredContent.status, 'timeout');
    r = await call('run_python', { code: 'print(still)' });
    assert.equal(r.structuredContent.stdout, 'here\n');
    for (const [args, words] of [
      [{ cmd: 'ls' }, /unexpected argument 'cmd'/],
      [{ command: 1 }, /'command' must be a string/],
      [{ command: 'true', timeout: -1 }, /'timeout' must be a positive number/],
      [{ command: 'true', timeout: 6 }, /timeout: 6 s is not within the session's wall-clock limit/],
    ]) {
      r = await call('run_command', args);
      assert.equal(r.isError, true, JSON.stringify(args));
      assert.equal(r.structuredContent, undefined);
      assert.match(text(r), /Invalid arguments for run_command/);
      assert.match(text(r), words);
    }
  });
});

describe('run_command: off unless the deployer names it', () => {
  test('--sessions alone offers no run_command; a call to it is an unknown tool', async () => {
    const s = rawServer(['--sessions', ...LIMITS]);
    s.send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    assert.ok(!(await s.next()).result.tools.some((t) => t.name === 'run_command'));
    s.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'run_command', arguments: { command: 'true' } } });
    const e = await s.next();
    assert.equal(e.error.code, -32602);
    assert.match(e.error.message, /Unknown tool: run_command/);
    s.end();
    assert.equal(await s.exited, 0);
  });

  test('--tools without --sessions, or naming no such tool, is refused at start, saying why', async () => {
    for (const [args, words] of [
      [['--tools', 'run_python,run_command'], /run_command runs in the connection's session: it needs sessions/],
      [['--sessions', '--tools', 'run_python,run_bash'], /unknown tool 'run_bash'/],
    ]) {
      const p = spawn(AGENTJAIL, ['mcp', ...ISOLATE, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
      let err = '';
      p.stderr.on('data', (d) => { err += d; });
      assert.equal(await new Promise((r) => p.on('exit', r)), 2, args.join(' '));
      assert.match(err, words);
    }
  });

  test('a command\'s output streams as progress notifications, before its result', async () => {
    const s = rawServer([...COMMANDS, ...LIMITS]);
    s.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: {
      _meta: { progressToken: 'sh' }, name: 'run_command',
      arguments: { command: 'echo first line; sleep 2; echo second line' } } });
    await firstLineStreams(s);
  });
});
