// What the client throws. A program's own failure (an exception, a
// non-zero exit, a timeout, a limit) is never one of these: it is an
// Execution with a status. These are for the service and the caller.
import type { Execution } from './result.js';

export class AgentjailError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** serve answered with an error: `status` the HTTP status (0: the
 *  connection failed), `code` serve's error code, `body` the whole answer,
 *  `retryAfter` the seconds its Retry-After asked for. */
export class ServeError extends AgentjailError {
  readonly status: number;
  readonly code: string;
  readonly body: Record<string, unknown>;
  readonly retryAfter: number | undefined;
  readonly errno: string | undefined;

  constructor(status: number, code: string, message: string,
              body: Record<string, unknown> = {}, retryAfter?: number) {
    super(status ? `serve: ${status} ${code}: ${message}` : `serve: ${message}`);
    this.status = status;
    this.code = code;
    this.body = body;
    this.retryAfter = retryAfter;
    const err = body.error as { errno?: unknown } | undefined;
    this.errno = typeof err?.errno === 'string' ? err.errno : undefined;
  }
}

/** A value the client refuses before sending anything (a bad url, a
 *  timeout that is not a positive number: status 0), or serve's 400 for a
 *  limit, variable, rule, language or cell it refuses. */
export class ConfigError extends ServeError {
  constructor(statusOrMessage: number | string, code = 'config', message = '',
              body: Record<string, unknown> = {}, retryAfter?: number) {
    if (typeof statusOrMessage === 'string') {
      super(0, code, statusOrMessage, body, retryAfter);
      this.message = statusOrMessage; // the client's own words, not serve's
    } else {
      super(statusOrMessage, code, message, body, retryAfter);
    }
  }
}

/** 401: no key or one serve does not hold; 403: the key may not do this. */
export class Unauthorized extends ServeError {}
/** 429: the key's runs per minute, the queue, its sessions; see retryAfter. */
export class RateLimited extends ServeError {}
/** 503 after the client's retries: nothing ran. */
export class Unavailable extends ServeError {}
/** A run lost with its worker: `retrySafe` when it never started. */
export class RunLost extends ServeError {
  get retrySafe(): boolean { return this.body.retry_safe === true; }
  get mayHaveStarted(): boolean { return this.body.may_have_started === true; }
}
/** The session is gone (closed by its idle timeout, its lifetime, a
 *  DELETE, or close()); `reason` says why. */
export class SessionClosed extends ServeError {
  get reason(): string { return this.message.replace(/^serve: (\d+ \S+: )?/, ''); }
}
/** A key over its sessions. */
export class SessionLimitReached extends ServeError {}
/** A file refusal; `errno` is the library's ("ENOENT", "EACCES", ...). */
export class FileTransferError extends ServeError {}
/** A background command's call refused: no such pid, stdin closed, not a
 *  terminal, a tier without terminals. */
export class ProcessError extends ServeError {}
/** A command refused before it started (its cwd, env, timeout). */
export class InvalidCommand extends ServeError {}
/** egressKeep of a rule the session does not have. */
export class EgressError extends ServeError {}
/** A pause, resume, fork or checkpoint refused: paused already (409), its
 *  state past the sandbox's limits (413), no such checkpoint of the key's
 *  (404), past the key's quota (507), not offered with a queue (501). */
export class CheckpointError extends ServeError {}
/** A checkpoint whose file failed its tag (422): changed on serve's disk;
 *  nothing was opened. */
export class CheckpointRefused extends CheckpointError {}

/** The sandbox itself failed (status sandbox_error): never the code's
 *  fault. */
export class SandboxError extends AgentjailError {
  readonly execution: Execution;
  constructor(execution: Execution) {
    super(execution.message ?? 'the sandbox failed');
    this.execution = execution;
  }
}

export type ErrorClass = new (status: number, code: string, message: string,
  body?: Record<string, unknown>, retryAfter?: number) => ServeError;
