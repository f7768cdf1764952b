// The console at /ui in a real browser: Debian's chromium driven by
// playwright-core from npm, against a real agentjail serve (the sanitizer
// build) on loopback. Controls are found by role and accessible name, as
// an assistive tool finds them. Each test waits for an event on the page
// (text, an element, a download), never for a duration; a deadline only
// catches a hang. A screenshot of each page goes to build/console/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

import { startServe } from '../lib/serve.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const AGENTJAIL = process.env.AJ_CLI ?? join(root, 'build', 'test', 'agentjail');
// A uid range of its own: AJ_SERVE_UID_BASE + 8000000 (2158000000).
const UID_BASE = Number(process.env.AJ_SERVE_UID_BASE ?? 2150000000) + 8000000;
const CHROMIUM = process.env.AJ_CHROMIUM ?? '/usr/bin/chromium';
const SHOTS = join(root, 'build', 'console');
const HANG = 120000; // catches a hang only

// key: the operator's (--metrics, --admin); tenant: a key of no power.
let serve, browser, page, keysDir, key, tenant, origin, dialogs = [];

async function call(method, path, body, raw) {
  const r = await fetch(origin + path, { method, headers: { Authorization: `Bearer ${key}`,
    ...(body && !raw ? { 'Content-Type': 'application/json' } : {}) },
  body: body === undefined ? undefined : raw ? body : JSON.stringify(body) });
  return r;
}

