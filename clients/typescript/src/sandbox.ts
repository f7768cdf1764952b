// The sandbox, its sessions and their commands, over serve's v1 API: the
// Python client's shape (agentjail.connect()) in TypeScript.
import {
  CheckpointError, CheckpointRefused, ConfigError, EgressError, FileTransferError, InvalidCommand, ProcessError,
  ServeError, SessionClosed, SessionLimitReached,
} from './errors.js';
import type { Execution, FileInfo } from './result.js';
import { base64 } from './result.js';
import { Callbacks, deliver, EventReader, execution, hasCallbacks } from './events.js';
import { Mapper, Transport, TransportOptions } from './http.js';
import { RunHandle, RunInfo, RunStream } from './runs.js';
import { follow } from './sse.js';
import { RunPythonTool } from './tools.js';

export type Language = 'python' | 'javascript' | 'js' | 'typescript' | 'ts' | 'bash' | 'sh';

export interface RunOptions extends Callbacks {
  /** A deadline of this call's own, in seconds (at most serve's). */
  timeout?: number;
  language?: Language;
  /** Cancels the run (it ends killed) and rejects with an AbortError. */
  signal?: AbortSignal;
}

const configErrors: Mapper = (status, code, message) => {
  if (status === 400
    && ['bad_limits', 'bad_env', 'bad_egress', 'bad_language', 'bad_secrets'].includes(code))
    return ConfigError;
  if (status === 400 && message.startsWith('code:')) return ConfigError;
  return undefined;
};

function seconds(v: number | undefined, what: string): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !(v > 0) || !Number.isFinite(v))
    throw new ConfigError(`${what}: ${JSON.stringify(v)} is not a positive number of seconds`);
  return v;
}

abstract class Runner {
  protected abstract readonly runPath: string;
  protected abstract what: Mapper;

  constructor(protected readonly t: Transport) {}

  protected runBody(code: string, o: RunOptions): Record<string, unknown> {
    if (typeof code !== 'string') throw new TypeError('code must be a string');
    const body: Record<string, unknown> = { code };
    if (o.language && o.language !== 'python') body.language = o.language;
    const timeout = seconds(o.timeout, 'timeout');
    if (timeout !== undefined) body.limits = { timeout_sec: timeout };
    return body;
  }

  /** Runs code; its Execution. A program's failure is a status, never a
   *  throw. With callbacks (or a signal) the run is streamed and they are
   *  called as its output arrives. */
  async run(code: string, o: RunOptions = {}): Promise<Execution> {
    const body = this.runBody(code, o);
    if (!hasCallbacks(o) && !o.signal)
      return execution(await this.t.json('POST', this.runPath, body, this.what));
    const s = new RunStream(this.t, this.runPath, body, this.what, o.signal);
    return s.execution(o);
  }

  /** The run's events as they happen, the result last. */
  stream(code: string, o: Omit<RunOptions, keyof Callbacks> = {}): RunStream {
    return new RunStream(this.t, this.runPath, this.runBody(code, o), this.what, o.signal);
  }
}

/** A credential the code can use but never see (docs/secrets.md): serve's
 *  egress proxy adds value to the requests for hosts, as header (format
 *  "Bearer {value}"), or where the program writes AJ_SECRET_<name>
 *  (placeholder: true). */
export interface Secret {
  name: string;
  value: string;
  hosts: string[];
  header?: string;
  format?: string;
  placeholder?: boolean;
  /** Inject into plain HTTP too (off by default). */
  plain_http?: boolean;
  /** "METHOD /path-prefix" rules: only those requests get the value. */
  requests?: string[];
}

export interface ConnectOptions extends Partial<TransportOptions> {
  /** Sent as "secrets" with every run, and every session that gives none
   *  of its own. Write-only: no property of the Sandbox shows them. */
  secrets?: Secret[];
}

// Each sandbox's secrets, out of the object itself: no property, no
// console.log or JSON.stringify of a Sandbox shows a value.
const secretsOf = new WeakMap<object, Secret[]>();

