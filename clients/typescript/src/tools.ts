// The run_python tool for a model, in the shapes the big model APIs take
// (OpenAI chat completions and Responses, Anthropic Messages, the Vercel AI
// SDK, MCP), its definition as serve states it (GET /v1/tools: the tier's
// limits and the packages its sandbox has), its results in the library's
// words (resultText).
import { AgentjailError, SandboxError } from './errors.js';
import type { Execution, Image } from './result.js';
import { base64, resultText } from './result.js';
import type { Transport } from './http.js';

export interface ToolDefinition {
  name: string;
  title?: string;
  description: string;
  inputSchema: { type: 'object'; properties: Record<string, unknown>; required?: string[];
    additionalProperties?: boolean };
  [more: string]: unknown;
}

export interface ToolResult {
  /** What the model reads. */
  text: string;
  /** Anything but a clean exit, so the model corrects itself. */
  isError: boolean;
  images: Image[];
  /** undefined when the call never ran (bad arguments, serve refused). */
  execution?: Execution;
}

const NAME = 'run_python';

/** The code of a call's arguments, or why not: the C library's checks and
 *  words (src/api/tool.c tool_code_argument). */
export function codeArgument(args: unknown): { code?: string; why?: string } {
  let a = args;
  if (typeof a === 'string') {
    try {
      a = JSON.parse(a);
    } catch (e) {
      return { why: `not a JSON object (${(e as Error).message})` };
    }
  }
  if (a === null || typeof a !== 'object' || Array.isArray(a))
    return { why: "arguments must be an object with a string 'code'" };
  for (const k of Object.keys(a))
    if (k !== 'code') return { why: `unexpected argument '${k.slice(0, 64)}': ${NAME} takes only 'code'` };
  const code = (a as { code?: unknown }).code;
  if (typeof code !== 'string') return { why: "'code' must be a string holding the Python program" };
  return { code };
}

/** What the tool runs code on: a session (sandbox.ts's Session), or a
 *  sandbox that runs code and opens sessions (its Sandbox); named by shape,
 *  so this file needs neither. */
interface CellRunner { run(code: string): Promise<Execution> }
interface KeptSession extends CellRunner {
  readonly closed: boolean;
  readonly closedReason: string | null;
  close(): Promise<void>;
}
interface SessionOpener extends CellRunner { session(): Promise<KeptSession> }
type Target = { sandbox: SessionOpener; session: boolean } | { session: true; bound: CellRunner };

type Field = Record<string, unknown>;
const get = (o: unknown, k: string): unknown => (o as Field | undefined)?.[k];
const dataUrl = (im: Image) => `data:${im.mime};base64,${base64(im.data)}`;

export class RunPythonTool {
  private owned: KeptSession | undefined;

  private constructor(private readonly target: Target, readonly definition: ToolDefinition) {}

  /** @internal */
  static async create(t: Transport, target: Target): Promise<RunPythonTool> {
    const r = await t.json<{ tools: ToolDefinition[] }>('GET',
      `/v1/tools?session=${target.session ? 'true' : 'false'}`);
    return new RunPythonTool(target, r.tools[0]);
  }

  get name(): string { return this.definition.name; }
  get description(): string { return this.definition.description; }
  get parameters(): ToolDefinition['inputSchema'] {
    return structuredClone(this.definition.inputSchema);
  }

  /** The MCP Tool object. */
  mcp(): ToolDefinition { return structuredClone(this.definition); }

  /** For OpenAI chat completions' `tools`. */
  openai() {
    return { type: 'function' as const, function: { name: this.name,
      description: this.description, parameters: this.parameters, strict: true } };
  }

  /** For the OpenAI Responses API's `tools`. */
  openaiResponses() {
    return { type: 'function' as const, name: this.name, description: this.description,
      parameters: this.parameters, strict: true };
  }

  /** For Anthropic's Messages API `tools`. */
  anthropic() {
    return { name: this.name, description: this.description, input_schema: this.parameters };
  }

  /** For the Vercel AI SDK: `tools: { run_python: tool(t.vercel(jsonSchema)) }`, with the
   *  AI SDK's own `jsonSchema` (this package depends on nothing). The
   *  tool's result is the text the model reads. */
  vercel<S>(jsonSchema: (schema: ToolDefinition['inputSchema']) => S) {
    return { description: this.description, inputSchema: jsonSchema(this.parameters),
      execute: async (args: { code: string }) => (await this.call(args)).text };
  }

