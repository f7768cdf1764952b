// The key's recorded runs, newest first; one run's output (live while it
// runs, over its events) and its egress decision log.
import { api, events } from './api.js';
import { el, errorLine, when } from './dom.js';
import { outputView } from './output.js';

function egressTable(log) {
  if (!log || !log.connections) return el('p', { class: 'muted', text: 'No egress rules applied: no decision log.' });
  const rows = log.connections.map((c) => el('tr', {},
    el('td', { text: c.verdict }), el('td', { text: `${c.host}:${c.port}` }), el('td', { text: c.via }),
    el('td', { text: c.reason }), el('td', { text: String(c.bytes_out) }), el('td', { text: String(c.bytes_in) })));
  return el('table', { 'aria-label': 'Egress decisions' },
    el('thead', {}, el('tr', {}, ...['verdict', 'destination', 'via', 'reason', 'bytes out', 'bytes in'].map((h) => el('th', { text: h })))),
    el('tbody', {}, rows),
    el('caption', { class: 'muted', text: `${log.allowed} allowed, ${log.denied} denied, ${log.failed} failed` }));
}

async function one(page, id) {
  const card = el('section', { class: 'card', 'aria-label': `Run ${id}` }, el('h2', { text: `Run ${id}` }));
  page.append(el('p', {}, el('a', { href: '#runs', text: '← all runs' })), card);
  const abort = new AbortController();
  try {
    const rec = await api('GET', `/v1/runs/${id}`);
    const out = outputView();
    const meta = el('p', { class: 'muted', text: `${rec.state} · created ${when(rec.created)}` +
      (rec.ended ? ` · ended ${when(rec.ended)}` : '') + (rec.session_id ? ` · session ${rec.session_id}` : '') });
    const egress = el('div');
    card.append(meta, out.root, el('h3', { text: 'Egress' }), egress);
    if (rec.state === 'done') {
      out.whole(rec.result);
      egress.append(egressTable(rec.result.egress));
    } else {
      out.running(`${rec.state}…`);
      let last = null;
      await events('GET', `/v1/runs/${id}/events`, undefined, (name, d) => {
        out.event(name, d);
        if (name === 'result') last = d;
      }, abort.signal);
      if (last) egress.append(egressTable(last.egress));
    }
  } catch (e) {
    if (e.name !== 'AbortError') card.append(errorLine(e));
  }
  return () => abort.abort();
}

export async function runs(page, [id]) {
  if (id) return one(page, id);
  const card = el('section', { class: 'card', 'aria-label': 'Runs' }, el('h2', { text: 'Runs' }));
  page.append(card);
  try {
    const { runs: list } = await api('GET', '/v1/runs?limit=100');
    if (!list.length) card.append(el('p', { class: 'muted', text: 'No recorded runs yet (a streamed or background run is recorded).' }));
    else card.append(el('table', {},
      el('thead', {}, el('tr', {}, ...['run', 'state', 'created', 'ended', 'session'].map((h) => el('th', { text: h })))),
      el('tbody', {}, list.map((r) => el('tr', {},
        el('td', {}, el('a', { href: `#runs/${encodeURIComponent(r.id)}`, text: r.id })),
        el('td', { text: r.state }), el('td', { text: when(r.created) }), el('td', { text: when(r.ended) }),
        el('td', { text: r.session_id || '' }))))));
  } catch (e) {
    card.append(errorLine(e));
  }
}