async function shot(name) {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

async function login() {
  if (await page.getByRole('navigation', { name: 'Pages' }).isVisible()) return;
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('navigation', { name: 'Pages' }).waitFor();
}

let origin2; // a loopback server the runs may reach (its port allowed)
let gate = false; // what its /gate answers: 'go' once true
before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  const srv = createServer((req, res) => res.end(req.url === '/gate' ? (gate ? 'go' : 'wait')
    : 'hello from loopback\n'));
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  origin2 = srv;
  keysDir = mkdtempSync(join(tmpdir(), 'aj-ui-keys-'));
  const file = join(keysDir, 'keys.json');
  key = execFileSync(AGENTJAIL, ['keys', 'add', '--file', file, 'ops', '--metrics', '--admin', '--sessions', '8'],
    { stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim();
  tenant = execFileSync(AGENTJAIL, ['keys', 'add', '--file', file, 'tenant'],
    { stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim();
  serve = await startServe(AGENTJAIL, { base: UID_BASE, name: 'ui-test', args: ['--timeout', '60',
    '--keys', file, '--checkpoint-dir', join(keysDir, 'ckpt'),
    '--allow-cidr', `127.0.0.1/32:${srv.address().port}`] });
  origin = serve.url;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  const ctx = await browser.newContext({ acceptDownloads: true, viewport: { width: 1200, height: 900 } });
  page = await ctx.newPage();
  page.setDefaultTimeout(HANG);
  page.on('dialog', async (d) => { dialogs.push(d.message()); await d.dismiss(); });
});

after(async () => {
  if (browser) await browser.close();
  if (origin2) origin2.close();
  if (serve) {
    serve.child.kill('SIGTERM');
    await once(serve.child, 'exit');
  }
  rmSync(keysDir, { recursive: true, force: true });
});

test('the console is served with a strict policy, and a wrong key is refused on the page', async () => {
  const r = await fetch(`${origin}/ui/`);
  assert.equal(r.status, 200);
  const csp = r.headers.get('content-security-policy');
  assert.match(csp, /script-src 'self';/);
  assert.doesNotMatch(csp, /script-src[^;]*unsafe/);
  assert.match(csp, /frame-ancestors 'none'/);
  assert.equal((await fetch(`${origin}/ui/no-such-file.js`)).status, 404);
  assert.equal((await fetch(`${origin}/ui/`, { method: 'POST' })).status, 405);
  await page.goto(`${origin}/ui/`);
  await page.getByLabel('API key').fill('not-a-key');
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('alert').filter({ hasText: 'refused' }).waitFor();
  assert.equal(await page.getByRole('navigation', { name: 'Pages' }).isVisible(), false);
  await shot('login');
  await login();
  await page.getByLabel('API key').waitFor({ state: 'hidden' });
  // The key is in this tab's session storage, and no cookie was set.
  assert.equal(await page.evaluate(() => sessionStorage.getItem('agentjail.key')), key);
  assert.deepEqual(await page.context().cookies(), []);
});

async function runInPlayground(code) {
  await page.goto(`${origin}/ui/#playground`);
  await login();
  const box = page.getByRole('textbox', { name: 'Code' });
  await box.fill(code);
  await page.getByRole('button', { name: 'Run' }).click();
}

test('the playground runs print(6*7), shows a chart, and shows output line by line', async () => {
  await runInPlayground('print(6*7)');
  await page.getByRole('log', { name: 'Output' }).filter({ hasText: '42' }).waitFor();
  await page.getByRole('status').filter({ hasText: /^ok/ }).waitFor();
  await runInPlayground('import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()\n');
  await page.getByRole('img', { name: /^chart/ }).waitFor();
  const src = await page.getByRole('img', { name: /^chart/ }).getAttribute('src');
  assert.match(src, /^data:image\/png;base64,iVBORw0KGgo/);
  // A loop that cannot end before the test answers its first line (the
  // loopback server's /gate says go): the line is on the page while the
  // run still runs.
  await runInPlayground([
    'import time, urllib.request',
    'print("line 0", flush=True)',
    'for _ in range(1200):',
    `    if urllib.request.urlopen("http://127.0.0.1:${origin2.address().port}/gate").read() == b"go": break`,
    '    time.sleep(0.05)',
    'print("line 1")'].join('\n'));
  await page.getByRole('log', { name: 'Output' }).filter({ hasText: 'line 0' }).waitFor();
  assert.match(await page.getByRole('status').textContent(), /^running in session/);
  assert.doesNotMatch(await page.getByRole('log', { name: 'Output' }).textContent(), /line 1/);
  gate = true;
  await page.getByRole('log', { name: 'Output' }).filter({ hasText: 'line 1' }).waitFor();
  await page.getByRole('status').filter({ hasText: /^ok/ }).waitFor();
  await shot('playground');
});

test("a program's markup is shown as text: no dialog, no script, no element", async () => {
  dialogs = [];
  await runInPlayground('print("<img src=x onerror=alert(1)>")\nprint("<script>alert(2)</script>")\n' +
    'import sys; print("<b>err</b>", file=sys.stderr)');
  const out = page.getByRole('log', { name: 'Output' });
  await out.filter({ hasText: '<script>alert(2)</script>' }).waitFor();
  await page.getByRole('status').filter({ hasText: /^ok/ }).waitFor();
  assert.match(await out.textContent(), /<img src=x onerror=alert\(1\)>/);
  assert.equal(await out.locator('img, script, b').count(), 0);
  assert.deepEqual(dialogs, []);
});

test('a session: upload a CSV, run pandas on it, download what it wrote', async () => {
  await page.goto(`${origin}/ui/#sessions`);
  await login();
  await page.getByRole('button', { name: 'Open a session' }).click();
  await page.getByRole('region', { name: /^Session / }).waitFor();
  await page.getByLabel('Upload a file').setInputFiles({ name: 'data.csv', mimeType: 'text/csv',
    buffer: Buffer.from('a,b\n1,2\n3,4\n5,6\n') });
  await page.getByRole('button', { name: 'Download data.csv' }).waitFor();
  await page.getByRole('textbox', { name: 'Code' }).fill(
    "import pandas as pd\ndf = pd.read_csv('data.csv')\ndf['c'] = df.a + df.b\ndf.to_csv('out.csv', index=False)\nprint(df.c.sum())");
  await page.getByRole('button', { name: 'Run' }).click();
  await page.getByRole('log', { name: 'Output' }).filter({ hasText: '21' }).waitFor();
  const [download] = await Promise.all([page.waitForEvent('download'),
    page.getByRole('button', { name: 'Download out.csv' }).click()]);
  const path = await download.path();
  assert.equal(readFileSync(path, 'utf8'), 'a,b,c\n1,2,3\n3,4,7\n5,6,11\n');
  await shot('session');
  // A directory opens as one; it is not offered as a download.
  assert.equal(await page.getByRole('button', { name: 'Download outputs' }).count(), 0);
  await page.getByRole('button', { name: 'Open outputs' }).click();
  await page.getByRole('heading', { name: 'Files in outputs' }).waitFor();
  // It is listed on the sessions page.
  const sid = (await page.getByRole('region', { name: /^Session / }).getAttribute('aria-label')).split(' ')[1];
  await page.goto(`${origin}/ui/#sessions`);
  await page.getByRole('link', { name: sid }).waitFor();
  await shot('sessions');
});

test("an admin key's sessions page lists every key's and closes another key's; a tenant's its own", async () => {
  const asTenant = (method, path, body) => fetch(origin + path, { method, body: body && JSON.stringify(body),
    headers: { Authorization: `Bearer ${tenant}`, ...(body ? { 'Content-Type': 'application/json' } : {}) } });
  const opened = await asTenant('POST', '/v1/sessions', {});
  assert.equal(opened.status, 201);
  const sid = (await opened.json()).id;
  await page.goto(`${origin}/ui/#sessions`);
  await page.reload(); // the last test ended on this page: drawn again, with the tenant's
  await login();
  const table = page.getByRole('table', { name: "Every key's open sessions" });
  await table.waitFor();
  assert.equal(await table.getByRole('columnheader', { name: 'key', exact: true }).count(), 1);
  const row = table.getByRole('row').filter({ hasText: sid });
  await row.waitFor();
  assert.equal(await row.getByRole('cell', { name: 'tenant', exact: true }).count(), 1);
  // Another key's session is no link (its page would answer 404), and
  // only another key's has a Close.
  assert.equal(await page.getByRole('link', { name: sid }).count(), 0);
  assert.equal(await table.getByRole('button', { name: /^Close session .* of key ops$/ }).count(), 0);
  await shot('sessions'); // the operator's view, over the one the session test saved
  await row.getByRole('button', { name: `Close session ${sid} of key tenant` }).click();
  await row.waitFor({ state: 'detached' });
  const r = await asTenant('POST', `/v1/sessions/${sid}/runs`, { code: 'print(1)' });
  assert.equal(r.status, 410);
  assert.match((await r.json()).error.message, /an operator closed it/);
  assert.equal((await asTenant('DELETE', `/v1/sessions/${sid}`)).status, 204);

  // The tenant's console: all=true refused (403), so its own list, no key column.
  const own = (await (await asTenant('POST', '/v1/sessions', {})).json()).id;
  await page.getByRole('button', { name: 'Log out' }).click();
  await page.getByLabel('API key').fill(tenant);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('navigation', { name: 'Pages' }).waitFor();
  await page.goto(`${origin}/ui/#sessions`);
  const mine = page.getByRole('table', { name: 'Open sessions' });
  await mine.getByRole('link', { name: own }).waitFor();
  assert.equal(await mine.getByRole('columnheader', { name: 'key', exact: true }).count(), 0);
  assert.equal(await mine.getByRole('button', { name: /^Close/ }).count(), 0);
  assert.equal((await asTenant('DELETE', `/v1/sessions/${own}`)).status, 204);
  await page.getByRole('button', { name: 'Log out' }).click();
  await login();
});

test('the terminal echoes typed keys and follows a resize', async () => {
  await page.setViewportSize({ width: 1200, height: 900 });
  await page.goto(`${origin}/ui/#terminal`);
  await login();
  const screen = page.locator('#term .xterm-rows');
  // Keys go to the shell once it runs (its pid on the page) and has
  // drawn its prompt.
  await page.locator('section[data-pid]').waitFor();
  await screen.filter({ hasText: /[$#]/ }).waitFor();
  await page.locator('#term').click();
  await page.keyboard.type('echo hi-$((6*7))\n');
  await screen.filter({ hasText: 'hi-42' }).waitFor();
  await page.keyboard.type('stty size\n');
  await screen.filter({ hasText: /\n?\d+ \d+/ }).waitFor();
  const sizes = async () => [...(await screen.textContent()).matchAll(/(\d+) (\d+)/g)].map((m) => `${m[1]} ${m[2]}`);
  const before = (await sizes()).at(-1);
  await shot('terminal');
  await page.setViewportSize({ width: 800, height: 600 });
  // Asked again until the shell sees the new size (the resize is a POST
  // the page makes when xterm refits).
  let after = before;
  for (let i = 0; i < 100 && after === before; i++) {
    await page.keyboard.type('stty size\n');
    await page.waitForTimeout(100);
    after = (await sizes()).at(-1);
  }
  assert.notEqual(after, before, `the size stayed ${before}`);
  await page.setViewportSize({ width: 1200, height: 900 });
});

test('the runs page lists a run with its egress log', async () => {
  const port = origin2.address().port;
  await runInPlayground(`import urllib.request\nprint(urllib.request.urlopen("http://127.0.0.1:${port}/").read().decode())\n` +
    "try:\n    urllib.request.urlopen('http://example.invalid/')\nexcept Exception as e:\n    print('refused', e)\n");
  await page.getByRole('log', { name: 'Output' }).filter({ hasText: 'hello from loopback' }).waitFor();
  await page.getByRole('status').filter({ hasText: /^ok/ }).waitFor();
  await page.goto(`${origin}/ui/#runs`);
  const first = page.getByRole('row').nth(1).getByRole('link');
  await first.click();
  const table = page.getByRole('table', { name: 'Egress decisions' });
  await table.waitFor();
  const text = await table.textContent();
  assert.match(text, /allowed/);
  assert.match(text, /denied/);
  assert.match(text, /example\.invalid/);
  await shot('run');
  await page.goto(`${origin}/ui/#runs`);
  await page.getByRole('row').nth(1).waitFor();
  await shot('runs');
});

test("the fleet page's numbers are /metrics'", async () => {
  await page.goto(`${origin}/ui/#fleet`);
  await login();
  const metrics = async () => {
    const t = await (await call('GET', '/metrics')).text();
    const sum = (name) => t.split('\n').filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
      .reduce((a, l) => a + Number(l.split(' ').at(-1)), 0);
    return { runs: String(sum('agentjail_runs_total')), sessions: String(sum('agentjail_sessions_open')),
      slots: String(sum('agentjail_run_slots')) };
  };
  // Nothing runs now: the counts hold still, and the page's next sample
  // shows them.
  const want = await metrics();
  await page.locator('#fleet-runs').filter({ hasText: new RegExp(`^${want.runs}$`) }).waitFor();
  assert.equal(await page.locator('#fleet-sessions').textContent(), want.sessions);
  assert.equal(await page.locator('#fleet-slots').textContent(), want.slots);
  assert.ok(Number(want.runs) > 0);
  await page.getByRole('table', { name: 'Refusals by reason' }).waitFor();
  // The last minutes, drawn once a second sample gives a rate.
  await page.getByRole('img', { name: /^runs per second, last [1-9]/ }).waitFor();
  await shot('fleet');
});
