// Server-Sent Events from serve: a run's (ids 1, 2, ...) or a background
// command's (ids "OUT-ERR", its place in each stream), followed across a
// dropped connection by reconnecting with Last-Event-ID, so that the events
// seen have no gap and no duplicate.
import { ServeError } from './errors.js';
import { Mapper, Transport } from './http.js';

export interface RawEvent {
  id: string | null;
  event: string;
  data: Record<string, unknown>;
}

export async function* parseEvents(r: Response): AsyncGenerator<RawEvent> {
  if (!r.body) return;
  const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  let id: string | null = null;
  let event = 'message';
  let data: string[] = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += value;
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).replace(/\r$/, '');
        buf = buf.slice(nl + 1);
        if (line === '') {
          if (data.length) yield { id, event, data: JSON.parse(data.join('\n')) };
          id = null;
          event = 'message';
          data = [];
          continue;
        }
        if (line.startsWith(':')) continue; // a keep-alive
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let v = colon < 0 ? '' : line.slice(colon + 1);
        if (v.startsWith(' ')) v = v.slice(1);
        if (field === 'id') id = v;
        else if (field === 'event') event = v;
        else if (field === 'data') data.push(v);
      }
    }
  } finally {
    reader.cancel().catch(() => { /* already closed */ });
  }
}

export interface FollowOptions {
  /** The first connection (a POST that starts the run); later ones GET
   *  eventsPath with Last-Event-ID. */
  first?: () => Promise<Response>;
  eventsPath: () => string;
  after: string;
  what?: Mapper;
  signal?: AbortSignal;
}

/** Events until `result` (inclusive), reconnecting after a drop up to the
 *  transport's retries in a row. */
export async function* follow(t: Transport, o: FollowOptions): AsyncGenerator<RawEvent> {
  let after = o.after;
  let failures = 0;
  let first = o.first;
  for (;;) {
    let error: unknown = 'the stream ended before its result';
    try {
      const r = first ? await first() : await t.request('GET', o.eventsPath(), {
        accept: 'text/event-stream', headers: { 'Last-Event-ID': after }, what: o.what,
        signal: o.signal,
      });
      first = undefined;
      for await (const ev of parseEvents(r)) {
        failures = 0;
        if (ev.id !== null) after = ev.id;
        yield ev;
        if (ev.event === 'result') return;
      }
    } catch (e) {
      if (e instanceof ServeError || (e as Error)?.name === 'AbortError' || first) throw e;
      error = e;
    }
    if (++failures > t.retries)
      throw new ServeError(0, 'connection', `the event stream broke off ${failures} times in a `
        + `row (last: ${error instanceof Error ? error.message : String(error)})`);
    await new Promise((r) => setTimeout(r, Math.min(50 * 2 ** failures, 2000)));
  }
}
