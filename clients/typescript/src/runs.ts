// A run's event stream and a recorded run's handle.
import { ServeError } from './errors.js';
import type { Execution } from './result.js';
import { Callbacks, deliver, EventReader, execution, RunEvent } from './events.js';
import { Mapper, Transport } from './http.js';
import { follow } from './sse.js';

/** The events of a run as they happen, the `result` event last:
 *  `for await (const ev of sb.stream(code))`. Leaving the loop early (or
 *  close()) cancels the run. `runId` is known once the answer has begun. */
export class RunStream implements AsyncIterable<RunEvent> {
  runId: string | null = null;
  private finished = false; // its result came
  private cancelled = false;
  private started = false;

  constructor(private readonly t: Transport, private readonly path: string,
              private readonly body: Record<string, unknown>, private readonly what?: Mapper,
              private readonly signal?: AbortSignal) {}

  async *[Symbol.asyncIterator](): AsyncGenerator<RunEvent> {
    if (this.started) throw new TypeError('a RunStream is iterated once');
    this.started = true;
    const reader = new EventReader();
    const onAbort = () => { void this.close(); };
    this.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      for await (const raw of follow(this.t, {
        first: async () => {
          const r = await this.t.request('POST', this.path, { body: this.body,
            accept: 'text/event-stream', what: this.what, signal: this.signal });
          this.runId = r.headers.get('X-Run-Id');
          if (!this.runId) {
            await r.body?.cancel();
            throw new ServeError(r.status, 'not_a_stream',
              `POST ${this.path} did not answer an event stream with its id`);
          }
          return r;
        },
        eventsPath: () => `/v1/runs/${this.runId}/events`,
        after: '0', what: this.what, signal: this.signal,
      })) {
        const ev = reader.read(raw);
        if (ev?.type === 'result') this.finished = true;
        if (ev) yield ev;
        if (this.finished) return;
        this.signal?.throwIfAborted();
      }
    } finally {
      this.signal?.removeEventListener('abort', onAbort);
      if (!this.finished) await this.close();
    }
  }

  /** Cancels the run if it is still going (DELETE /v1/runs/ID). */
  async close(): Promise<void> {
    if (this.finished || this.cancelled || !this.runId) return;
    this.cancelled = true;
    try {
      await this.t.request('DELETE', `/v1/runs/${this.runId}`);
    } catch (e) {
      if (!(e instanceof ServeError)) throw e; // ended or gone: nothing to stop
    }
  }

  /** Drains the stream into callbacks; the Execution. */
  async execution(c: Callbacks = {}): Promise<Execution> {
    for await (const ev of this) {
      if (ev.type === 'result') return ev.execution;
      deliver(ev, c);
    }
    throw new ServeError(0, 'no_result', 'the event stream ended without a result');
  }
}

export interface RunInfo {
  id: string;
  state: 'queued' | 'running' | 'done';
  created: number;
  ended?: number;
  background: boolean;
  session?: boolean;
  session_id?: string;
  result?: Record<string, unknown>;
}

/** A run recorded on serve, by id: reachable from any process holding the
 *  key (another key's id is "no such run"). */
export class RunHandle {
  constructor(private readonly t: Transport, readonly id: string) {}

  info(): Promise<RunInfo> {
    return this.t.json<RunInfo>('GET', `/v1/runs/${this.id}`);
  }

  async state(): Promise<RunInfo['state']> {
    return (await this.info()).state;
  }

  /** The Execution once the run has ended; polls its state (0.02 s
   *  doubling to 1 s). timeoutMs: a TimeoutError (an Error named so)
   *  after that long. */
  async wait(timeoutMs?: number): Promise<Execution> {
    const end = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs;
    let pause = 20;
    for (;;) {
      const info = await this.info();
      if (info.state === 'done') return execution(info.result ?? {});
      if (Date.now() >= end) {
        const e = new Error(`agentjail: run ${this.id} is ${info.state} after ${timeoutMs} ms`);
        e.name = 'TimeoutError';
        throw e;
      }
      await new Promise((r) => setTimeout(r, Math.min(pause, Math.max(end - Date.now(), 0))));
      pause = Math.min(pause * 2, 1000);
    }
  }

  /** Its events after fromId (0: all), waiting for new ones, the result
   *  last. Only reads: leaving the loop does not cancel the run. */
  async *events(fromId = 0): AsyncGenerator<RunEvent> {
    const reader = new EventReader();
    for await (const raw of follow(this.t, { eventsPath: () => `/v1/runs/${this.id}/events`,
      after: String(fromId) })) {
      const ev = reader.read(raw);
      if (ev) yield ev;
      if (ev?.type === 'result') return;
    }
  }

  /** Asks serve to stop the run; the state it was in. */
  async cancel(): Promise<string> {
    return (await this.t.json<{ state: string }>('DELETE', `/v1/runs/${this.id}`)).state;
  }
}
