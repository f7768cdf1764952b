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

const SVG = 'http://www.w3.org/2000/svg';
const KEEP = 150; // samples: the last 5 minutes at one every 2 s

// A line of the last minutes' values, labelled with its latest and its
// peak (an SVG made through the DOM: no markup is parsed).
function spark(label, values) {
  const w = 300, h = 40, peak = Math.max(...values, 1e-9);
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', `0 0 ${w} ${h}`);
  svg.setAttribute('width', w);
  svg.setAttribute('height', h);
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', `${label}, last ${values.length} samples`);
  const line = document.createElementNS(SVG, 'polyline');
  line.setAttribute('fill', 'none');
  line.setAttribute('stroke', '#2457c5');
  line.setAttribute('stroke-width', '2');
  line.setAttribute('points', values.map((v, i) =>
    `${(i / Math.max(KEEP - 1, 1)) * w},${h - 2 - (v / peak) * (h - 4)}`).join(' '));
  svg.append(line);
  const last = values.length ? values[values.length - 1] : 0;
  return el('div', { class: 'stat' }, svg,
    el('span', { class: 'muted', text: `${label}: ${fmt(last)} now, peak ${fmt(Math.max(...values, 0))}` }));
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
  const history = { runs: [], refusals: [], errors: [] };
  const keep = (name, v) => { history[name].push(v); if (history[name].length > KEEP) history[name].shift(); };
  async function tick() {
    try {
      const s = parse(await text('/metrics'));
      const now = performance.now();
      const r = prev ? rates(prev, s, (now - prevAt) / 1000) : [];
      if (prev) {
        keep('runs', total(r, 'agentjail_runs_total'));
        keep('refusals', total(r, 'agentjail_refused_total'));
        keep('errors', all(r, 'agentjail_http_responses_total').filter((x) => x.labels.code >= '400')
          .reduce((a, x) => a + x.value, 0));
      }
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
        el('div', { 'aria-label': 'The last minutes' },
          spark('runs per second', history.runs), spark('refusals per second', history.refusals),
          spark('HTTP 4xx/5xx per second', history.errors)),
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
