// agentjail serve's /mcp endpoint (MCP Streamable HTTP, stateless), driven by
// real MCP clients over HTTP: the official TypeScript SDK v1 (protocol
// 2025-11-25, with the handshake) and its v2 client pinned to 2026-07-28 (no
// handshake); then raw fetch() requests for what no polite client sends
// (wrong methods, no key, a foreign Origin, notifications, broken JSON), the
// per-key rate limit as HTTP 429, and a graceful SIGTERM that lets a run in
// progress finish. Every server this file starts listens on 127.0.0.1 on a
// port of its own choosing and is killed in an `after` hook.
//
// Safety: the programs here only ever run inside the sandbox, under their own
// uid range (--uid-base 2140000000), which the last test checks is empty.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { sandboxProcesses as countProcesses, sleep, waitFor } from './procs.mjs';
import { makeGate } from './gate.mjs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ClientV2, StreamableHTTPClientTransport as StreamableHTTPV2 } from '@modelcontextprotocol/client';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const gate = makeGate(root);
after(() => gate.remove());
const AGENTJAIL = process.env.AJ_CLI ?? join(root, 'build', 'test', 'agentjail');
// The sandbox uids this file's servers give their runs: a process of one of
// them after a test is a run left behind. A range of its own, so that other
// agentjail users on the machine (mcp.test.mjs uses the default) don't count;
// AJ_SERVE_UID_BASE moves it (and its slot directory) for a parallel run.
const UID_BASE = Number(process.env.AJ_SERVE_UID_BASE ?? 2140000000);
const SERVE_ARGS = ['--listen', '127.0.0.1:0', '--uid-base', String(UID_BASE),
  '--state-dir', `/run/agentjail-mcphttp-test-${UID_BASE}`, '--timeout', '5', '--cpu', '2'];

const sandboxProcesses = () => countProcesses(UID_BASE);

// Every server started here; the file-level `after` kills what is still up.
const servers = [];
after(() => { for (const s of servers) if (s.proc.exitCode === null && s.proc.signalCode === null) s.proc.kill('SIGKILL'); });

// Starts `agentjail serve` and resolves once it has printed its URL (and,
// without --keys, its one-time key before that). stderr is kept for messages.
function startServer(extra = []) {
  const proc = spawn(AGENTJAIL, ['serve', ...SERVE_ARGS, ...extra], { stdio: ['ignore', 'pipe', 'pipe'] });
  const s = { proc, key: null, url: null, stderr: '' };
  servers.push(s);
  s.exited = new Promise((r) => proc.on('exit', (code, signal) => r({ code, signal })));
  proc.stderr.on('data', (d) => { s.stderr += d; });
  return new Promise((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => reject(new Error(`serve did not print its URL in 10 s: ${s.stderr}`)), 10000);
    proc.on('exit', (code) => { clearTimeout(timer); reject(new Error(`serve exited ${code} at start: ${s.stderr}`)); });
    proc.stdout.on('data', (d) => {
      buf += d;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        const m = /^AGENTJAIL_(KEY|URL)=(.+)$/.exec(line);
        if (m && m[1] === 'KEY') s.key = m[2];
        if (m && m[1] === 'URL') {
          s.url = m[2];
          s.mcp = new URL('/mcp', s.url);
          clearTimeout(timer);
          resolve(s);
        }
      }
    });
  });
}

// The server's Prometheus counters: runs finished and auth failures.
async function counters(s, key = s.key) {
  const res = await fetch(new URL('/metrics', s.url), { headers: { Authorization: `Bearer ${key}` } });
  assert.equal(res.status, 200);
  const text = await res.text();
  let runs = 0;
  for (const m of text.matchAll(/^agentjail_runs_total\{[^}]*\} (\d+)$/gm)) runs += Number(m[1]);
  const auth = Number(/^agentjail_auth_failures_total (\d+)$/m.exec(text)[1]);
  return { runs, auth };
}

// One raw POST to /mcp, as an MCP client would send it unless told otherwise.
function post(s, body, headers = {}) {
  return fetch(s.mcp, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      Authorization: `Bearer ${s.key}`,
      ...headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

const callMsg = (id, code) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'run_python', arguments: { code } } });