/** A copy of secrets checked for shape (serve judges the fields, in its
 *  own words); a refusal names the item, never a value. */
function checkSecrets(v: unknown): Secret[] {
  if (!Array.isArray(v))
    throw new ConfigError('secrets: must be an array of objects ({ name, value, hosts, ... }: '
      + 'docs/secrets.md)');
  return v.map((item, i) => {
    if (!item || typeof item !== 'object' || Array.isArray(item))
      throw new ConfigError(`secrets: item ${i + 1} is not an object`);
    return { ...(item as Secret), ...(Array.isArray((item as Secret).hosts)
      ? { hosts: [...(item as Secret).hosts] } : {}) };
  });
}

/** A sandbox on an agentjail serve: url (default $AGENTJAIL_URL) and key
 *  (default $AGENTJAIL_KEY). The tier, image and limits are serve's. */
export function connect(o: ConnectOptions = {}): Sandbox {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } })
    .process?.env ?? {};
  const url = o.url ?? env.AGENTJAIL_URL;
  if (!url) throw new ConfigError('connect: no url given and AGENTJAIL_URL is not set');
  const { secrets, ...transport } = o;
  const held = secrets === undefined ? undefined : checkSecrets(secrets);
  let sb: Sandbox;
  try {
    sb = new Sandbox(new Transport({ ...transport, url, key: o.key ?? env.AGENTJAIL_KEY }));
  } catch (e) {
    throw new ConfigError(`connect: ${(e as Error).message}`);
  }
  if (held) secretsOf.set(sb, held);
  return sb;
}

export interface SessionOptions {
  env?: Record<string, string>;
  /** Narrower than serve's: { memory_mb: 128, timeout_sec: 5, ... }. */
  limits?: Record<string, number>;
  allowHosts?: string[];
  allowCidrs?: string[];
  /** The session's own secrets (docs/secrets.md), else connect()'s. */
  secrets?: Secret[];
}

export class Sandbox extends Runner {
  protected readonly runPath = '/v1/runs';
  protected what = configErrors;
  private tierName: string | undefined;

  get url(): string { return this.t.url; }

  protected runBody(code: string, o: RunOptions): Record<string, unknown> {
    const body = super.runBody(code, o);
    const secrets = secretsOf.get(this);
    if (secrets) body.secrets = secrets;
    return body;
  }

  /** The tier serve runs (asked of /v1/health once). */
  async tier(): Promise<string> {
    this.tierName ??= (await this.t.json<{ tier: string }>('GET', '/v1/health')).tier;
    return this.tierName;
  }

  /** A session: an interpreter that keeps its state, files and imports
   *  across calls. */
  async session(o: SessionOptions = {}): Promise<Session> {
    const info = await this.t.json<{ id: string }>('POST', '/v1/sessions', this.sessionBody(o),
      (status, code, message) => (code === 'session_limit'
        ? SessionLimitReached : configErrors(status, code, message)));
    return new Session(this.t, info.id, info);
  }

  /** A session with the state of the key's checkpoint id (made by
   *  session.checkpoint()), under these terms and serve's limits today. */
  async restore(id: string, o: SessionOptions = {}): Promise<Session> {
    const body = { ...this.sessionBody(o), from_checkpoint: id };
    const info = await this.t.json<{ id: string }>('POST', '/v1/sessions', body, checkpointWhat);
    return new Session(this.t, info.id, info);
  }

  private sessionBody(o: SessionOptions): Record<string, unknown> {
    const body = sessionBody(o);
    const secrets = o.secrets !== undefined ? checkSecrets(o.secrets) : secretsOf.get(this);
    if (secrets) body.secrets = secrets;
    return body;
  }

  /** The key's checkpoints on serve, newest first. */
  async checkpoints(): Promise<StoredCheckpoint[]> {
    return (await this.t.json<{ checkpoints: StoredCheckpoint[] }>('GET', '/v1/checkpoints',
      undefined, checkpointWhat)).checkpoints;
  }

