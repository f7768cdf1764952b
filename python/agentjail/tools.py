"""The run_python tool for a model: its definition in the shapes the big
model APIs take, and a handler that turns a tool call into the text a model
reads well. The words are the library's (src/core/tool.c), the same the MCP
server sends, so a model sees one tool however the sandbox is reached.

    tool = sandbox.tool()
    client.chat.completions.create(..., tools=[tool.openai()])
    for call in message.tool_calls:
        messages.append(tool.handle_openai(call))

    client.messages.create(..., tools=[tool.anthropic()])
    for block in response.content:
        if block.type == "tool_use":
            results.append(tool.handle_anthropic(block))
"""
import base64
import dataclasses
import json
import threading
from dataclasses import dataclass, field
from typing import List, Optional

from ._native import ffi, lib
from .errors import AgentjailError, SandboxClosed, SandboxError
from .result import Execution, Image

NAME = "run_python"


@dataclass
class ToolResult:
    """What a call gives back: the text for the model, whether to flag it as
    an error (anything but a clean exit, so the model corrects itself), the
    images a session's call made, and the Execution (None when the call
    never ran: bad arguments, a closed sandbox)."""

    text: str
    is_error: bool
    images: List[Image] = field(default_factory=list)
    execution: Optional[Execution] = None


def _get(obj, key, default=None):
    """A field of a tool call, whether a dict or an SDK object."""
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


class RunPythonTool:
    """The run_python tool over a Sandbox (a fresh sandbox per call), a
    Session, or a Sandbox with session=True (a session opened at the first
    call, and opened anew, with a note for the model, if it closes)."""

    def __init__(self, target, session=False):
        from .sandbox import Sandbox
        from .session import Session
        self._lock = threading.Lock()
        self._owned = None
        if isinstance(target, Session):
            self._sandbox, self._session, self.session = None, target, True
        elif isinstance(target, Sandbox):
            self._sandbox, self._session, self.session = target, None, bool(session)
        else:
            raise TypeError(f"a tool runs on a Sandbox or a Session, not {type(target).__name__}")
        self._config = target._config
        p = lib.aj_tool_definition(self._config.c, self.session)
        if p == ffi.NULL:
            raise MemoryError("agentjail: out of memory")
        try:
            self._definition = json.loads(ffi.string(p).decode())
        finally:
            lib.aj_free(p)

    # ---- definitions ----

    @property
    def name(self):
        return self._definition["name"]

    @property
    def description(self):
        return self._definition["description"]

    @property
    def parameters(self):
        """The arguments' JSON schema: one string, "code"."""
        return json.loads(json.dumps(self._definition["inputSchema"]))

    def mcp(self):
        """The MCP Tool object, as `agentjail mcp` lists it."""
        return json.loads(json.dumps(self._definition))

    def openai(self):
        """For OpenAI-style chat completions' `tools` (function calling)."""
        return {"type": "function",
                "function": {"name": self.name, "description": self.description,
                             "parameters": self.parameters, "strict": True}}

    def openai_responses(self):
        """For the OpenAI Responses API's `tools`."""
        return {"type": "function", "name": self.name, "description": self.description,
                "parameters": self.parameters, "strict": True}

    def anthropic(self):
        """For Anthropic's Messages API `tools`."""
        return {"name": self.name, "description": self.description,
                "input_schema": self.parameters}

    # ---- calls ----

    def call(self, arguments):
        """Runs one call. arguments: the call's arguments as a dict or as
        the JSON text the model wrote. Never raises for what the model sent
        or what its code did: those are results the model reads."""
        if isinstance(arguments, (bytes, bytearray)):
            arguments = bytes(arguments).decode("utf-8", "replace")
        if not isinstance(arguments, str):
            try:
                arguments = json.dumps(arguments)
            except (TypeError, ValueError) as e:
                return ToolResult(f"Invalid arguments for {NAME}: {e}", True)
        data = arguments.encode("utf-8", "replace")
        code = ffi.new("char **")
        code_len = ffi.new("size_t *")
        err = ffi.new("struct aj_error *")
        if lib.aj_tool_arguments(data, len(data), code, code_len, err):
            return ToolResult(ffi.string(err.message).decode("utf-8", "replace"), True)
        try:
            source = ffi.unpack(code[0], code_len[0])
        finally:
            lib.aj_free(code[0])
        return self.run(source)

    def run(self, code):
        """Runs code as the tool would and returns the ToolResult."""
        note = None
        try:
            if self._sandbox is not None and not self.session:
                ex = self._sandbox.run(code)
            else:
                target, note = self._current_session()
                ex = target.run(code)
        except SandboxError as e:
            ex = e.execution
        except AgentjailError as e:  # closed, unavailable, refused code
            return ToolResult(f"status: sandbox_error\n{e}", True)
        if note:
            ex = dataclasses.replace(ex, message=f"{note} {ex.message}" if ex.message else note)
        return ToolResult(ex.text(), not ex.ok, list(ex.images), ex)

    def _current_session(self):
        if self._session is not None:
            return self._session, None
        with self._lock:
            note = None
            if self._owned is not None and self._owned.closed_reason is not None:
                p = lib.aj_session_replaced_note(self._owned.closed_reason.encode())
                try:
                    note = ffi.string(p).decode() if p != ffi.NULL else None
                finally:
                    lib.aj_free(p)
                self._owned.close()
                self._owned = None
            if self._owned is None:
                if self._sandbox.closed:
                    raise SandboxClosed("agentjail: the sandbox is closed")
                self._owned = self._sandbox.session()
            return self._owned, note

    def close(self):
        """Closes the session this tool opened (not one it was given)."""
        with self._lock:
            if self._owned is not None:
                self._owned.close()
                self._owned = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # ---- the APIs' message shapes ----

    def _unknown(self, name):
        return ToolResult(f"Unknown tool: {name}", True)

    def handle_openai(self, tool_call):
        """A chat-completions tool call (dict or SDK object) -> the "tool"
        message to append. Chat tool messages carry text only: the images'
        names are in it, and the bytes in the ToolResult (handle()) for a
        caller that forwards them."""
        fn = _get(tool_call, "function", {})
        name = _get(fn, "name")
        r = self.call(_get(fn, "arguments", "{}")) if name == self.name else self._unknown(name)
        return {"role": "tool", "tool_call_id": _get(tool_call, "id"), "content": r.text}

    def handle_openai_response(self, item):
        """A Responses API function_call item -> its function_call_output."""
        name = _get(item, "name")
        r = self.call(_get(item, "arguments", "{}")) if name == self.name else self._unknown(name)
        return {"type": "function_call_output", "call_id": _get(item, "call_id"),
                "output": r.text}

    def handle_anthropic(self, block):
        """An Anthropic tool_use block -> its tool_result block, with the
        images as image blocks and is_error unless the program exited 0."""
        name = _get(block, "name")
        r = self.call(_get(block, "input", {})) if name == self.name else self._unknown(name)
        content = [{"type": "text", "text": r.text}]
        for im in r.images:
            content.append({"type": "image",
                            "source": {"type": "base64", "media_type": im.mime,
                                       "data": base64.b64encode(im.data).decode()}})
        return {"type": "tool_result", "tool_use_id": _get(block, "id"), "content": content,
                "is_error": r.is_error}


def run_python_tool(target, session=False):
    """The run_python tool over a Sandbox or a Session (see RunPythonTool)."""
    return RunPythonTool(target, session=session)