function v1Client(s, key = s.key) {
  const client = new Client({ name: 'agentjail-serve-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(s.mcp, {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
  return { client, transport };
}

describe('SDK v1 client over Streamable HTTP, protocol 2025-11-25', () => {
  let s, client;
  before(async () => {
    s = await startServer();
    const c = v1Client(s);
    client = c.client;
    await client.connect(c.transport);
  });
  after(async () => { await client?.close(); });

  const run = (code) => client.callTool({ name: 'run_python', arguments: { code } });

  test('the server printed a key and a loopback URL', () => {
    assert.match(s.key, /^aj_/);
    assert.match(s.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  });

  test('connects, names itself, and lists exactly run_python', async () => {
    assert.equal(client.getServerVersion().name, 'agentjail');
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['run_python']);
    assert.deepEqual(tools[0].inputSchema.required, ['code']);
    assert.match(tools[0].description, /5 s of wall-clock time/);
  });

  test('a benign program: 42, status ok, not an error', async () => {
    const r = await run('print(6*7)');
    assert.equal(r.isError, false);
    assert.match(r.content[0].text, /42/);
    assert.equal(r.structuredContent.status, 'ok');
    assert.equal(r.structuredContent.exit_code, 0);
    assert.equal(r.structuredContent.stdout, '42\n');
    assert.equal(r.structuredContent.tier, 'process');
  });

  test('a failing program is isError with its exit code', async () => {
    const r = await run('raise SystemExit(3)');
    assert.equal(r.isError, true);
    assert.equal(r.structuredContent.status, 'error');
    assert.equal(r.structuredContent.exit_code, 3);
  });

  test('arguments outside the schema are an isError result (SEP-1303), and no run is spent', async () => {
    const before = await counters(s);
    for (const [args, words] of [[{ code: 7 }, /'code' must be a string/],
      [{ code: 'print(1)', memory: 4096 }, /unexpected argument 'memory'/], [{}, /'code' must be a string/]]) {
      const r = await client.callTool({ name: 'run_python', arguments: args });
      assert.equal(r.isError, true);
      assert.match(r.content[0].text, /^Invalid arguments for run_python: /);
      assert.match(r.content[0].text, words);
    }
    await assert.rejects(client.callTool({ name: 'run_shell', arguments: { code: 'ls' } }),
      (e) => e.code === -32602 && /Unknown tool: run_shell/.test(e.message));
    assert.equal((await counters(s)).runs, before.runs);
    const r = await run('print("after")');
    assert.equal(r.structuredContent.stdout, 'after\n');
  });

  test('six concurrent calls are each answered with their own output', async () => {
    const ids = [1, 2, 3, 4, 5, 6];
    const rs = await Promise.all(ids.map((i) =>
      run(`import sys, time\ntime.sleep(0.3)\nprint('out-${i}')\nprint('err-${i}', file=sys.stderr)\nraise SystemExit(${10 + i})`)));
    for (const [n, r] of rs.entries()) {
      const i = ids[n];
      assert.equal(r.structuredContent.stdout, `out-${i}\n`);
      assert.equal(r.structuredContent.stderr, `err-${i}\n`);
      assert.equal(r.structuredContent.exit_code, 10 + i);
      assert.equal(r.isError, true);
    }
  });

  test('a wrong key: connecting fails with 401, and nothing runs', async () => {
    const before = await counters(s);
    const c = v1Client(s, 'aj_' + 'x'.repeat(43));
    // The SDK throws a StreamableHTTPError: code 401, the server's body in its message.
    await assert.rejects(c.client.connect(c.transport), (e) => {
      assert.equal(e.code, 401);
      assert.match(e.message, /unauthorized/i);
      return true;
    });
    await c.client.close().catch(() => {});
    const now = await counters(s);
    assert.equal(now.runs, before.runs, 'a run happened without a valid key');
    assert.ok(now.auth > before.auth, 'the server did not count the failed authentication');
  });
});

describe('SDK v2 client over Streamable HTTP, protocol 2026-07-28', () => {
  // @modelcontextprotocol/client 2.4.0 exports StreamableHTTPClientTransport
  // from its main entry (there is no './streamableHttp' subpath); it takes
  // the same requestInit option as v1.
  let s, client;
  before(async () => {
    s = await startServer();
    client = new ClientV2({ name: 'agentjail-serve-test', version: '2.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(new StreamableHTTPV2(s.mcp, {
      requestInit: { headers: { Authorization: `Bearer ${s.key}` } },
    }));
  });
  after(async () => { await client?.close(); });

  test('speaks the modern era, lists and calls run_python', async () => {
    assert.equal(client.getProtocolEra(), 'modern');
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['run_python']);
    const r = await client.callTool({ name: 'run_python', arguments: { code: 'print("modern")' } });
    assert.equal(r.isError, false);
    assert.equal(r.structuredContent.status, 'ok');
    assert.equal(r.structuredContent.stdout, 'modern\n');
  });
});

