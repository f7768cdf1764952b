// The events of a run or command, as a caller sees them.
import type { Execution } from './result.js';
import { decodeBase64, executionFromJson } from './result.js';
import { RunLost, SandboxError, ServeError } from './errors.js';
import type { RawEvent } from './sse.js';

export interface OutputEvent { type: 'stdout' | 'stderr'; text: string; id: string }
export interface ImageEvent { type: 'image'; name: string; mime: string; data: Uint8Array;
  id: string }
export interface ResultEvent { type: 'result'; execution: Execution; id: string }
export type RunEvent = OutputEvent | ImageEvent | ResultEvent;

/** An answer's result object as an Execution; a run serve could not finish
 *  thrown as ServeError (RunLost for one lost with its worker), and a
 *  sandbox failure as SandboxError, as the Python client does. */
export function execution(body: Record<string, unknown>): Execution {
  if ('error' in body || !('status' in body)) {
    const err = (body.error ?? {}) as { code?: string; message?: string };
    const Cls = body.lost === true ? RunLost : ServeError;
    throw new Cls(200, err.code ?? 'no_result', err.message ?? 'the run has no result', body);
  }
  const ex = executionFromJson(body);
  if (ex.status === 'sandbox_error') throw new SandboxError(ex);
  return ex;
}

/** A decoder per stream, so a character split between two chunks comes
 *  whole in the later one. */
export class EventReader {
  private readonly decoders = { stdout: new TextDecoder(), stderr: new TextDecoder() };

  read(ev: RawEvent): RunEvent | null {
    const id = ev.id ?? '';
    if (ev.event === 'stdout' || ev.event === 'stderr') {
      const d = ev.data as { text?: string; base64?: string };
      const bytes = typeof d.text === 'string' ? new TextEncoder().encode(d.text)
        : decodeBase64(d.base64 ?? '');
      const text = this.decoders[ev.event].decode(bytes, { stream: true });
      return text ? { type: ev.event, text, id } : null;
    }
    if (ev.event === 'image') {
      const d = ev.data as { name?: string; mime?: string; data?: string; base64?: string };
      return { type: 'image', name: d.name ?? '', mime: d.mime ?? '',
        data: decodeBase64(d.data ?? d.base64 ?? ''), id };
    }
    if (ev.event === 'result') return { type: 'result', execution: execution(ev.data), id };
    return null; // an event of a later serve
  }
}

export interface Callbacks {
  onStdout?: (text: string) => void;
  onStderr?: (text: string) => void;
  onImage?: (image: { name: string; mime: string; data: Uint8Array }) => void;
}

export function hasCallbacks(c: Callbacks): boolean {
  return !!(c.onStdout || c.onStderr || c.onImage);
}

export function deliver(ev: RunEvent, c: Callbacks): void {
  if (ev.type === 'stdout') c.onStdout?.(ev.text);
  else if (ev.type === 'stderr') c.onStderr?.(ev.text);
  else if (ev.type === 'image') c.onImage?.({ name: ev.name, mime: ev.mime, data: ev.data });
}
