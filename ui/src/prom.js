// Prometheus text (what serve's /metrics answers) read into samples, and
// the few figures the fleet page draws from them.
export function parse(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(\{(.*)\})?\s+(\S+)$/.exec(line);
    if (!m) continue;
    const labels = {};
    for (const [, k, v] of (m[3] || '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[k] = v;
    out.push({ name: m[1], labels, value: Number(m[4]) });
  }
  return out;
}

export const all = (s, name) => s.filter((x) => x.name === name);
export const one = (s, name) => (s.find((x) => x.name === name) || { value: 0 }).value;
export const total = (s, name) => all(s, name).reduce((a, x) => a + x.value, 0);

// The q-quantile of a histogram's cumulative buckets (by le), with the
// linear interpolation Prometheus's histogram_quantile uses; null when
// there is no observation.
export function quantile(q, buckets) {
  const b = buckets.map((x) => ({ le: x.labels.le === '+Inf' ? Infinity : Number(x.labels.le), n: x.value }))
    .sort((a, c) => a.le - c.le);
  if (!b.length) return null;
  const count = b[b.length - 1].n;
  if (!count) return null;
  const rank = q * count;
  let prevLe = 0, prevN = 0;
  for (const { le, n } of b) {
    if (n >= rank) {
      if (le === Infinity) return prevLe;
      return prevLe + (le - prevLe) * ((rank - prevN) / Math.max(n - prevN, 1e-9));
    }
    prevLe = le;
    prevN = n;
  }
  return prevLe;
}

// Each counter's change per second between two samples, by name and labels.
export function rates(before, now, seconds) {
  const key = (x) => x.name + JSON.stringify(x.labels);
  const was = new Map(before.map((x) => [key(x), x.value]));
  return now.map((x) => ({ ...x, value: Math.max(0, (x.value - (was.get(key(x)) ?? x.value)) / seconds) }));
}
