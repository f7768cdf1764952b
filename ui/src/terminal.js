// A session's terminal: a shell on a pseudo-terminal of the session's
// (POST .../processes with "pty"), its screen from the process's events,
// keys to its stdin, the window's size to .../resize. xterm.js is loaded
// only here: the other pages do not pay for it.
import { api, chunkBytes, events } from './api.js';
import { el, errorLine } from './dom.js';

function b64(s) {
  const bytes = new TextEncoder().encode(s);
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}

function loadCss(href) {
  if (document.querySelector(`link[href="${href}"]`)) return;
  document.head.append(el('link', { rel: 'stylesheet', href }));
}

export async function terminal(page, [given]) {
  const card = el('section', { class: 'card', 'aria-label': 'Terminal' }, el('h2', { text: 'Terminal' }));
  const note = el('div');
  const screen = el('div', { id: 'term' });
  page.append(card);
  card.append(note);
  const abort = new AbortController();
  let term = null, onResize = null;
  try {
    let s = given;
    if (!s) {
      s = (await api('POST', '/v1/sessions', {})).id;
      card.append(el('p', { class: 'muted' }, 'A session opened for this terminal: ',
        el('a', { href: `#sessions/${s}`, text: s })));
    }
    loadCss('/ui/vendor/xterm.css');
    const [{ Terminal }, { FitAddon }] = await Promise.all([
      import('/ui/vendor/xterm.mjs'), import('/ui/vendor/addon-fit.mjs')]);
    card.append(screen);
    term = new Terminal({ convertEol: false, cursorBlink: true, screenReaderMode: true });
    const fit = new FitAddon();
    term.loadAddon(fit);
    term.open(screen);
    fit.fit();
    const base = `/v1/sessions/${s}/processes`;
    const { pid } = await api('POST', base, { pty: { cols: term.cols, rows: term.rows } });
    card.dataset.pid = pid;
    const decoder = new TextDecoder();
    // Keys in order: each batch waits for the one before it.
    let sending = Promise.resolve();
    term.onData((d) => {
      sending = sending.then(() => api('POST', `${base}/${pid}/stdin`, { data: b64(d) }))
        .catch((e) => note.replaceChildren(errorLine(e)));
    });
    term.onResize(({ cols, rows }) => {
      api('POST', `${base}/${pid}/resize`, { cols, rows }).catch((e) => note.replaceChildren(errorLine(e)));
    });
    onResize = () => fit.fit();
    window.addEventListener('resize', onResize);
    term.focus();
    events('GET', `${base}/${pid}/events`, undefined, (name, d) => {
      if (name === 'stdout' || name === 'stderr') term.write(decoder.decode(chunkBytes(d), { stream: true }));
      else if (name === 'result') term.write(`\r\n[the shell ended: ${d.status}]\r\n`);
    }, abort.signal).catch((e) => { if (e.name !== 'AbortError') note.replaceChildren(errorLine(e)); });
  } catch (e) {
    note.replaceChildren(errorLine(e));
  }
  return () => {
    abort.abort();
    if (onResize) window.removeEventListener('resize', onResize);
    if (term) term.dispose();
  };
}
