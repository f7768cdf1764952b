// The key's sessions: open one, and per session its files (browse,
// upload, download), a cell to run, its calls, pause, resume and close.
// An admin key's list is every key's, and it may close another key's.
import { api, events, raw } from './api.js';
import { el, errorLine, when } from './dom.js';
import { outputView } from './output.js';

const enc = (p) => p.split('/').map(encodeURIComponent).join('/');

async function files(s, box, dir) {
  box.replaceChildren(el('h3', { text: `Files in ${dir || 'the workspace'}` }));
  try {
    const q = dir ? `?dir=${encodeURIComponent(dir)}` : '';
    const { entries } = await api('GET', `/v1/sessions/${s}/files${q}`);
    const rows = entries.map((f) => {
      const path = dir ? `${dir}/${f.name}` : f.name;
      const act = f.type === 'directory'
        ? el('button', { type: 'button', class: 'secondary', text: 'Open', 'aria-label': `Open ${f.name}`, onclick: () => files(s, box, path) })
        : el('button', { type: 'button', class: 'secondary', text: 'Download', 'aria-label': `Download ${f.name}`, onclick: () => download(s, path, box) });
      return el('tr', {}, el('td', { text: f.name }), el('td', { text: f.type }), el('td', { text: String(f.size ?? '') }), el('td', {}, act));
    });
    box.append(el('table', { 'aria-label': 'Files' }, el('tbody', {}, rows)));
  } catch (e) {
    box.append(errorLine(e));
  }
}

