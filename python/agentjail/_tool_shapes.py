"""What a run_python tool is to a model, whoever runs it: its definitions in
the shapes the big model APIs take (from the MCP Tool objects the subclass
gives as self._definitions), and the handlers that turn a tool call in
each API's shape into the message the model reads. Pure Python: the local
tool (tools.py, over the C library) and the remote one (remote_tools.py,
over serve) share it; each gives handle(name, arguments)."""
import base64
import dataclasses
import json
import threading
from dataclasses import dataclass, field
from typing import List, Optional

from .errors import AgentjailError, SandboxClosed, SandboxError
from .result import Execution, Image


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


class ToolShapes:
    """What every run_python tool does the same way: run(code) on its
    target (a sandbox per call, or a session it was given or keeps,
    reopened with a note when it closes), the definitions' shapes and the
    APIs' handlers, over self._definitions (MCP Tool objects, run_python
    first), self.handle(name, arguments) -> ToolResult, and
    _replaced_note(reason) (the words for a session that was replaced).
    The subclass binds its target first (_bind)."""

    def _bind(self, target, session, kinds):
        """The tool's target: a sandbox (a fresh one per call, or with
        session a session kept), or a session. Sandboxes and sessions name
        themselves (_tool_target), so that this module imports none."""
        self._lock = threading.Lock()
        self._owned = None
        kind = getattr(type(target), "_tool_target", None)
        if kind == "session":
            self._sandbox, self._session, self.session = None, target, True
        elif kind == "sandbox":
            self._sandbox, self._session, self.session = target, None, bool(session)
        else:
            raise TypeError(f"a tool runs on {kinds}, not {type(target).__name__}")

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
        except AgentjailError as e:  # closed, unavailable, refused code, serve unreachable
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
                note = self._replaced_note(self._owned.closed_reason)
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

    # Every tool: run_python, and over a session the file tools too.

    @property
    def names(self):
        return [d["name"] for d in self._definitions]

    def mcp_tools(self):
        """The MCP Tool objects, as `agentjail mcp` (--sessions) lists them."""
        return json.loads(json.dumps(self._definitions))

    def openai_tools(self):
        """Chat completions' `tools`: run_python, and a session's file tools."""
        return [{"type": "function",
                 "function": {"name": d["name"], "description": d["description"],
                              "parameters": d["inputSchema"], "strict": _strict(d)}}
                for d in self.mcp_tools()]

    def openai_responses_tools(self):
        """The Responses API's `tools`: run_python, and a session's file tools."""
        return [{"type": "function", "name": d["name"], "description": d["description"],
                 "parameters": d["inputSchema"], "strict": _strict(d)}
                for d in self.mcp_tools()]

    def anthropic_tools(self):
        """Anthropic's `tools`: run_python, and a session's file tools."""
        return [{"name": d["name"], "description": d["description"],
                 "input_schema": d["inputSchema"]} for d in self.mcp_tools()]

    def handle_openai(self, tool_call):
        """A chat-completions tool call (dict or SDK object) -> the "tool"
        message to append. Chat tool messages carry text only, so the
        images are not in it (their names are): handle_openai_calls returns
        them too, in a user message after the tool messages."""
        return self._openai_call(tool_call)[0]

    def _openai_call(self, tool_call):
        fn = _get(tool_call, "function", {})
        r = self.handle(_get(fn, "name"), _get(fn, "arguments", "{}"))
        return {"role": "tool", "tool_call_id": _get(tool_call, "id"), "content": r.text}, r

    def handle_openai_calls(self, tool_calls):
        """All the tool calls of one chat-completions assistant message ->
        the messages to append: a "tool" message for each, in order, then,
        if any call made images, one "user" message carrying them as
        image_url parts (data: URLs). Chat completions take images only in
        user messages, and a user message may not come between the tool
        messages that answer one assistant message, so it comes after."""
        messages, parts = [], []
        for tc in tool_calls or []:
            msg, r = self._openai_call(tc)
            messages.append(msg)
            for im in r.images:
                parts.append({"type": "text",
                              "text": f"Image {im.name} from tool call {msg['tool_call_id']}:"})
                parts.append({"type": "image_url", "image_url": {"url": _data_url(im)}})
        if parts:
            messages.append({"role": "user", "content": parts})
        return messages

    def handle_openai_response(self, item):
        """A Responses API function_call item -> its function_call_output.
        With images, output is a list: the text as input_text, then each
        image as input_image with a data: URL; without, the text alone."""
        r = self.handle(_get(item, "name"), _get(item, "arguments", "{}"))
        output = r.text
        if r.images:
            output = [{"type": "input_text", "text": r.text}] + [
                {"type": "input_image", "image_url": _data_url(im)} for im in r.images]
        return {"type": "function_call_output", "call_id": _get(item, "call_id"),
                "output": output}

    def handle_anthropic(self, block):
        """An Anthropic tool_use block -> its tool_result block, with the
        images as image blocks and is_error unless the program exited 0."""
        r = self.handle(_get(block, "name"), _get(block, "input", {}))
        content = [{"type": "text", "text": r.text}]
        for im in r.images:
            content.append({"type": "image",
                            "source": {"type": "base64", "media_type": im.mime,
                                       "data": base64.b64encode(im.data).decode()}})
        return {"type": "tool_result", "tool_use_id": _get(block, "id"), "content": content,
                "is_error": r.is_error}


def _data_url(im):
    return f"data:{im.mime};base64,{base64.b64encode(im.data).decode()}"


def _strict(definition):
    """OpenAI's strict mode needs every property required: list_files'
    optional path is not, so that tool is offered without it."""
    schema = definition["inputSchema"]
    return set(schema.get("required", [])) == set(schema.get("properties", {}))


def _arguments_bytes(name, arguments):
    """A call's arguments as the UTF-8 JSON text the library reads: the
    model's own text as it came, or a dict made into JSON. Returns (data,
    None), or (None, a ToolResult the model reads) for what is not JSON."""
    if isinstance(arguments, (bytes, bytearray)):
        arguments = bytes(arguments).decode("utf-8", "replace")
    if not isinstance(arguments, str):
        try:
            arguments = json.dumps(arguments)
        except (TypeError, ValueError) as e:
            return None, ToolResult(f"Invalid arguments for {name}: {e}", True)
    return arguments.encode("utf-8", "replace"), None