describe('raw HTTP on /mcp', () => {
  let s;
  before(async () => { s = await startServer(); });

  test('GET and DELETE are 405 with Allow: POST (no SSE stream, no session)', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(s.mcp, { method, headers: { Authorization: `Bearer ${s.key}`, Accept: 'text/event-stream' } });
      assert.equal(res.status, 405, method);
      assert.equal(res.headers.get('allow'), 'POST');
      await res.body?.cancel();
    }
  });

  test('a POST without Authorization, or with another scheme, is 401 with WWW-Authenticate', async () => {
    for (const auth of [undefined, `Basic ${Buffer.from('a:b').toString('base64')}`]) {
      const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
      if (auth) headers.Authorization = auth;
      const res = await fetch(s.mcp, { method: 'POST', headers, body: JSON.stringify(callMsg(1, 'print(1)')) });
      assert.equal(res.status, 401);
      assert.match(res.headers.get('www-authenticate'), /^Bearer/);
      await res.body?.cancel();
    }
  });

  test('a POST from a foreign Origin is 403, and its call does not run', async () => {
    const before = await counters(s);
    const res = await post(s, callMsg(1, 'print(1)'), { Origin: 'http://evil.example' });
    assert.equal(res.status, 403);
    assert.match((await res.json()).error.message, /evil\.example/);
    assert.equal((await counters(s)).runs, before.runs);
  });

  test('a notification is 202 Accepted with an empty body', async () => {
    const res = await post(s, { jsonrpc: '2.0', method: 'notifications/initialized' });
    assert.equal(res.status, 202);
    assert.equal(await res.text(), '');
  });

  test('malformed JSON is answered with a JSON-RPC parse error (-32700) and a null id', async () => {
    // The server answers 200 with the error as the body, as on stdio. (The
    // transport spec also allows 400 here; the SDK's own servers send 400.)
    const res = await post(s, '{"jsonrpc": "2.0", "id": 1, "method": ');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type'), /^application\/json/);
    const m = await res.json();
    assert.equal(m.jsonrpc, '2.0');
    assert.equal(m.error.code, -32700);
    assert.strictEqual(m.id, null, 'an id that could not be read is null (JSON-RPC 2.0 section 5)');
  });

  test('code holding a NUL is answered under its own id, an isError result naming the NUL', async () => {
    const res = await post(s, '{"jsonrpc":"2.0","id":"nul","method":"tools/call","params":{"name":"run_python","arguments":{"code":"print(1)\\u0000"}}}');
    assert.equal(res.status, 200);
    const m = await res.json();
    assert.equal(m.id, 'nul');
    assert.equal(m.result.isError, true);
    assert.match(m.result.content[0].text, /code: contains a NUL byte at offset 8/);
  });

  test('a plain tools/call POST is answered with application/json and no Mcp-Session-Id', async () => {
    const res = await post(s, callMsg('raw', 'print("raw")'));
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type'), /^application\/json/);
    assert.equal(res.headers.get('mcp-session-id'), null);
    const m = await res.json();
    assert.equal(m.id, 'raw');
    assert.equal(m.result.structuredContent.stdout, 'raw\n');
  });
});

