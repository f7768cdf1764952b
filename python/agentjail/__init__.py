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
and arun / astream for asyncio.

Remote (docs/python.md#remote): agentjail.connect(url, key) is the same API
over an `agentjail serve`, in pure Python (no C library, no root)."""
from .checkpoint import CheckpointInfo, CheckpointKey, StoredCheckpoint
from .errors import (AgentjailError, CheckpointError, CheckpointRefused, ConfigError,
                     EgressError, FileTransferError, InvalidCode,
                     InvalidCommand, ProcessError, RateLimited, RunLost,
                     SandboxClosed, SandboxError, SandboxUnavailable, ServeError, SessionClosed,
                     SessionLimitReached)
from .result import Execution, FileInfo, Image, Status
from ._listen import ImageEvent, OutputEvent
from ._streams import AsyncRunStream, RunHandle, RunStream
from .serve_client import RemoteRunHandle, ServeClient
from .remote import RemoteProcess, RemoteSandbox, RemoteSession, RemoteTerminal, connect

# What needs libagentjail (a local sandbox) is imported when first named,
# so that `import agentjail` and connect() work where there is no C
# library: macOS, Windows, a Linux user without root (PEP 562).
_NATIVE = {
    "LIBRARY_PATH": ("._native", "LIBRARY_PATH"),
    "LIBRARY_VERSION": ("._native", "VERSION"),
    "Sandbox": (".sandbox", "Sandbox"),
    "ProcessSandbox": (".sandbox", "ProcessSandbox"),
    "ContainerSandbox": (".sandbox", "ContainerSandbox"),
    "MicrovmSandbox": (".sandbox", "MicrovmSandbox"),
    "DockerSandbox": (".sandbox", "DockerSandbox"),
    "GvisorSandbox": (".sandbox", "GvisorSandbox"),
    "Session": (".session", "Session"),
    "Process": ("._exec", "Process"),
    "Terminal": ("._exec", "Terminal"),
    "RunPythonTool": (".tools", "RunPythonTool"),
    "ToolResult": (".tools", "ToolResult"),
    "run_python_tool": (".tools", "run_python_tool"),
    "check": (".check", "check"),
}


def __getattr__(name):
    where = _NATIVE.get(name)
    if where is None:
        raise AttributeError(f"module 'agentjail' has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(where[0], __name__), where[1])
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_NATIVE))


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
    "connect", "RemoteSandbox", "RemoteSession", "RemoteProcess", "RemoteTerminal",
    "RateLimited", "RunLost",
    "CheckpointKey", "CheckpointInfo", "CheckpointError", "CheckpointRefused",
    "StoredCheckpoint",
]
