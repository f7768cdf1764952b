"""The tools for a model: run_python (and, over a session, the file tools
upload_file, download_file and list_files), their definitions in the shapes
the big model APIs take, and handlers that turn a tool call into what a
model reads. The words are the library's (src/api/tool.c, tool_files.c),
the same the MCP server sends, so a model sees one set of tools however the
sandbox is reached; run_python's description names the notable packages the
sandbox really has (probed once per sandbox).

    tool = sandbox.tool()
    client.chat.completions.create(..., tools=tool.openai_tools())
    messages += tool.handle_openai_calls(message.tool_calls)   # images too

    client.messages.create(..., tools=tool.anthropic_tools())
    for block in response.content:
        if block.type == "tool_use":
            results.append(tool.handle_anthropic(block))
"""
import base64
import json

from ._calls import blocking
from ._native import ffi, lib
from .errors import AgentjailError
from ._tool_shapes import ToolResult, ToolShapes, _arguments_bytes
from .result import Image

NAME = "run_python"


class RunPythonTool(ToolShapes):
    """The run_python tool over a Sandbox (a fresh sandbox per call), a
    Session, or a Sandbox with session=True (a session opened at the first
    call, and opened anew, with a note for the model, if it closes)."""

    def __init__(self, target, session=False):
        self._bind(target, session, "a Sandbox or a Session")
        self._config = target._config
        self._definitions = _tool_list(self._sandbox, self._config, self.session)
        self._definition = self._definitions[0]

    # ---- calls ----

    def call(self, arguments):
        """Runs one call. arguments: the call's arguments as a dict or as
        the JSON text the model wrote. Never raises for what the model sent
        or what its code did: those are results the model reads."""
        data, refused = _arguments_bytes(NAME, arguments)
        if refused:
            return refused
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

    # run(code), close(), the session it keeps: ToolShapes'.

    @staticmethod
    def _replaced_note(reason):
        p = lib.aj_session_replaced_note(reason.encode())
        try:
            return ffi.string(p).decode() if p != ffi.NULL else None
        finally:
            lib.aj_free(p)

    # ---- the APIs' message shapes ----

    def handle(self, name, arguments):
        """Runs a call of any of this tool's tools by name (run_python, or a
        session's upload_file, download_file, list_files) and returns its
        ToolResult. An unknown name is a result the model reads."""
        if name == self.name:
            return self.call(arguments)
        if self.session and name in self.names:
            return self._file_call(name, arguments)
        return ToolResult(f"Unknown tool: {name}", True)

    def _file_call(self, name, arguments):
        data, refused = _arguments_bytes(name, arguments)
        if refused:
            return refused
        try:
            session, note = self._current_session()
        except AgentjailError as e:
            return ToolResult(f"{name}: {e}", True)
        # The session's own bookkeeping, as its put_file does: close() waits
        # for this call before the handle is freed.
        call = session._calls.begin()
        try:
            p = blocking(call, lib.aj_session_tool_call, session._handle, name.encode(), data,
                         len(data))
        finally:
            session._calls.end(call)
        if p == ffi.NULL:
            raise MemoryError("agentjail: out of memory")
        try:
            result = json.loads(ffi.string(p).decode())
        finally:
            lib.aj_free(p)
        texts = [b["text"] for b in result["content"] if b["type"] == "text"]
        images = [Image(name=f"{name}-{i + 1}", mime=b["mimeType"], data=base64.b64decode(b["data"]))
                  for i, b in enumerate(b for b in result["content"] if b["type"] == "image")]
        text = "\n".join(texts)
        if note:
            text = f"{note}\n\n{text}"
        return ToolResult(text, bool(result.get("isError")), images)


def _tool_list(sandbox, config, session):
    """The library's tool list for this sandbox (run_python's description
    naming the packages it has, probed once per sandbox). A tool over a
    Session alone opens a sandbox of the same configuration for the probe
    and closes it."""
    if sandbox is not None and not sandbox.closed:
        # As a run would: close() waits for the probe before freeing it.
        call = sandbox._calls.begin()
        try:
            p = blocking(call, lib.aj_tool_list, sandbox._handle, session)
        finally:
            sandbox._calls.end(call)
    else:
        out = ffi.new("struct aj_sandbox **")
        err = ffi.new("struct aj_error *")
        if lib.aj_open(config.c, out, err):
            # Nothing to probe with: run_python alone, in the library's
            # words for a sandbox not known (only the standard library).
            return [_definition(config, session)]
        try:
            p = lib.aj_tool_list(out[0], session)
        finally:
            lib.aj_close(out[0])
    return _take_json(p)


def _definition(config, session):
    return _take_json(lib.aj_tool_definition(config.c, session))


def _take_json(p):
    if p == ffi.NULL:
        raise MemoryError("agentjail: out of memory")
    try:
        return json.loads(ffi.string(p).decode())
    finally:
        lib.aj_free(p)


def run_python_tool(target, session=False):
    """The run_python tool over a Sandbox or a Session (see RunPythonTool)."""
    return RunPythonTool(target, session=session)