// ---- output as it happens: an SSE answer to a call that asked for notifications ----

// The JSON-RPC messages of an SSE body, each with whether a sandbox process
// was alive when it arrived; the raw text too, to check the framing.
async function sseMessages(res) {
  const got = [];
  let text = '';
  let buf = '';
  const decoder = new TextDecoder();
  for await (const chunk of res.body) {
    const part = decoder.decode(chunk, { stream: true });
    text += part;
    buf += part;
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const data = block.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
      if (!data) continue; // a comment (keep-alive)
      assert.match(block, /^event: message$/m);
      got.push({ m: JSON.parse(data), running: sandboxProcesses() > 0 });
    }
  }
  assert.equal(buf, '', 'the body ends after a whole event');
  return { got, text };
}

const PRINT_SLEEP_PRINT = 'import time\nprint("first line", flush=True)\ntime.sleep(2)\nprint("second line", flush=True)';
const callWith = (id, code, meta) => ({ ...callMsg(id, code), params: { ...callMsg(id, code).params, _meta: meta } });

describe('output as it happens over /mcp (SSE)', () => {
  let s;
  before(async () => { s = await startServer(['--output', '8', ...gate.bind]); });

  test('with a progressToken: SSE, the first line while the program sleeps, then the second, then the result, then the end', async () => {
    const res = await post(s, callWith('sse', PRINT_SLEEP_PRINT, { progressToken: 'tok' }));
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type'), /^text\/event-stream/);
    const { got } = await sseMessages(res);
    const first = got.findIndex((g) => g.m.method === 'notifications/progress' && /first line/.test(g.m.params.message));
    const second = got.findIndex((g) => g.m.method === 'notifications/progress' && /second line/.test(g.m.params.message));
    assert.ok(first >= 0, JSON.stringify(got.map((g) => g.m)));
    assert.ok(first < second && second < got.length - 1, 'notifications in order, the result last');
    assert.ok(got[first].running, 'the first line must arrive while the program still runs');
    const last = got.at(-1).m;
    assert.equal(last.id, 'sse');
    assert.equal(last.result.structuredContent.stdout, 'first line\nsecond line\n');
    const values = got.slice(0, -1).map((g) => g.m.params.progress);
    for (let i = 1; i < values.length; i++) assert.ok(values[i] > values[i - 1]);
  });

  test('the 2026-07-28 logLevel gives notifications/message on the stream', async () => {
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {},
      'io.modelcontextprotocol/logLevel': 'info' };
    const res = await post(s, callWith(2, 'import sys\nprint("o", flush=True)\nprint("e", file=sys.stderr)', meta),
      { 'MCP-Protocol-Version': '2026-07-28' });
    assert.match(res.headers.get('content-type'), /^text\/event-stream/);
    const { got } = await sseMessages(res);
    const logs = got.filter((g) => g.m.method === 'notifications/message').map((g) => g.m.params);
    assert.equal(logs.filter((p) => p.logger === 'stdout').map((p) => p.data).join(''), 'o\n');
    assert.equal(logs.filter((p) => p.logger === 'stderr').map((p) => p.data).join(''), 'e\n');
    assert.equal(got.at(-1).m.result.resultType, 'complete');
  });

  test('a client that takes only application/json gets the plain answer, without notifications', async () => {
    const res = await post(s, callWith(3, 'print("j")', { progressToken: 1 }), { Accept: 'application/json' });
    assert.match(res.headers.get('content-type'), /^application\/json/);
    const m = await res.json();
    assert.equal(m.result.structuredContent.stdout, 'j\n');
  });

  test('the output cap holds on the stream', async () => {
    const res = await post(s, callWith(4, 'import sys\nwhile True:\n    sys.stdout.write("x" * 1000)', { progressToken: 'cap' }));
    const { got } = await sseMessages(res);
    const r = got.at(-1).m.result;
    assert.equal(r.structuredContent.status, 'output_limit');
    const progress = got.filter((g) => g.m.method === 'notifications/progress').map((g) => g.m.params.progress);
    assert.ok(progress.length > 0);
    assert.ok(progress.at(-1) <= 8 * 1024, `past the cap: ${progress.at(-1)}`);
  });

  test('a client that drops the stream mid-run: the run ends on its own, nothing is left, the server goes on', async () => {
    const res = await post(s, callWith(5, PRINT_SLEEP_PRINT, { progressToken: 'drop' }));
    const reader = res.body.getReader();
    const { value } = await reader.read();
    assert.match(new TextDecoder().decode(value), /first line/);
    await reader.cancel();
    for (let i = 0; i < 50 && sandboxProcesses() > 0; i++) await sleep(100);
    assert.equal(sandboxProcesses(), 0);
    const again = await post(s, callMsg(6, 'print("on")'));
    assert.equal((await again.json()).result.structuredContent.stdout, 'on\n');
  });

  test('the SDK v1 client takes the stream: callTool\'s onprogress sees each line, then the result', async () => {
    const { client, transport } = v1Client(s);
    await client.connect(transport);
    try {
      const seen = [];
      const onprogress = (p) => {
        seen.push(p.message);
        if (seen.join('') === 'a\nb\n') gate.open('http-v1');
      };
      const r = await client.callTool({ name: 'run_python', arguments: { code: gate.program('http-v1') } },
        undefined, { onprogress });
      assert.equal(r.structuredContent.stdout, 'a\nb\n');
      assert.equal(seen.join(''), 'a\nb\n');
    } finally {
      await client.close();
    }
  });
});

