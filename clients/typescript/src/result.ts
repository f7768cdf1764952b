// A run's result: the contract object serve answers (`agentjail run
// --json`), with its output as text and bytes, and the text a model reads.

export type Status = 'ok' | 'error' | 'timeout' | 'memory' | 'output_limit' | 'killed'
  | 'sandbox_error';

export interface Image {
  name: string;
  mime: string;
  data: Uint8Array;
}

export interface FileInfo {
  name: string;
  type: 'file' | 'directory' | 'symlink' | 'other';
  size: number;
}

export interface Execution {
  status: Status;
  /** True when the program exited 0. */
  ok: boolean;
  exitCode: number | null;
  signal: number | null;
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  wallMs: number;
  cpuMs: number;
  memoryKb: number;
  message: string | null;
  tier: string | null;
  images: Image[];
  imagesDropped: number;
  /** The egress proxy's decision log (docs/egress.md), null without rules. */
  egress: Record<string, unknown> | null;
  /** A session call's background commands still running at its end. */
  background: number[];
  /** A notebook cell's last value (serve's "value": true): its repr and
   *  HTML, not printed; null otherwise. */
  value: string | null;
  valueHtml: string | null;
  /** The run's id on serve, when it was recorded or answered. */
  runId: string | null;
  /** The object serve sent. */
  raw: Record<string, unknown>;
}

function b64(s: string): Uint8Array {
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

export function base64(data: Uint8Array): string {
  let bin = '';
  for (let i = 0; i < data.length; i += 0x8000)
    bin += String.fromCharCode(...data.subarray(i, i + 0x8000));
  return btoa(bin);
}

export function decodeBase64(s: string): Uint8Array {
  return b64(s);
}

type Field = Record<string, unknown>;
const num = (v: unknown): number => (typeof v === 'number' ? v : 0);

export function executionFromJson(o: Record<string, unknown>): Execution {
  const images = Array.isArray(o.images) ? o.images as Record<string, unknown>[] : [];
  const status = o.status as Status;
  return {
    status,
    ok: status === 'ok',
    exitCode: typeof o.exit_code === 'number' ? o.exit_code : null,
    signal: typeof o.signal === 'number' && o.signal ? o.signal : null,
    stdout: typeof o.stdout === 'string' ? o.stdout : '',
    stderr: typeof o.stderr === 'string' ? o.stderr : '',
    stdoutTruncated: o.stdout_truncated === true,
    stderrTruncated: o.stderr_truncated === true,
    wallMs: num(o.wall_ms),
    cpuMs: num(o.cpu_ms),
    memoryKb: num(o.memory_kb),
    message: typeof o.message === 'string' ? o.message : null,
    tier: typeof o.tier === 'string' ? o.tier : null,
    images: images.map((i) => ({ name: String(i.name ?? ''), mime: String(i.mime ?? ''),
      data: b64(String(i.data ?? '')) })),
    imagesDropped: num(o.images_dropped),
    egress: (o.egress && typeof o.egress === 'object') ? o.egress as Record<string, unknown>
      : null,
    background: Array.isArray(o.background) ? (o.background as number[]).map(Number) : [],
    value: typeof (o.value as Field)?.text === 'string' ? (o.value as Field).text as string : null,
    valueHtml: typeof (o.value as Field)?.html === 'string' ? (o.value as Field).html as string
      : null,
    runId: typeof o.run_id === 'string' ? o.run_id : null,
    raw: o,
  };
}

const cstr = (v: unknown): string => (typeof v === 'string' ? v : '(null)');

/** The result as the text a model reads: the words of the C library's
 *  aj_result_text (src/api/tool.c), which the MCP server and the Python
 *  tool send; tests/clients/ts_client.test.mjs holds them to the
 *  library's over a corpus of results. */
export function resultText(ex: Execution): string {
  const parts: string[] = [];
  if (ex.exitCode !== null) parts.push(`status: ${ex.status} (exit code ${ex.exitCode})`);
  else if (ex.signal) parts.push(`status: ${ex.status} (signal ${ex.signal})`);
  else parts.push(`status: ${ex.status}`);
  if (ex.message !== null) parts.push(`\n${ex.message}`);
  const log = ex.egress as { limit?: unknown; connections?: unknown } | null;
  if (log) {
    if (typeof log.limit === 'string') parts.push(`\negress: ${log.limit}`);
    let shown = 0;
    for (const c of Array.isArray(log.connections) ? log.connections : []) {
      const failure = typeof c.failure === 'string' ? c.failure : null;
      if ((c.allowed === true && !failure) || shown === 3) continue;
      const port = Number.isInteger(c.port) ? c.port : 0;
      parts.push(failure
        ? `\negress: ${cstr(c.host)}:${port} was allowed but not reached: ${cstr(c.reason)}`
        : `\negress: refused ${cstr(c.host)}:${port}: ${cstr(c.reason)}`);
      shown++;
    }
  }
  for (const [label, text, cut] of [['stdout', ex.stdout, ex.stdoutTruncated],
    ['stderr', ex.stderr, ex.stderrTruncated]] as const) {
    parts.push(`\n--- ${label}${cut ? ' (cut at the output limit)' : ''} ---\n`);
    parts.push(text.length ? text : '(empty)');
  }
  if (ex.images.length || ex.imagesDropped) {
    parts.push('\n--- images ---');
    for (const im of ex.images)
      parts.push(`\n${im.name.slice(0, 200)} (${im.mime}, ${im.data.length} bytes)`);
    if (ex.imagesDropped)
      parts.push(`\n${ex.imagesDropped} more not returned (over the number or size allowed `
        + 'per call)');
  }
  return parts.join('');
}
