// @agentjail/client: run the code an AI agent wrote in an agentjail
// sandbox, from TypeScript, over agentjail serve (docs/typescript.md).
export { connect, Sandbox, Session, Process, Terminal } from './sandbox.js';
export type { ConnectOptions, SessionOptions, RunOptions, CommandOptions, Language, Secret }
  from './sandbox.js';
export { RunStream, RunHandle } from './runs.js';
export type { RunInfo } from './runs.js';
export type { RunEvent, OutputEvent, ImageEvent, ResultEvent, Callbacks } from './events.js';
export { resultText } from './result.js';
export type { Execution, Image, FileInfo, Status } from './result.js';
export { RunPythonTool, codeArgument } from './tools.js';
export type { ToolDefinition, ToolResult } from './tools.js';
export {
  AgentjailError, ConfigError, ServeError, Unauthorized, RateLimited, Unavailable, RunLost,
  SessionClosed, SessionLimitReached, FileTransferError, ProcessError, InvalidCommand,
  EgressError, CheckpointError, CheckpointRefused, SandboxError,
} from './errors.js';
export type { CheckpointInfo, StoredCheckpoint } from './sandbox.js';