  /** Deletes one of the key's checkpoints: true, or false when it holds
   *  none of that id. */
  async deleteCheckpoint(id: string): Promise<boolean> {
    try {
      await this.t.request('DELETE', `/v1/checkpoints/${encodeURIComponent(id)}`,
        { what: checkpointWhat });
      return true;
    } catch (e) {
      if (e instanceof ServeError && e.status === 404) return false;
      throw e;
    }
  }

  /** A background run recorded on serve; its handle. webhook: a URL serve
   *  POSTs the finished run to (on its allow-list). */
  async submit(code: string, o: { timeout?: number; webhook?: string } = {}): Promise<RunHandle> {
    const body = this.runBody(code, o);
    body.background = true;
    if (o.webhook) body.webhook = o.webhook;
    const r = await this.t.json<{ id: string }>('POST', '/v1/runs', body, this.what);
    return new RunHandle(this.t, r.id);
  }

  /** The handle of a run this key started. */
  handle(runId: string): RunHandle {
    return new RunHandle(this.t, runId);
  }

  /** This key's recorded runs, newest first. */
  async runs(o: { limit?: number; before?: string } = {}):
    Promise<{ runs: RunInfo[]; next: string | null }> {
    const q = new URLSearchParams({ limit: String(o.limit ?? 20) });
    if (o.before) q.set('before', o.before);
    return this.t.json('GET', `/v1/runs?${q}`);
  }

  /** The run_python tool for a model: a fresh sandbox per call, or with
   *  session: true a session opened at the first call. */
  tool(o: { session?: boolean } = {}): Promise<RunPythonTool> {
    return RunPythonTool.create(this.t, o.session ? { sandbox: this, session: true }
      : { sandbox: this, session: false });
  }
}

export interface CommandOptions {
  cwd?: string;
  env?: Record<string, string>;
  stdin?: string | Uint8Array;
  /** Seconds: its own deadline, at most the sandbox's. */
  timeout?: number;
}

const bytes = (d: string | Uint8Array) => (typeof d === 'string' ? new TextEncoder().encode(d) : d);

function commandBody(command: string | string[], o: CommandOptions): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (typeof command === 'string') body.command = command;
  else if (Array.isArray(command) && command.length && command.every((a) => typeof a === 'string'))
    body.argv = command;
  else throw new TypeError('command must be a string (for /bin/sh -c) or a non-empty string[]');
  if (o.cwd !== undefined) body.cwd = o.cwd;
  if (o.env) body.env = o.env;
  if (o.stdin !== undefined) body.stdin = base64(bytes(o.stdin));
  const timeout = seconds(o.timeout, 'timeout');
  if (timeout !== undefined) body.timeout = timeout;
  return body;
}

const ERRNO_BY_STATUS: Record<number, string> = { 404: 'ENOENT', 413: 'EFBIG', 400: 'EINVAL',
  507: 'ENOSPC' };

function sessionBody(o: SessionOptions): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (o.env) body.env = o.env;
  if (o.limits) body.limits = o.limits;
  if (o.allowHosts) body.allow_hosts = o.allowHosts;
  if (o.allowCidrs) body.allow_cidrs = o.allowCidrs;
  return body;
}

/** serve's refusals of its checkpoints. */
const checkpointWhat: Mapper = (s, c, m) => (s === 422 ? CheckpointRefused
  : [404, 501, 507].includes(s) || c === 'checkpoints_unavailable' ? CheckpointError
    : c === 'session_limit' ? SessionLimitReached : configErrors(s, c, m));

/** A checkpoint serve keeps for the key: its id (for restore), the
 *  session it was made of, its name, when it was made and expires (Unix
 *  seconds), and what it carried. */
export interface StoredCheckpoint extends CheckpointInfo {
  id: string;
  session: string;
  name?: string;
  created: number;
  expires: number;
}

/** What a pause carried: the state's size, the workspace's files, how
 *  many variables could not be written, and in words what was not carried. */
export interface CheckpointInfo {
  bytes: number;
  files: number;
  left_out: number;
  note: string;
}

