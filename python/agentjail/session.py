"""Session: one sandbox that lives across calls, as a notebook's kernel.

    with Sandbox(tier="container", image="datascience").session() as s:
        s.put_file("data.csv", csv_bytes)
        s.run("import pandas as pd; df = pd.read_csv('data.csv')")
        ex = s.run("df.plot(); df.describe()")
        ex.images[0].data          # the chart, PNG bytes

Globals, imports and workspace files persist; each call gets the per-call
limits, the session as a whole its memory, pids and disk. A call that ends
the interpreter loses its state (files stay) and the next call's message
says so. The session closes on close(), its idle timeout or its lifetime;
calls then raise SessionClosed with the reason."""
import errno
import os

from ._calls import Calls, Handle, blocking
from ._native import ffi, lib
from ._exec import Process, exec_call, procs_call, pty_call, spawn_call
from ._listen import listener_for
from ._runs import execute, in_language, language_number
from ._streams import RunMethods
from .config import c_strings
from .errors import (ConfigError, EgressError, FileTransferError, SandboxUnavailable,
                     SessionClosed, SessionLimitReached)
from .checkpoint import MAX_FORK, checkpoint_error, info_of, key_of
from .result import FileInfo
from .tools import RunPythonTool

_TYPES = {lib.AJ_FILE_REGULAR: "file", lib.AJ_FILE_DIRECTORY: "directory",
          lib.AJ_FILE_SYMLINK: "symlink", lib.AJ_FILE_OTHER: "other"}


