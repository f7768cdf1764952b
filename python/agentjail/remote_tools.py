"""The run_python tool over a remote sandbox or session (connect()): the
same shapes and handlers as the local tool (_tool_shapes.py), its
definition as serve states it (GET /v1/tools: the library's words for the
tier's limits and the packages its sandbox really has), its results in the
library's words (Execution.text()).

Over serve the tool is run_python alone: the local session tool's file
tools (upload_file, download_file, list_files) read and write the
caller's own disk, which a remote caller's program would reach through
put_file / get_file instead (docs/python.md#remote)."""
import json

from ._tool_shapes import ToolResult, ToolShapes, _arguments_bytes

NAME = "run_python"


def _code_argument(data):
    """The code of a call's JSON arguments, or (None, why): the C library's
    checks (src/api/tool.c tool_code_argument) in its words."""
    try:
        args = json.loads(data.decode("utf-8", "replace"))
    except ValueError as e:
        return None, f"not a JSON object ({e.msg})"
    if not isinstance(args, dict):
        return None, "arguments must be an object with a string 'code'"
    for k in args:
        if k != "code":
            return None, f"unexpected argument '{k[:64]}': {NAME} takes only 'code'"
    if not isinstance(args.get("code"), str):
        return None, "'code' must be a string holding the Python program"
    return args["code"], None


class RemoteRunPythonTool(ToolShapes):
    """run_python over a RemoteSandbox (a fresh sandbox per call), a
    RemoteSession, or a RemoteSandbox with session=True (a session opened at
    the first call, and opened anew, with a note for the model, if it
    closes)."""

    def __init__(self, target, session=False):
        self._bind(target, session, "a RemoteSandbox or a RemoteSession")
        self._definitions = [_served_definition(target._client, self.session)]
        self._definition = self._definitions[0]

    def call(self, arguments):
        """Runs one call (arguments: a dict or the model's JSON text). Never
        raises for what the model sent or its code did."""
        data, refused = _arguments_bytes(NAME, arguments)
        if refused:
            return refused
        code, why = _code_argument(data)
        if why is not None:
            return ToolResult(f"Invalid arguments for {NAME}: {why}", True)
        return self.run(code)

    @staticmethod
    def _replaced_note(reason):
        # The words of aj_session_replaced_note (the C library's), which a
        # remote-only install has not.
        return (f"note: a new session was started, because the previous one closed "
                f"({reason}): its variables, imports and workspace files are gone.")

    def handle(self, name, arguments):
        if name == NAME:
            return self.call(arguments)
        return ToolResult(f"Unknown tool: {name}", True)


def _served_definition(client, session):
    """run_python as serve defines it for this use (GET /v1/tools)."""
    q = "true" if session else "false"
    return client._json("GET", f"/v1/tools?session={q}")[1]["tools"][0]
