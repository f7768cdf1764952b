// What both MCP test files share: counting the processes of a uid range
// (one left after a test is a run left behind), and sleeping.
import { readdirSync, readFileSync } from 'node:fs';

export function sandboxProcesses(uidBase, slots = 64) {
  let n = 0;
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const uid = Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
      if (uid >= uidBase && uid < uidBase + slots) n++;
    } catch { /* gone meanwhile */ }
  }
  return n;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Polls pred until it holds (true) or ms pass (false): a state to reach,
// never a duration to assert; the default minute only catches a hang.
export async function waitFor(pred, ms = 60000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (pred()) return true;
    await sleep(50);
  }
  return pred();
}
