// Write code, run it (in a fresh sandbox, or a session that keeps its
// state and returns charts), watch it come back; the same call as snippets.
import { api, events } from './api.js';
import { el, errorLine } from './dom.js';
import { outputView } from './output.js';
import { snippets } from './snippets.js';

const SAMPLE = 'import time\nfor i in range(3):\n    print("line", i, flush=True)\n    time.sleep(0.2)\n';

function field(label, input) {
  const id = `pg-${label.toLowerCase().replace(/\W+/g, '-')}`;
  input.id = id;
  return el('div', {}, el('label', { for: id, text: label }), input);
}

export async function playground(page) {
  const lang = el('select', {}, ...['python', 'javascript', 'bash'].map((l) => el('option', { value: l, text: l })));
  const timeout = el('input', { type: 'number', min: '1', max: '3600', placeholder: 'server default' });
  const memory = el('input', { type: 'number', min: '16', placeholder: 'server default' });
  const hosts = el('input', { type: 'text', placeholder: 'pypi.org:443, api.example.com' , size: '32'});
  const keep = el('input', { type: 'checkbox', checked: true });
  const code = el('textarea', { spellcheck: 'false' });
  code.value = SAMPLE;
  const run = el('button', { type: 'submit', text: 'Run' });
  const stop = el('button', { type: 'button', class: 'secondary', text: 'Stop', disabled: true });
  const out = outputView();
  const snip = el('div', { class: 'snippets' });
  const note = el('div');
  let session = null, abort = null;

  function body() {
    const limits = {};
    if (timeout.value) limits.timeout_sec = Number(timeout.value);
    if (memory.value) limits.memory_mb = Number(memory.value);
    const b = { code: code.value, language: lang.value };
    if (Object.keys(limits).length) b.limits = limits;
    const allow = hosts.value.split(',').map((h) => h.trim()).filter(Boolean);
    if (allow.length) b.allow_hosts = allow;
    return b;
  }

  async function go(ev) {
    ev.preventDefault();
    note.replaceChildren();
    out.clear();
    const b = body();
    snip.replaceChildren(snippets(b, keep.checked));
    run.disabled = true;
    stop.disabled = false;
    abort = new AbortController();
    try {
      let path = '/v1/runs', send = b;
      if (keep.checked) {
        if (!session) {
          const terms = {};
          if (b.limits) terms.limits = b.limits;
          if (b.allow_hosts) terms.allow_hosts = b.allow_hosts;
          session = (await api('POST', '/v1/sessions', terms)).id;
        }
        path = `/v1/sessions/${session}/runs`;
        send = { code: b.code, language: b.language };
        out.running(`running in session ${session}…`);
      } else {
        out.running('running in a fresh sandbox…');
      }
      await events('POST', path, send, (name, d) => out.event(name, d), abort.signal);
    } catch (e) {
      if (e.name !== 'AbortError') note.replaceChildren(errorLine(e));
      if (e.status === 410 || e.status === 404) session = null;
    } finally {
      run.disabled = false;
      stop.disabled = true;
    }
  }
  stop.addEventListener('click', () => abort && abort.abort());
  keep.addEventListener('change', () => { session = null; });

  page.append(el('form', { class: 'card', onsubmit: go, 'aria-label': 'Playground' },
    el('h2', { text: 'Playground' }),
    el('div', { class: 'row' },
      field('Language', lang), field('Timeout (s)', timeout), field('Memory (MiB)', memory),
      field('Allow hosts', hosts),
      el('div', {}, el('label', {}, keep, ' Keep state in a session (charts come back)'))),
    el('label', { for: 'pg-code', text: 'Code' }),
    Object.assign(code, { id: 'pg-code' }),
    el('div', { class: 'row' }, run, stop),
    note, out.root),
    el('section', { class: 'card', 'aria-label': 'The same call' },
      el('h2', { text: 'The same call' }), snip));
  snip.append(snippets(body(), keep.checked));
  return () => {
    if (abort) abort.abort();
    // A session the playground opened ends with it.
    if (session) api('DELETE', `/v1/sessions/${session}`).catch(() => {});
  };
}
