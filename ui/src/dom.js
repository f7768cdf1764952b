// Building the page from data. Everything a sandbox printed or named is
// hostile: it only ever becomes text (textContent), never markup.
export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

export function when(t) {
  return t ? new Date(t * 1000).toLocaleString() : '';
}

// A PNG only, checked here: its signature and its IHDR chunk first. Any
// other bytes are not shown as an image.
export function pngImage(b64, alt) {
  let bytes;
  try {
    bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  } catch (_) {
    return null;
  }
  const sig = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
  if (bytes.length < 33 || sig.some((b, i) => bytes[i] !== b)) return null;
  if (String.fromCharCode(...bytes.slice(12, 16)) !== 'IHDR') return null;
  return el('img', { src: `data:image/png;base64,${b64}`, alt: alt || 'a chart the program made' });
}

export function errorLine(e) {
  return el('p', { role: 'alert', class: 'error', text: e.message || String(e) });
}
