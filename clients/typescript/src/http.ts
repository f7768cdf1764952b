// HTTP to an agentjail serve over fetch (Node 20+, Deno, Bun, browsers,
// workers): the key as a bearer token, serve's errors as typed exceptions,
// and a 503 that ran nothing retried with backoff up to a bound. A request
// that serve may have acted on is never sent again: agent code is not
// idempotent.
import {
  ErrorClass, RateLimited, RunLost, ServeError, Unauthorized, Unavailable,
} from './errors.js';

/** A refusal mapped to a class of the caller's (a session's, a file's);
 *  undefined: by its status. */
export type Mapper = (status: number, code: string, message: string) => ErrorClass | undefined;

// The 503s that say nothing ran and a later try may be admitted.
const RETRY_503 = new Set(['queue_timeout', 'no_worker', 'sandbox_unavailable',
  'session_unavailable', 'session_limit', 'body_budget', 'runs_unavailable',
  'queue_unavailable']);

export interface TransportOptions {
  url: string;
  key?: string;
  /** A fetch of the caller's: a proxy, a CA (undici's Agent), a test's. */
  fetch?: typeof fetch;
  /** Tries after a 503 that ran nothing, and reconnections of a broken
   *  event stream (5). */
  retries?: number;
  /** The longest wait between two tries, in ms (2000). */
  backoffMaxMs?: number;
}

export interface RequestOptions {
  body?: unknown;
  raw?: Uint8Array | string;
  accept?: string;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  what?: Mapper;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function connectionMessage(e: unknown): string {
  const cause = (e as { cause?: { code?: string; message?: string } }).cause;
  const code = cause?.code ?? '';
  if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS/.test(code))
    return `the server's certificate is not trusted (${code}); give its CA (Node: `
      + 'NODE_EXTRA_CA_CERTS=ca.pem, or a fetch of your own)';
  return cause?.message ?? (e instanceof Error ? e.message : String(e));
}

export class Transport {
  readonly url: string;
  readonly key: string | undefined;
  readonly retries: number;
  private readonly fetch: typeof fetch;
  private readonly backoffMaxMs: number;

  constructor(o: TransportOptions) {
    let u: URL;
    try {
      u = new URL(o.url);
    } catch {
      throw new TypeError(`url: ${JSON.stringify(o.url)} is not an http:// or https:// address`);
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:')
      throw new TypeError(`url: ${JSON.stringify(o.url)} is not an http:// or https:// address`);
    if ((u.pathname !== '/' && u.pathname !== '') || u.search)
      throw new TypeError(`url: ${JSON.stringify(o.url)}: give the server's base, without a path`);
    this.url = o.url.replace(/\/+$/, '');
    this.key = o.key;
    this.retries = o.retries ?? 5;
    this.backoffMaxMs = o.backoffMaxMs ?? 2000;
    this.fetch = o.fetch ?? globalThis.fetch.bind(globalThis);
  }

  headers(accept = 'application/json', extra?: Record<string, string>): Record<string, string> {
    const h: Record<string, string> = { Accept: accept, ...extra };
    if (this.key) h.Authorization = `Bearer ${this.key}`;
    return h;
  }

  /** The response of a request whose status is not an error; an error
   *  status thrown as the mapped class. The caller reads the body. */
  async request(method: string, path: string, o: RequestOptions = {}): Promise<Response> {
    const headers = this.headers(o.accept, o.headers);
    let body: BodyInit | undefined;
    if (o.body !== undefined) {
      body = JSON.stringify(o.body);
      headers['Content-Type'] = 'application/json';
    } else if (o.raw !== undefined) {
      body = o.raw as BodyInit;
      headers['Content-Type'] = 'application/octet-stream';
    }
    for (let tries = 0; ; tries++) {
      let r: Response;
      try {
        r = await this.fetch(this.url + path, { method, headers, body, signal: o.signal });
      } catch (e) {
        if ((e as Error)?.name === 'AbortError') throw e;
        throw new ServeError(0, 'connection', `${method} ${path}: ${connectionMessage(e)}`);
      }
      if (r.status < 400) return r;
      const text = await r.text();
      let parsed: Record<string, unknown> = {};
      try { parsed = JSON.parse(text); } catch { /* not JSON: the text is the message */ }
      const err = (parsed.error ?? {}) as { code?: string; message?: string };
      const code = err.code ?? 'error';
      const message = err.message ?? text.slice(0, 200);
      const after = r.headers.get('Retry-After');
      const retryAfter = after !== null && !Number.isNaN(Number(after)) ? Number(after)
        : undefined;
      if (r.status === 503 && tries < this.retries && RETRY_503.has(code)) {
        const pause = retryAfter !== undefined ? retryAfter * 1000 : 50 * 2 ** (tries + 1);
        await sleep(Math.min(pause, this.backoffMaxMs));
        continue;
      }
      throw errorFor(r.status, code, message, parsed, retryAfter, o.what);
    }
  }

  async json<T = Record<string, unknown>>(method: string, path: string, body?: unknown,
    what?: Mapper, signal?: AbortSignal): Promise<T> {
    const r = await this.request(method, path, { body, what, signal });
    const text = await r.text();
    if (!text) return null as T;
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new ServeError(r.status, 'bad_answer', `${method} ${path}: the answer is not JSON`);
    }
  }
}

export function errorFor(status: number, code: string, message: string,
  body: Record<string, unknown>, retryAfter?: number, what?: Mapper): ServeError {
  const mapped = what?.(status, code, message);
  if (mapped) return new mapped(status, code, message, body, retryAfter);
  if (body.lost === true) return new RunLost(status, code, message, body, retryAfter);
  if (status === 401 || status === 403)
    return new Unauthorized(status, code, message, body, retryAfter);
  if (status === 429) return new RateLimited(status, code, message, body, retryAfter);
  if (status === 503) return new Unavailable(status, code, message, body, retryAfter);
  return new ServeError(status, code, message, body, retryAfter);
}