describe('/mcp SSE to a client that does not read', () => {
  test('notifications past the bound are dropped, the run is not held up, the result arrives whole and last', async () => {
    const s = await startServer(['--output', String(32 * 1024), '--timeout', '60', '--cpu', '30']);
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {},
      'io.modelcontextprotocol/logLevel': 'info' };
    // 20 MiB of output logged whole: far more than the 4 MiB queue and
    // what the sockets between take while nobody reads.
    const body = JSON.stringify(callWith('flood', 'import sys\nfor i in range(20 * 1024):\n    sys.stdout.write("x" * 1024)', meta));
    const req = httpRequest(s.mcp, { method: 'POST', headers: { 'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream', Authorization: `Bearer ${s.key}`, 'MCP-Protocol-Version': '2026-07-28' } });
    req.end(body);
    const [res] = await once(req, 'response');
    res.pause();
    assert.match(res.headers['content-type'], /^text\/event-stream/);
    // The run ends while the client has read nothing (serve logs each call's end).
    for (let i = 0; i < 600 && !/run_python: ok/.test(s.stderr); i++) await sleep(100);
    assert.match(s.stderr, /run_python: ok/, 'the run was held up by a client that does not read');
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (d) => { text += d; });
    res.resume();
    await once(res, 'end');
    const events = text.split('\n\n').filter((b) => b.startsWith('event: message\ndata: '));
    const msgs = events.map((b) => JSON.parse(b.slice('event: message\ndata: '.length)));
    const last = msgs.at(-1);
    assert.equal(last.id, 'flood');
    assert.equal(last.result.structuredContent.stdout.length, 20 * 1024 * 1024);
    const logged = msgs.filter((m) => m.method === 'notifications/message').reduce((n, m) => n + m.params.data.length, 0);
    assert.ok(logged < 20 * 1024 * 1024, `nothing was dropped: ${logged} bytes logged`);
    for (let i = 0; i < 50 && !/notification\(s\) dropped/.test(s.stderr); i++) await sleep(100);
    assert.match(s.stderr, /notification\(s\) dropped/);
  });
});

