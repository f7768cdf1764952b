// A program's gate, for "the client saw the output before the result" by
// order alone: the program prints a and b, then waits (30 s at most) for
// /mnt/gate/NAME, a file of a host directory shown read-only there, which
// the test makes once its client has seen both lines. Without it the last
// progress notification and the result can reach the SDK v1 client in one
// read, and that client drops the notification: it handles notifications a
// microtask later than responses (modelcontextprotocol/typescript-sdk#2580).
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export function makeGate(root) {
  const dir = mkdtempSync(join(root, 'build', 'mcp-gate-'));
  chmodSync(dir, 0o755); // the sandbox's uid reads it
  return {
    bind: ['--ro-bind', `${dir}:/mnt/gate`],
    program: (name) => 'import os, time\nprint("a", flush=True)\nprint("b", flush=True)\n' +
      `for _ in range(600):\n    if os.path.exists("/mnt/gate/${name}"):\n        break\n    time.sleep(0.05)\n`,
    open: (name) => writeFileSync(join(dir, name), ''),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
