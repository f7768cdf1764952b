// The console's one way to serve: every request carries the key from this
// tab's session storage as the Authorization header (no cookie: nothing a
// page of another site could make the browser send).
const KEY = 'agentjail.key';

export function key() { return sessionStorage.getItem(KEY); }
export function setKey(k) { k ? sessionStorage.setItem(KEY, k) : sessionStorage.removeItem(KEY); }

export class ApiError extends Error {
  constructor(status, code, message) {
    super(`${status} ${code}: ${message}`);
    this.status = status;
    this.code = code;
  }
}

function headers(extra) {
  return { Authorization: `Bearer ${key()}`, ...(extra || {}) };
}

async function failure(r) {
  let code = 'error', message = r.statusText;
  try {
    const e = (await r.json()).error || {};
    code = e.code || code;
    message = e.message || message;
  } catch (_) { /* not JSON */ }
  return new ApiError(r.status, code, message);
}

// A JSON call: the answer's object, or an ApiError naming serve's reason.
export async function api(method, path, body) {
  const init = { method, headers: headers() };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers['Content-Type'] = 'application/json';
  }
  const r = await fetch(path, init);
  if (!r.ok) throw await failure(r);
  return r.status === 204 ? null : r.json();
}

// Raw bytes up or down (a session's files).
export async function raw(method, path, body) {
  const init = { method, headers: headers(body ? { 'Content-Type': 'application/octet-stream' } : {}) };
  if (body) init.body = body;
  const r = await fetch(path, init);
  if (!r.ok) throw await failure(r);
  return r;
}

export async function text(path) {
  const r = await fetch(path, { headers: headers() });
  if (!r.ok) throw await failure(r);
  return r.text();
}

// Server-Sent Events read through fetch (EventSource cannot send a
// header): onEvent(name, data, id) for each, until the stream ends or
// signal aborts. Returns the last event's id.
export async function events(method, path, body, onEvent, signal) {
  const init = { method, headers: headers({ Accept: 'text/event-stream' }), signal };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers['Content-Type'] = 'application/json';
  }
  const r = await fetch(path, init);
  if (!r.ok) throw await failure(r);
  const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '', last = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return last;
    buf += value;
    let cut;
    while ((cut = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      let name = 'message', data = '', id = null;
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) name = line.slice(7);
        else if (line.startsWith('data: ')) data += line.slice(6);
        else if (line.startsWith('id: ')) id = line.slice(4);
      }
      if (!data) continue;
      last = id ?? last;
      onEvent(name, JSON.parse(data), id);
    }
  }
}

// An output event's bytes: {"text"} or {"base64"}.
export function chunkBytes(d) {
  if (d.text !== undefined) return new TextEncoder().encode(d.text);
  return Uint8Array.from(atob(d.base64), (c) => c.charCodeAt(0));
}
