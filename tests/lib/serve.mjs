// agentjail serve for the node test files: started on a free loopback port
// with a uid range and lock directory of the caller's own, its printed URL
// and key read from its stdout, its stderr kept for a failure's report.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';

export async function startServe(cli, { base, name, args = [], env = process.env }) {
  const child = spawn(cli, ['serve', '--listen', '127.0.0.1:0', '--uid-base', String(base),
    '--state-dir', `/run/agentjail-${name}-${base}`, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
  const errs = [];
  child.stderr.on('data', (d) => errs.push(d));
  let out = '';
  const seen = {};
  for await (const chunk of child.stdout) {
    out += chunk;
    for (const line of out.split('\n')) {
      const i = line.indexOf('=');
      if (i > 0) seen[line.slice(0, i)] = line.slice(i + 1);
    }
    if (seen.AGENTJAIL_URL) break;
  }
  assert.ok(seen.AGENTJAIL_URL, `serve did not start: ${out} ${Buffer.concat(errs)}`);
  return { child, url: seen.AGENTJAIL_URL, key: seen.AGENTJAIL_KEY,
    stderr: () => Buffer.concat(errs).toString() };
}