export class Session extends Runner {
  protected readonly runPath: string;
  readonly base: string;
  closedReason: string | null = null;

  constructor(t: Transport, readonly id: string, readonly info: Record<string, unknown> = {}) {
    super(t);
    this.base = `/v1/sessions/${encodeURIComponent(id)}`;
    this.runPath = `${this.base}/runs`;
  }

  // serve's words for a session it does not have: 410, or 404 "no such
  // session" (a worker's adds its name).
  private gone: Mapper = (status, _code, message) => {
    if (status === 410 || (status === 404 && message.startsWith('no such session'))) {
      this.closedReason = message;
      return SessionClosed;
    }
    return undefined;
  };

  protected what: Mapper = (s, c, m) => this.gone(s, c, m) ?? configErrors(s, c, m);
  private commandWhat: Mapper = (s, c, m) => this.gone(s, c, m)
    ?? (s === 400 ? InvalidCommand : undefined);
  private procWhat: Mapper = (s, c, m) => this.gone(s, c, m)
    ?? ([400, 404, 409, 413, 501].includes(s) ? ProcessError : undefined);
  private startWhat: Mapper = (s, c, m) => (s === 400 ? this.commandWhat(s, c, m)
    : this.procWhat(s, c, m));
  private fileWhat: Mapper = (s, c, m) => this.gone(s, c, m)
    ?? (ERRNO_BY_STATUS[s] ? FileTransferError : undefined);

  get closed(): boolean { return this.closedReason !== null; }

  /** Code as a notebook cell: value (default true), a last bare
   *  expression is not printed but comes back as Execution.value (and
   *  valueHtml); context, a namespace of the interpreter's own by name;
   *  fresh, the context's state forgotten first. value and context are
   *  Python's only (ConfigError otherwise). */
  async cell(code: string, o: RunOptions & { value?: boolean; context?: string;
    fresh?: boolean } = {}): Promise<Execution> {
    const body = this.runBody(code, o);
    if (o.value ?? true) body.value = true;
    if (o.context !== undefined) body.context = o.context;
    if (o.fresh) body.fresh = true;
    const what: Mapper = (s, c, m) => this.gone(s, c, m)
      ?? (s === 400 ? ConfigError : undefined);
    if (!hasCallbacks(o) && !o.signal)
      return execution(await this.t.json('POST', this.runPath, body, what));
    return new RunStream(this.t, this.runPath, body, what, o.signal).execution(o);
  }

  /** A command in the session's sandbox, as one more program of the
   *  session; its Execution. */
  async exec(command: string | string[], o: CommandOptions & Callbacks = {}): Promise<Execution> {
    const body = commandBody(command, o);
    if (!hasCallbacks(o)) return execution(await this.t.json('POST', `${this.base}/exec`, body,
      this.commandWhat));
    return new RunStream(this.t, `${this.base}/exec`, body, this.commandWhat).execution(o);
  }

  /** A command in the background; its Process at once. keepStdin: its
   *  stdin stays open for sendStdin (else stdin, if any, goes in first and
   *  then it closes). */
  async spawn(command: string | string[], o: CommandOptions & { keepStdin?: boolean } = {}):
    Promise<Process> {
    if (o.keepStdin && o.stdin !== undefined)
      throw new TypeError('stdin with keepStdin: send it with sendStdin()');
    const body = commandBody(command, o);
    if (o.keepStdin) body.stdin = true;
    const r = await this.t.json<{ pid: number }>('POST', `${this.base}/processes`, body,
      this.startWhat);
    return new Process(this, r.pid, typeof command === 'string' ? command : command.join(' '));
  }

  /** A command (default /bin/bash) on a terminal of the session's own. */
  async pty(o: { cols?: number; rows?: number; command?: string | string[] }
    & Omit<CommandOptions, 'stdin'> = {}): Promise<Terminal> {
    const command = o.command ?? ['/bin/bash'];
    const body = commandBody(command, o);
    body.pty = { cols: side(o.cols ?? 80, 'cols'), rows: side(o.rows ?? 24, 'rows') };
    const r = await this.t.json<{ pid: number }>('POST', `${this.base}/processes`, body,
      this.startWhat);
    return new Terminal(this, r.pid, typeof command === 'string' ? command : command.join(' '));
  }