async function download(s, path, box) {
  try {
    const blob = await (await raw('GET', `/v1/sessions/${s}/files/${enc(path)}`)).blob();
    // As bytes to save, never opened here: application/octet-stream.
    const url = URL.createObjectURL(new Blob([blob], { type: 'application/octet-stream' }));
    const a = el('a', { href: url, download: path.split('/').pop() });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (e) {
    box.append(errorLine(e));
  }
}

async function one(page, s) {
  const note = el('div');
  const fileBox = el('div');
  const upload = el('input', { type: 'file', id: 'upload', 'aria-label': 'Upload a file' });
  const code = el('textarea', { id: 'cell', spellcheck: 'false' });
  const out = outputView();
  const calls = el('div');
  const act = (label, fn) => el('button', { type: 'button', class: 'secondary', text: label, onclick: async () => {
    note.replaceChildren();
    try { await fn(); } catch (e) { note.append(errorLine(e)); }
  } });
  upload.addEventListener('change', async () => {
    for (const f of upload.files) {
      try {
        await raw('PUT', `/v1/sessions/${s}/files/${enc(f.name)}`, f);
      } catch (e) { note.append(errorLine(e)); }
    }
    upload.value = '';
    files(s, fileBox, '');
  });
  const run = el('button', { type: 'submit', text: 'Run' });
  async function go(ev) {
    ev.preventDefault();
    out.clear();
    run.disabled = true;
    try {
      await events('POST', `/v1/sessions/${s}/runs`, { code: code.value }, (n, d) => out.event(n, d));
    } catch (e) { note.append(errorLine(e)); }
    run.disabled = false;
    files(s, fileBox, '');
    showCalls();
  }
  async function showCalls() {
    try {
      const { runs } = await api('GET', '/v1/runs?limit=100');
      const mine = runs.filter((r) => r.session_id === s);
      calls.replaceChildren(el('h3', { text: 'Calls' }), mine.length
        ? el('ul', {}, mine.map((r) => el('li', {}, el('a', { href: `#runs/${r.id}`, text: r.id }), ` ${r.state} · ${when(r.created)}`)))
        : el('p', { class: 'muted', text: 'No recorded calls yet.' }));
    } catch (e) { calls.replaceChildren(errorLine(e)); }
  }
  page.append(el('p', {}, el('a', { href: '#sessions', text: '← all sessions' })),
    el('section', { class: 'card', 'aria-label': `Session ${s}` },
      el('h2', { text: `Session ${s}` }),
      el('div', { class: 'row' },
        act('Pause', () => api('POST', `/v1/sessions/${s}/pause`)),
        act('Resume', () => api('POST', `/v1/sessions/${s}/resume`)),
        act('Close session', async () => { await api('DELETE', `/v1/sessions/${s}`); location.hash = '#sessions'; }),
        el('a', { href: `#terminal/${s}`, text: 'Terminal' })),
      note,
      el('label', { for: 'upload', text: 'Upload a file' }), upload, fileBox,
      el('form', { onsubmit: go, 'aria-label': 'Run in this session' },
        el('label', { for: 'cell', text: 'Code' }), code, run),
      out.root, calls));
  files(s, fileBox, '');
  showCalls();
}

// The open sessions: every key's when the key is an admin's (?all=true,
// each row naming its key), else (403) the key's own. {list, all, mine}:
// mine, the ids of the key's own, tells an admin its rows from others'.
async function openSessions() {
  try {
    const [{ sessions: list }, { sessions: own }] = await Promise.all([
      api('GET', '/v1/sessions?all=true'), api('GET', '/v1/sessions')]);
    return { list, all: true, mine: new Set(own.map((x) => x.id)) };
  } catch (e) {
    if (e.status !== 403) throw e;
  }
  const { sessions: list } = await api('GET', '/v1/sessions');
  return { list, all: false, mine: new Set(list.map((x) => x.id)) };
}

// One row of the list. Another key's session (an admin's list) is not a
// link: its page would answer 404, as the API does; it can only be closed.
function sessionRow(x, all, mine, card) {
  const own = mine.has(x.id);
  const tr = el('tr', {},
    el('td', {}, own ? el('a', { href: `#sessions/${encodeURIComponent(x.id)}`, text: x.id }) : el('code', { text: x.id })),
    all ? el('td', { text: x.key || '' }) : null,
    el('td', { text: x.tier || '' }), el('td', { text: x.paused ? 'paused' : 'open' }),
    el('td', { text: when(x.created) }), el('td', {}, el('code', { text: JSON.stringify(x.limits || {}) })),
    el('td', { text: [...(x.allow_hosts || []), ...(x.allow_cidrs || [])].join(', ') || 'none' }));
  if (all) {
    const close = own ? null : el('button', { type: 'button', class: 'secondary', text: 'Close',
      'aria-label': `Close session ${x.id} of key ${x.key}`, onclick: async () => {
        close.disabled = true;
        try {
          await api('DELETE', `/v1/sessions/${encodeURIComponent(x.id)}`);
          tr.remove();
        } catch (e) {
          close.disabled = false;
          card.append(errorLine(e));
        }
      } });
    tr.append(el('td', {}, close));
  }
  return tr;
}

export async function sessions(page, [id]) {
  if (id) return one(page, id);
  const card = el('section', { class: 'card', 'aria-label': 'Sessions' }, el('h2', { text: 'Sessions' }));
  const open = el('button', { type: 'button', text: 'Open a session' });
  page.append(card);
  card.append(open);
  open.addEventListener('click', async () => {
    try {
      const s = await api('POST', '/v1/sessions', {});
      location.hash = `#sessions/${s.id}`;
    } catch (e) { card.append(errorLine(e)); }
  });
  try {
    const { list, all, mine } = await openSessions();
    const heads = ['session', ...(all ? ['key'] : []), 'tier', 'state', 'created', 'limits', 'egress', ...(all ? [''] : [])];
    if (!list.length) card.append(el('p', { class: 'muted', text: 'No open sessions.' }));
    else card.append(el('table', { 'aria-label': all ? "Every key's open sessions" : 'Open sessions' },
      el('thead', {}, el('tr', {}, ...heads.map((h) => el('th', { text: h })))),
      el('tbody', {}, list.map((x) => sessionRow(x, all, mine, card)))));
  } catch (e) {
    card.append(errorLine(e));
  }
}