class Session(RunMethods, Handle):
    _tool_target = "session"  # what RunPythonTool runs on (see agentjail.tools)

    def __init__(self, config, _handle=None):
        self._config = config
        self._calls = Calls(lambda: SessionClosed("closed by the caller"))
        if _handle is not None:
            # A session the library opened otherwise (restore, fork).
            self._handle = _handle
            self.id = ffi.string(lib.aj_session_id(_handle)).decode()
            return
        out = ffi.new("struct aj_session **")
        err = ffi.new("struct aj_error *")
        rc = lib.aj_session_open(config.c, out, err)
        if rc == -errno.EMFILE:
            # The library's own cap on open sessions, not the tier: the
            # caller can close one (serve answers the same as 429).
            raise SessionLimitReached(config.c.session.max_sessions,
                                      ffi.string(err.message).decode("utf-8", "replace"))
        if rc:
            message, reason = config.open_failure(err)
            raise SandboxUnavailable(config.tier, reason,
                                     f"a {config.tier} session cannot start: {message}")
        self._handle = out[0]
        self.id = ffi.string(lib.aj_session_id(self._handle)).decode()

    @property
    def tier(self):
        return self._config.tier

    @property
    def closed_reason(self):
        """None while the session is open; else why it closed."""
        if self._handle == ffi.NULL:
            return "closed by the caller"
        r = lib.aj_session_closed_reason(self._handle)
        return ffi.string(r).decode("utf-8", "replace") if r != ffi.NULL else None

    def _check_open(self, rc, err_message=None):
        if rc == -errno.ESHUTDOWN:
            raise SessionClosed(self.closed_reason or err_message or "closed")

    # run(code, timeout=None, on_stdout=, on_stderr=, on_image=), stream,
    # submit, arun, astream (RunMethods): a call of the session, with the
    # images it made (figures left open, new images under outputs/).
    def _execute(self, code, timeout, listener=None, started=None, language="python"):
        plain, streaming = in_language(language, lib.aj_session_run_cancellable,
                                       lib.aj_session_run_streaming, lib.aj_session_run_lang)
        return execute(self, plain, streaming, code, timeout, listener, started,
                       self._closed_rc)

    def cell(self, code, *, value=True, context=None, fresh=False, timeout=None,
             on_stdout=None, on_stderr=None, language="python"):
        """Runs code as a notebook cell (aj_session_run_cell): value, a last
        bare expression is not printed but returned as Execution.value (and
        value_html); context, a namespace of the interpreter's own by name
        (its own variables; modules and files are the session's); fresh,
        the context's variables (JavaScript: node's state) forgotten first.
        value and context are Python's only."""
        number = language_number(language)
        keep = []

        def cell_of(c, n):
            cell = ffi.new("struct aj_cell *")
            buf = ffi.new("char[]", bytes(c) or b"\0")
            keep.append(buf)
            cell.lang, cell.code, cell.len = number, buf, n
            cell.value, cell.fresh = bool(value), bool(fresh)
            if context is not None:
                name = ffi.new("char[]", str(context).encode("utf-8"))
                keep.append(name)
                cell.context = name
            return cell

        plain = (lambda h, c, n, token, res:
                 lib.aj_session_run_cell(h, cell_of(c, n), token, ffi.NULL, res))
        streaming = (lambda h, c, n, token, stream, res:
                     lib.aj_session_run_cell(h, cell_of(c, n), token, stream, res))
        def check(rc, res):
            # What the cell asks that its language has not, or a context
            # name the library refuses: the caller's to fix.
            if rc == -errno.EINVAL and res.message != ffi.NULL:
                message = ffi.string(res.message).decode("utf-8", "replace")
                if message.startswith("run_cell: "):
                    lib.aj_result_free(res)
                    raise ConfigError(message[len("run_cell: "):])
            self._closed_rc(rc, res)

        return execute(self, plain, streaming, code, timeout,
                       listener_for(on_stdout, on_stderr, None, self._listener), None, check)

    def exec(self, command, *, cwd=None, env=None, stdin=None, timeout=None,
             on_stdout=None, on_stderr=None):
        """Runs a command in the session's sandbox, as one more program of
        the session: its user, workspace, limits and egress rules. command:
        a str for /bin/sh -c, or a list (argv, no shell). cwd: a directory
        of the workspace (relative); env: a dict added to the session's
        environment (checked as the sandbox's own variables); stdin: bytes
        or str; timeout: the command's own deadline in seconds (at most the
        sandbox's; its whole process group is killed and the session keeps
        its state). on_stdout / on_stderr: called with its output as it
        comes. Returns an Execution as run() does: exit_code, stdout,
        stderr, status. A refused command raises InvalidCommand."""
        return exec_call(self, command, cwd, env, stdin, timeout, on_stdout, on_stderr)

    def spawn(self, command, *, cwd=None, env=None, stdin=None, timeout=None,
              keep_stdin=False):
        """Starts a command in the background and returns its Process at
        once (pid, wait(), kill(), send_stdin(), close_stdin()). stdin goes
        in first, then its stdin closes unless keep_stdin. timeout: its own
        deadline (None: the session's life). It dies with the session."""
        return spawn_call(self, command, cwd, env, stdin, timeout, keep_stdin)

    def pty(self, cols=80, rows=24, command=None, *, cwd=None, env=None, timeout=None):
        """Starts command (None: /bin/bash) on a terminal of the session's
        own, cols x rows, and returns its Terminal at once: send_stdin()
        types, wait(on_stdout=...) streams what it shows, resize(cols, rows),
        kill(). Same sandbox and limits as any command; the docker tier
        offers no terminal (ProcessError saying why)."""
        return pty_call(self, command, cols, rows, cwd, env, timeout)

    def processes(self):
        """The session's background commands: [(pid, command, running)]."""
        return procs_call(self)

    def process(self, pid):
        """A handle on the background command pid (to wait on, feed or kill
        from another thread or caller)."""
        return Process(self, int(pid))

    def _closed_rc(self, rc, res):
        if rc == -errno.ESHUTDOWN:
            lib.aj_result_free(res)
            self._check_open(rc)

    def _file_call(self, fn, *args):
        self._lib_call(FileTransferError, fn, *args)

    def _lib_call(self, error, fn, *args):
        """fn(handle, *args, err); a failure raised as error(errno, message),
        or SessionClosed once the session has ended."""
        err = ffi.new("struct aj_error *")
        call = self._calls.begin()
        try:
            rc = blocking(call, fn, self._handle, *args, err)
        finally:
            self._calls.end(call)
        if rc:
            message = ffi.string(err.message).decode("utf-8", "replace")
            self._check_open(rc, message)
            raise error(-rc, message)

    def put_file(self, path, data):
        """Writes a workspace file (created or replaced, atomically; its
        directories made). data: bytes, or str (written as UTF-8)."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        data = bytes(data)
        self._file_call(lib.aj_session_put, os.fsencode(path), data, len(data))

    def get_file(self, path):
        """The bytes of a workspace file."""
        pdata = ffi.new("void **")
        plen = ffi.new("size_t *")
        self._file_call(lib.aj_session_get, os.fsencode(path), pdata, plen)
        try:
            return ffi.unpack(ffi.cast("char *", pdata[0]), plen[0])
        finally:
            lib.aj_free(pdata[0])

    def list_files(self, directory=""):
        """The entries of a workspace directory ("" for the workspace)."""
        pentries = ffi.new("struct aj_file_info **")
        pcount = ffi.new("size_t *")
        self._file_call(lib.aj_session_list, os.fsencode(directory), pentries, pcount)
        try:
            return [FileInfo(ffi.string(e.name).decode("utf-8", "replace"),
                             _TYPES.get(e.type, "other"), e.size)
                    for e in (pentries[0][i] for i in range(pcount[0]))]
        finally:
            lib.aj_file_list_free(pentries[0], pcount[0])

    def egress_keep(self, hosts=(), cidrs=()):
        """Narrows the session's egress rules to these (each exactly as the
        deployer gave it, "pypi.org:443"): open for `pip install`, then
        lock with egress_keep() and no rules at all. A rule the session
        does not have raises EgressError naming it, and nothing changes;
        connections open now are cut."""
        h = c_strings("hosts", hosts, "rule")
        c = c_strings("cidrs", cidrs, "rule")
        self._lib_call(EgressError, lib.aj_session_egress_keep, h.array, len(h.items),
                       c.array, len(c.items))

    def secrets_keep(self, names=()):
        """Narrows the session's secrets (docs/secrets.md) to these names
        ("GH" or ["GH", "NPM"]): the proxy sends the others no more, at once,
        and cuts the connections that carry them; secrets_keep() drops all.
        A name the session does not have raises EgressError naming it
        (errno EPERM), and nothing changes: a call may only drop secrets,
        never add one."""
        n = c_strings("names", names, "name")
        self._lib_call(EgressError, lib.aj_session_secrets_keep, n.array, len(n.items))

    def checkpoint(self, path, key):
        """Writes the session's state to path (mode 0600, replaced
        atomically) under key (a CheckpointKey, or 32 bytes): its
        workspace's files and what its cells' namespaces hold. The session
        goes on. Returns a CheckpointInfo; what could not be carried is in
        its note. Sandbox.restore(path, key) opens it again, anywhere the
        key is."""
        k = key_of(key)._c()
        info = ffi.new("struct aj_checkpoint_info *")
        self._lib_call(checkpoint_error, lib.aj_session_checkpoint, k, os.fsencode(path), info)
        return info_of(info)

    def fork(self, n=1):
        """n new sessions (1 to 100), each with this one's state now,
        independent of each other and of this one, which goes on. All or
        none: SessionLimitReached when they would pass max-sessions."""
        if not isinstance(n, int) or isinstance(n, bool):
            raise ConfigError(f"fork: n must be an int, not {type(n).__name__}")
        if not 1 <= n <= MAX_FORK:
            raise ConfigError(f"fork: n must be within 1 to {MAX_FORK}, not {n}")
        out = ffi.new("struct aj_session *[]", n)
        err = ffi.new("struct aj_error *")
        call = self._calls.begin()
        try:
            rc = blocking(call, lib.aj_session_fork, self._handle, n, out, ffi.NULL, err)
        finally:
            self._calls.end(call)
        if rc == -errno.EMFILE:
            raise SessionLimitReached(self._config.c.session.max_sessions,
                                      ffi.string(err.message).decode("utf-8", "replace"))
        if rc:
            message = ffi.string(err.message).decode("utf-8", "replace")
            self._check_open(rc, message)
            raise checkpoint_error(-rc, message)
        return [Session(self._config, _handle=out[i]) for i in range(n)]

    def pause(self):
        """Frees the session's sandbox (its CPU and memory) and keeps its
        state; the next call, or resume(), brings it back as it was. A
        paused session has no idle timeout; its lifetime still ends it.
        Returns a CheckpointInfo."""
        info = ffi.new("struct aj_checkpoint_info *")
        self._lib_call(checkpoint_error, lib.aj_session_pause, info)
        return info_of(info)

    def resume(self):
        """Brings a paused session back now (a call would do it too)."""
        self._lib_call(checkpoint_error, lib.aj_session_resume)

    @property
    def paused(self):
        return self._handle != ffi.NULL and bool(lib.aj_session_paused(self._handle))

    def cancel(self):
        """Stops the call in progress (its interpreter, and so its state;
        files stay). Returns how many calls were stopped."""
        return self._calls.cancel()

    def tool(self):
        """The run_python tool bound to this session (see agentjail.tools)."""
        return RunPythonTool(self, session=True)

    # close() (Handle): destroys the session's sandbox, stopping a call in
    # progress.
    _free = staticmethod(lib.aj_session_close)

    @property
    def closed(self):
        return self._calls.closed or self.closed_reason is not None

    def __repr__(self):
        return f"<Session {self.id} tier={self.tier}{' closed' if self.closed else ''}>"