  /** Runs one call (arguments: an object or the model's JSON text). Never
   *  throws for what the model sent or its code did. */
  async call(args: unknown): Promise<ToolResult> {
    const { code, why } = codeArgument(args);
    if (why !== undefined)
      return { text: `Invalid arguments for ${NAME}: ${why}`, isError: true, images: [] };
    return this.run(code as string);
  }

  async run(code: string): Promise<ToolResult> {
    let ex: Execution;
    let note: string | undefined;
    try {
      if ('bound' in this.target) ex = await this.target.bound.run(code);
      else if (!this.target.session) ex = await this.target.sandbox.run(code);
      else {
        const s = await this.current();
        note = s.note;
        ex = await s.session.run(code);
      }
    } catch (e) {
      if (e instanceof SandboxError) ex = e.execution;
      else if (e instanceof AgentjailError)
        return { text: `status: sandbox_error\n${e.message}`, isError: true, images: [] };
      else throw e;
    }
    if (note) ex = { ...ex, message: ex.message ? `${note} ${ex.message}` : note };
    return { text: resultText(ex), isError: !ex.ok, images: ex.images, execution: ex };
  }

  private async current(): Promise<{ session: KeptSession; note?: string }> {
    let note: string | undefined;
    if (this.owned?.closed) {
      // The words of aj_session_replaced_note.
      note = `note: a new session was started, because the previous one closed `
        + `(${this.owned.closedReason}): its variables, imports and workspace files are gone.`;
      await this.owned.close();
      this.owned = undefined;
    }
    this.owned ??= await (this.target as { sandbox: SessionOpener }).sandbox.session();
    return { session: this.owned, note };
  }

  /** A call by name: run_python, or a result the model reads. */
  handle(name: unknown, args: unknown): Promise<ToolResult> {
    if (name === NAME) return this.call(args);
    return Promise.resolve({ text: `Unknown tool: ${String(name)}`, isError: true, images: [] });
  }

  /** A chat-completions tool call -> the "tool" message to append. */
  async handleOpenAI(toolCall: unknown) {
    return (await this.openaiCall(toolCall)).message;
  }

  private async openaiCall(toolCall: unknown) {
    const fn = get(toolCall, 'function');
    const r = await this.handle(get(fn, 'name'), get(fn, 'arguments') ?? '{}');
    return { message: { role: 'tool' as const, tool_call_id: String(get(toolCall, 'id')),
      content: r.text }, result: r };
  }

  /** All the tool calls of one assistant message -> the messages to
   *  append: a "tool" message each, then one "user" message with the
   *  images, if any (chat completions take images only there). */
  async handleOpenAICalls(toolCalls: unknown[]): Promise<Field[]> {
    const messages: Field[] = [];
    const parts: Field[] = [];
    for (const tc of toolCalls ?? []) {
      const { message, result } = await this.openaiCall(tc);
      messages.push(message);
      for (const im of result.images) {
        parts.push({ type: 'text', text: `Image ${im.name} from tool call ${message.tool_call_id}:` });
        parts.push({ type: 'image_url', image_url: { url: dataUrl(im) } });
      }
    }
    if (parts.length) messages.push({ role: 'user', content: parts });
    return messages;
  }

  /** A Responses API function_call item -> its function_call_output. */
  async handleOpenAIResponse(item: unknown) {
    const r = await this.handle(get(item, 'name'), get(item, 'arguments') ?? '{}');
    const output = r.images.length
      ? [{ type: 'input_text', text: r.text },
        ...r.images.map((im) => ({ type: 'input_image', image_url: dataUrl(im) }))]
      : r.text;
    return { type: 'function_call_output' as const, call_id: String(get(item, 'call_id')),
      output };
  }

  /** An Anthropic tool_use block -> its tool_result block. */
  async handleAnthropic(block: unknown) {
    const r = await this.handle(get(block, 'name'), get(block, 'input') ?? {});
    const content: Field[] = [{ type: 'text', text: r.text }];
    for (const im of r.images)
      content.push({ type: 'image', source: { type: 'base64', media_type: im.mime,
        data: base64(im.data) } });
    return { type: 'tool_result' as const, tool_use_id: String(get(block, 'id')), content,
      is_error: r.isError };
  }

  /** Closes the session this tool opened (not one it was given). */
  async close(): Promise<void> {
    await this.owned?.close();
    this.owned = undefined;
  }
}