describe('per-key runs per minute over MCP', () => {
  let s, dir;
  before(async () => {
    dir = mkdtempSync(join(root, 'build', 'serve-keys-'));
    const file = join(dir, 'keys');
    const key = execFileSync(AGENTJAIL, ['keys', 'add', '--file', file, 'limited', '--runs-per-minute', '2'],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    s = await startServer(['--keys', file]);
    s.key = key;
  });
  after(() => { rmSync(dir, { recursive: true, force: true }); });

  test('the third tools/call within the minute is 429 with Retry-After and a JSON-RPC error', async () => {
    for (const id of [1, 2]) {
      const res = await post(s, callMsg(id, `print(${id})`));
      assert.equal(res.status, 200);
      assert.equal((await res.json()).result.structuredContent.stdout, `${id}\n`);
    }
    const res = await post(s, callMsg(3, 'print(3)'));
    assert.equal(res.status, 429);
    const retry = Number(res.headers.get('retry-after'));
    assert.ok(Number.isInteger(retry) && retry >= 1 && retry <= 60, `Retry-After: ${res.headers.get('retry-after')}`);
    const m = await res.json();
    assert.equal(m.jsonrpc, '2.0');
    assert.equal(m.id, 3);
    assert.equal(m.error.code, -32000);
    assert.match(m.error.message, /[Rr]ate/);
    // What is not a run is not limited.
    const ping = await post(s, { jsonrpc: '2.0', id: 4, method: 'ping' });
    assert.equal(ping.status, 200);
    assert.deepEqual(await ping.json(), { jsonrpc: '2.0', id: 4, result: {} });
  });
});

describe('graceful shutdown', () => {
  // One SIGTERM, observed by three tests: a call going when it came,
  // a call sent while the server drains, and how the server ends.
  const seen = {};
  before(async () => {
    // A wall clock that only catches a hang: the run's 5 s sleep must end
    // by itself.
    const s = await startServer(['--timeout', '60']);
    const { client, transport } = v1Client(s);
    await client.connect(transport);
    const t0 = Date.now();
    const call = client.callTool({ name: 'run_python',
      arguments: { code: 'import time; time.sleep(5); print("done")' } })
      .then((r) => ({ r }), (e) => ({ e }));
    // Each step waits for the event it needs, not for a pause: the run is
    // going (its process is there), then serve has begun to drain (it says
    // so); the run's 5 s leave the late call room to come meanwhile.
    await waitFor(() => sandboxProcesses() > 0);
    s.proc.kill('SIGTERM');
    await waitFor(() => /finishing the runs in progress/.test(s.stderr));
    const late = await post(s, callMsg('late', 'print(1)')).then(
      async (res) => ({ status: res.status, retry: res.headers.get('retry-after'), body: await res.json() }),
      (e) => ({ e }));
    Object.assign(seen, { call: await call, late, exit: await s.exited, ms: Date.now() - t0, stderr: s.stderr });
    await client.close().catch(() => {});
  });

  test('SIGTERM: the call in progress completes with its output', () => {
    assert.ok(!seen.call.e, `the call failed: ${seen.call.e?.cause?.message ?? seen.call.e?.message}`);
    assert.equal(seen.call.r.isError, false);
    assert.equal(seen.call.r.structuredContent.status, 'ok');
    assert.equal(seen.call.r.structuredContent.stdout, 'done\n');
  });

  test('while draining, a new tools/call is 503 with Retry-After and a JSON-RPC error', () => {
    assert.ok(!seen.late.e, String(seen.late.e));
    assert.equal(seen.late.status, 503);
    assert.ok(Number(seen.late.retry) >= 1);
    assert.equal(seen.late.body.id, 'late');
    assert.equal(seen.late.body.error.code, -32000);
  });

  test('the server waits for the run in progress, then exits 0', () => {
    assert.deepEqual(seen.exit, { code: 0, signal: null }, seen.stderr);
    assert.ok(seen.ms >= 5000, `exited ${seen.ms} ms after the call started: the run was cut short`);
  });
});

describe('afterwards', () => {
  test('no sandbox process is left behind', async () => {
    // Stop the servers still up, the way a deployer would, then look.
    const up = servers.filter((s) => s.proc.exitCode === null && s.proc.signalCode === null);
    for (const s of up) s.proc.kill('SIGTERM');
    for (const s of up) assert.equal((await s.exited).code, 0, s.stderr);
    for (let i = 0; i < 20 && sandboxProcesses() > 0; i++) await sleep(100);
    assert.equal(sandboxProcesses(), 0);
  });
});
