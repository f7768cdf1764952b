// The console's cost, printed as medians (docs/measurements.md):
//   - what a first visit loads (bytes, by file) and how soon it paints and
//     is interactive, in headless chromium over loopback;
//   - a run's cost through serve with the console built in and without
//     (SERVE_BEFORE: the agentjail of a build without it), side by side, and
//     with the console's fleet page open and polling.
// node tests/ui/bench_console.mjs [N]   (serve: build/agentjail-serve)
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

import { startServe } from '../lib/serve.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const N = Number(process.argv[2] ?? 15);
const CLI = process.env.AJ_CLI ?? join(root, 'build', 'agentjail');
const BEFORE = process.env.SERVE_BEFORE; // an agentjail (and its serve) without the console, or none
const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };

async function serve(bin, keys, base) {
  return startServe(bin || CLI, { base, name: 'ui-bench', args: ['--keys', keys] });
}

async function runMs(url, key) {
  const t = performance.now();
  const r = await fetch(`${url}/v1/runs`, { method: 'POST', body: '{"code": "print(1)"}',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' } });
  await r.text();
  if (!r.ok) throw new Error(`run: ${r.status}`);
  return performance.now() - t;
}

const dir = mkdtempSync(join(tmpdir(), 'aj-ui-bench-'));
const keys = join(dir, 'keys.json');
const key = execFileSync(CLI, ['keys', 'add', '--file', keys, 'bench', '--metrics'],
  { stdio: ['ignore', 'pipe', 'ignore'] }).toString().trim();
const now = await serve(null, keys, 2188000000);
const browser = await chromium.launch({ executablePath: process.env.AJ_CHROMIUM ?? '/usr/bin/chromium',
  args: ['--no-sandbox'] });

// First visits, each in a fresh context (nothing cached).
const paint = [], interactive = [], ready = [];
let files = null;
for (let i = 0; i < N; i++) {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  await page.goto(`${now.url}/ui/`);
  await page.getByLabel('API key').waitFor();
  await page.waitForFunction(() => performance.getEntriesByName('agentjail-ready').length);
  const t = await page.evaluate(() => {
    const nav = performance.getEntriesByType('navigation')[0];
    const fcp = performance.getEntriesByName('first-contentful-paint')[0];
    return { fcp: fcp ? fcp.startTime : null, interactive: nav.domInteractive,
      ready: performance.getEntriesByName('agentjail-ready')[0].startTime,
      files: [nav, ...performance.getEntriesByType('resource')].map((e) =>
        [new URL(e.name).pathname, e.transferSize || e.encodedBodySize]) };
  });
  paint.push(t.fcp);
  interactive.push(t.interactive);
  ready.push(t.ready);
  files = t.files;
  await ctx.close();
}
const bytes = files.reduce((a, [, n]) => a + n, 0);
console.log(`console first visit (n=${N}, headless chromium, loopback): first contentful paint ` +
  `p50 ${median(paint).toFixed(1)} ms, DOM interactive p50 ${median(interactive).toFixed(1)} ms, ` +
  `interactive (the app's first page drawn) p50 ${median(ready).toFixed(1)} ms; ${files.length} files, ${bytes} bytes ` +
  `(${(bytes / 1024).toFixed(1)} KiB)`);
for (const [p, n] of files) console.log(`  ${p} ${n}`);

// A run's cost: print(1) through serve, alternating between the servers.
const servers = [['with the console', now]];
if (BEFORE) servers.push(['without the console', await serve(BEFORE, keys, 2188500000)]);
for (const [, s] of servers) for (let i = 0; i < 3; i++) await runMs(s.url, key); // warm up
const times = servers.map(() => []);
for (let i = 0; i < N * 2; i++)
  for (const [j, [, s]] of servers.entries()) times[j].push(await runMs(s.url, key));
const base = median(times[0]);
for (const [j, [name]] of servers.entries())
  console.log(`print(1) through serve ${name}: p50 ${median(times[j]).toFixed(1)} ms ` +
    `(${(median(times[j]) / base).toFixed(2)}x of with)`);
// With the console open on the fleet page (polling /metrics every 2 s).
const ctx = await browser.newContext();
const page = await ctx.newPage();
await page.goto(`${now.url}/ui/`);
await page.evaluate((k) => sessionStorage.setItem('agentjail.key', k), key);
await page.goto(`${now.url}/ui/#fleet`);
await page.locator('#fleet-runs').waitFor();
const open = [];
for (let i = 0; i < N * 2; i++) open.push(await runMs(now.url, key));
console.log(`print(1) through serve with the fleet page open: p50 ${median(open).toFixed(1)} ms ` +
  `(${(median(open) / base).toFixed(2)}x of closed)`);
await browser.close();
for (const [, s] of servers) s.child.kill('SIGTERM');