  async processes(): Promise<{ pid: number; command: string; running: boolean }[]> {
    const r = await this.t.json<{ processes: { pid: number; command: string;
      running: boolean }[] }>('GET', `${this.base}/processes`, undefined, this.procWhat);
    return r.processes;
  }

  process(pid: number): Process {
    return new Process(this, pid);
  }

  /** @internal */
  call<T>(method: string, sub: string, body?: unknown): Promise<T> {
    return this.t.json<T>(method, this.base + sub, body, this.procWhat);
  }

  /** @internal */
  get transport(): Transport { return this.t; }

  /** @internal */
  get procMapper(): Mapper { return this.procWhat; }

  private filePath(path: string): string {
    if (path.includes('\0'))
      throw new FileTransferError(0, 'bad_path', `${JSON.stringify(path)}: holds a NUL byte`);
    // fetch's URL parser resolves ".." (even as %2E%2E) into another
    // route, so such a path cannot reach serve to be refused there: it is
    // refused here, in the library's words and errno (src/api/session.c).
    // "." resolves to what the library makes of it too.
    if (path.split('/').some((p) => p === '..'))
      throw new FileTransferError(0, 'bad_path', `path: ${path}: '..' is not allowed`,
        { error: { errno: 'EACCES' } });
    return `${this.base}/files/${path.split('/').map(encodeURIComponent).join('/')}`;
  }

  /** Writes a workspace file (created or replaced; its directories made). */
  async putFile(path: string, data: string | Uint8Array): Promise<void> {
    const r = await this.t.request('PUT', this.filePath(path), { raw: bytes(data),
      what: this.fileWhat });
    await r.body?.cancel();
  }

  /** The bytes of a workspace file. */
  async getFile(path: string): Promise<Uint8Array> {
    const r = await this.t.request('GET', this.filePath(path), {
      accept: 'application/octet-stream', what: this.fileWhat });
    return new Uint8Array(await r.arrayBuffer());
  }

  /** The entries of a workspace directory ('' for the workspace). */
  async listFiles(dir = ''): Promise<FileInfo[]> {
    const q = dir ? `?${new URLSearchParams({ dir })}` : '';
    return (await this.t.json<{ entries: FileInfo[] }>('GET', `${this.base}/files${q}`,
      undefined, this.fileWhat)).entries;
  }

  /** Narrows the session's egress rules to these (never widens them). */
  async egressKeep(o: { hosts?: string[]; cidrs?: string[] } = {}): Promise<void> {
    await this.t.json('POST', `${this.base}/egress`, { allow_hosts: o.hosts ?? [],
      allow_cidrs: o.cidrs ?? [] }, (s, c, m) => this.gone(s, c, m)
      ?? (s === 400 ? EgressError : undefined));
  }

  /** Narrows the session's secrets to these names (POST .../egress with
   *  { secrets }); a name it does not have is EgressError, nothing changed. */
  async secretsKeep(names: string[] = []): Promise<void> {
    if (!Array.isArray(names) || !names.every((n) => typeof n === 'string'))
      throw new ConfigError('names: must be an array of secret names');
    await this.t.json('POST', `${this.base}/egress`, { secrets: names },
      (s, c, m) => this.gone(s, c, m) ?? (s === 400 ? EgressError : undefined));
  }

  private stateWhat: Mapper = (s, c, m) => this.gone(s, c, m)
    ?? (c === 'session_limit' ? SessionLimitReached
      : [409, 413, 500, 501].includes(s) ? CheckpointError : configErrors(s, c, m));

  /** Frees the session's sandbox and keeps its state; its next call (or
   *  resume()) brings it back as it was (docs/checkpoints.md). */
  async pause(): Promise<CheckpointInfo> {
    const a = await this.t.json<CheckpointInfo & { paused: boolean }>('POST',
      `${this.base}/pause`, undefined, this.stateWhat);
    return { bytes: a.bytes, files: a.files, left_out: a.left_out, note: a.note };
  }

