"""agentjail: run the code an AI agent wrote in a sandbox, and get back what
it printed and how it ended.

    from agentjail import Sandbox
    with Sandbox(tier="process", timeout=5) as sb:
        ex = sb.run("print(6 * 7)")
        print(ex.stdout, ex.status, ex.exit_code)

Tiers: "process", "container", "microvm", "docker", "gvisor" (ProcessSandbox, ...),
swappable without touching the agent. Sessions keep state across calls
(sandbox.session()); sandbox.tool() gives a model the run_python tool.
Output as it happens: run(code, on_stdout=...), stream(code), submit(code),
and arun / astream for asyncio."""
from ._native import LIBRARY_PATH, VERSION as LIBRARY_VERSION
from .errors import (AgentjailError, ConfigError, EgressError, FileTransferError, InvalidCode,
                     InvalidCommand, ProcessError,
                     SandboxClosed, SandboxError, SandboxUnavailable, ServeError, SessionClosed,
                     SessionLimitReached)
from .result import Execution, FileInfo, Image, Status
from ._listen import ImageEvent, OutputEvent
from ._streams import AsyncRunStream, RunHandle, RunStream
from .sandbox import (ContainerSandbox, DockerSandbox, GvisorSandbox, MicrovmSandbox,
                      ProcessSandbox, Sandbox)
from .serve_client import RemoteRunHandle, ServeClient
from .session import Session
from ._exec import Process, Terminal
from .tools import RunPythonTool, ToolResult, run_python_tool
from .check import check

__version__ = "0.5.0"

__all__ = [
    "Sandbox", "ProcessSandbox", "ContainerSandbox", "MicrovmSandbox", "DockerSandbox",
    "GvisorSandbox",
    "Session", "Execution", "Image", "FileInfo", "Status", "OutputEvent", "ImageEvent",
    "RunStream", "AsyncRunStream", "RunHandle", "ServeClient", "RemoteRunHandle", "ServeError", "RunPythonTool", "ToolResult",
    "run_python_tool", "check", "AgentjailError", "ConfigError", "SandboxUnavailable",
    "SandboxError", "InvalidCode", "InvalidCommand", "ProcessError", "SandboxClosed", "SessionClosed", "FileTransferError",
    "EgressError", "SessionLimitReached",
    "LIBRARY_PATH", "LIBRARY_VERSION", "Process", "Terminal",
]
