// A run's events shown as they come: stdout and stderr as text, images
// as checked PNGs, the result's status last.
import { chunkBytes } from './api.js';
import { el, pngImage } from './dom.js';

export function outputView() {
  const out = el('pre', { class: 'out', 'aria-label': 'Output', role: 'log', 'aria-live': 'polite' });
  const images = el('div', { class: 'images', 'aria-label': 'Images' });
  const status = el('p', { class: 'muted', role: 'status' });
  const decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() };
  const root = el('div', {}, status, out, images);
  function add(kind, bytes) {
    const t = decoders[kind].decode(bytes, { stream: true });
    if (!t) return;
    out.append(kind === 'stderr' ? el('span', { class: 'err', text: t }) : document.createTextNode(t));
    out.scrollTop = out.scrollHeight;
  }
  function image(name, b64) {
    const img = pngImage(b64, `chart ${name}`);
    images.append(img || el('p', { class: 'error', text: `${name}: not a PNG, not shown` }));
  }
  return {
    root,
    clear() { out.replaceChildren(); images.replaceChildren(); status.textContent = ''; },
    running(what) { status.textContent = what; },
    event(name, d) {
      if (name === 'stdout' || name === 'stderr') add(name, chunkBytes(d));
      else if (name === 'image' && d.mime === 'image/png') image(d.name, d.data);
      else if (name === 'result') this.result(d);
    },
    // A result without events (a plain answer, a finished run's record).
    whole(r) {
      if (r.stdout) add('stdout', new TextEncoder().encode(r.stdout));
      if (r.stderr) add('stderr', new TextEncoder().encode(r.stderr));
      for (const [i, b64] of (r.images || []).entries()) image(String(i), b64);
      this.result(r);
    },
    result(r) {
      if (r.error) { status.textContent = `refused: ${r.error.code}: ${r.error.message}`; return; }
      const how = r.signal ? `signal ${r.signal}` : `exit ${r.exit_code}`;
      status.textContent = `${r.status} · ${how} · ${Math.round(r.wall_ms ?? 0)} ms` +
        (r.message ? ` · ${r.message}` : '');
      status.className = r.status === 'ok' ? 'ok' : 'error';
    },
  };
}
