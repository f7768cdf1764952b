// The fleet: runs per second, latency percentiles, refusals by reason,
// workers and their slots, drawn from serve's /metrics every 2 s (a key
// made with --metrics; others are told why not).
import { text } from './api.js';
import { el, errorLine } from './dom.js';
import { all, one, parse, quantile, rates, total } from './prom.js';

const fmt = (x, d = 2) => (x === null || x === undefined ? '–' : Number(x).toFixed(d));

function stat(label, value, id) {
  return el('div', { class: 'stat' }, el('b', { id, text: value }), el('span', { class: 'muted', text: label }));
}

function table(label, rows) {
  return el('table', { 'aria-label': label }, el('caption', { text: label }),
    el('tbody', {}, rows.map(([k, v]) => el('tr', {}, el('th', { scope: 'row', text: k }), el('td', { text: v })))));
}

export async function fleet(page) {
  const card = el('section', { class: 'card', 'aria-label': 'Fleet' }, el('h2', { text: 'Fleet' }));
  const body = el('div');
  page.append(card);
  card.append(el('p', { class: 'muted', text: 'From /metrics, every 2 s; rates over the last interval.' }), body);
  let prev = null, prevAt = 0, timer = null;
  async function tick() {
    try {
      const s = parse(await text('/metrics'));
      const now = performance.now();
      const r = prev ? rates(prev, s, (now - prevAt) / 1000) : [];
      prev = s;
      prevAt = now;
      const buckets = all(s, 'agentjail_run_seconds_bucket');
      const runs = all(s, 'agentjail_runs_total');
      body.replaceChildren(
        el('div', {},
          stat('runs finished', String(total(s, 'agentjail_runs_total')), 'fleet-runs'),
          stat('runs per second', prev && r.length ? fmt(total(r, 'agentjail_runs_total')) : '–', 'fleet-rate'),
          stat('running now', String(one(s, 'agentjail_runs_running')), 'fleet-running'),
          stat('waiting', String(one(s, 'agentjail_queue_depth')), 'fleet-waiting'),
          stat('run slots', String(one(s, 'agentjail_run_slots')), 'fleet-slots'),
          stat('workers alive', String(one(s, 'agentjail_workers_alive')), 'fleet-workers'),
          stat('sessions open', String(one(s, 'agentjail_sessions_open')), 'fleet-sessions')),
        table('Latency (s), since start', [['p50', fmt(quantile(0.5, buckets), 3)], ['p90', fmt(quantile(0.9, buckets), 3)],
          ['p99', fmt(quantile(0.99, buckets), 3)]]),
        table('Runs by tier and status', runs.map((x) => [`${x.labels.tier} ${x.labels.status}`, String(x.value)])),
        table('Refusals by reason', all(s, 'agentjail_refused_total').map((x) => [x.labels.reason, String(x.value)])),
        table('HTTP answers by code', all(s, 'agentjail_http_responses_total').map((x) => [x.labels.code, String(x.value)])),
        table('Egress decisions', all(s, 'agentjail_egress_connections_total').map((x) => [x.labels.verdict, String(x.value)])));
    } catch (e) {
      body.replaceChildren(errorLine(e.status === 403
        ? new Error('This key may not read /metrics: log in with a key made with agentjail keys add --metrics.')
        : e));
      return false;
    }
    return true;
  }
  // Polled only while the page is open, and not at all once refused.
  if (await tick()) timer = setInterval(tick, 2000);
  return () => clearInterval(timer);
}