  /** The session's state kept on serve under an id of the key's (a paused
   *  session stays paused); Sandbox.restore(id) opens it. name: a label
   *  to list it by. */
  async checkpoint(o: { name?: string } = {}): Promise<StoredCheckpoint> {
    return this.t.json<StoredCheckpoint>('POST', `${this.base}/checkpoint`,
      o.name === undefined ? {} : { name: o.name },
      (s, c, m) => (s === 507 ? CheckpointError : this.stateWhat(s, c, m)));
  }

  /** Brings a paused session back now. */
  async resume(): Promise<void> {
    await this.t.json('POST', `${this.base}/resume`, undefined, this.stateWhat);
  }

  /** n sessions (1 to 100), each with this one's state now, independent
   *  of each other and of this one; all or none (SessionLimitReached past
   *  the key's sessions). */
  async fork(n = 1): Promise<Session[]> {
    if (!Number.isInteger(n) || n < 1 || n > 100)
      throw new ConfigError(`fork: ${JSON.stringify(n)} is not a whole number from 1 to 100`);
    const a = await this.t.json<{ sessions: string[] }>('POST', `${this.base}/fork`,
      { count: n }, this.stateWhat);
    return a.sessions.map((id) => new Session(this.t, id));
  }

  /** The run_python tool bound to this session. */
  tool(): Promise<RunPythonTool> {
    return RunPythonTool.create(this.t, { session: true, bound: this });
  }

  /** Deletes the session; its sandbox is destroyed. Idempotent. */
  async close(): Promise<void> {
    if (this.closedReason !== null) return;
    try {
      await this.t.request('DELETE', this.base);
    } catch (e) {
      if (!(e instanceof ServeError) || ![404, 410].includes(e.status)) throw e;
    }
    this.closedReason = 'closed by the caller';
  }
}

function side(n: number, what: string): number {
  if (!Number.isInteger(n) || n < 1 || n > 4096)
    throw new ConfigError(`${what}: ${JSON.stringify(n)} is not a terminal side (1 to 4096)`);
  return n;
}

/** A background command of a session, by pid. */
export class Process {
  constructor(readonly session: Session, readonly pid: number, readonly command?: string) {}

  protected get path(): string { return `/processes/${this.pid}`; }

  /** Its end, with its output (from its start) to the callbacks as it
   *  comes. */
  async wait(c: Callbacks = {}): Promise<Execution> {
    const reader = new EventReader();
    const s = this.session;
    for await (const raw of follow(s.transport, {
      eventsPath: () => `${s.base}${this.path}/events`, after: '0-0', what: s.procMapper })) {
      const ev = reader.read(raw);
      if (ev?.type === 'result') return ev.execution;
      if (ev) deliver(ev, c);
    }
    throw new ServeError(0, 'no_result', 'the event stream ended without a result');
  }

  /** undefined while it runs; its Execution once it has ended. */
  async poll(): Promise<Execution | undefined> {
    const info = await this.session.call<Record<string, unknown>>('GET', this.path);
    return info.running ? undefined : execution(info);
  }

  async sendStdin(data: string | Uint8Array): Promise<void> {
    await this.session.call('POST', `${this.path}/stdin`, { data: base64(bytes(data)) });
  }

  async closeStdin(): Promise<void> {
    await this.session.call('POST', `${this.path}/stdin`, { close: true });
  }

  /** Sends signal (default SIGKILL; a number or "SIGTERM") to its process
   *  group. */
  async kill(signal: number | string = 9): Promise<void> {
    await this.session.call('POST', `${this.path}/signal`, { signal });
  }
}

/** A command on a session's terminal: wait()'s onStdout is its screen. */
export class Terminal extends Process {
  async resize(cols: number, rows: number): Promise<void> {
    await this.session.call('POST', `${this.path}/resize`, { cols: side(cols, 'cols'),
      rows: side(rows, 'rows') });
  }
}
