"""Session.exec: a command in a session's sandbox (aj_session_exec), its
arguments made C, the call made as a run's is (cancellable, streamed to
on_stdout / on_stderr when given), the result an Execution."""
import errno

from ._listen import listener_for
from ._native import ffi, lib
from ._runs import result_call
from .config import c_strings
from .errors import InvalidCommand, ProcessError, SandboxError


def _c_command(x, command, keep):
    if isinstance(command, str):
        x.command = _c(command, "command", keep)
    elif isinstance(command, (list, tuple)) and command:
        if not all(isinstance(a, str) for a in command):
            raise TypeError("command: an argv list holds only str")
        # NULL-terminated, as struct aj_exec's argv is (a new array is
        # zeroed: its last entry stays NULL).
        argv = ffi.new("const char *[]", len(command) + 1)
        for i, a in enumerate(command):
            argv[i] = _c(a, f"argv[{i}]", keep)
        keep.append(argv)
        x.argv = argv
    else:
        raise TypeError(f"command must be a str (for /bin/sh -c) or a non-empty list (argv), "
                        f"not {command!r}")


def _c(value, what, keep):
    if "\0" in value:
        raise InvalidCommand(f"{what}: contains a NUL byte")
    c = ffi.new("char[]", value.encode("utf-8", "surrogateescape"))
    keep.append(c)
    return c


def c_exec(command, cwd, env, stdin, timeout):
    """struct aj_exec for these arguments, and what must outlive it."""
    x = ffi.new("struct aj_exec *")
    keep = []
    _c_command(x, command, keep)
    if cwd is not None:
        x.cwd = _c(str(cwd), "cwd", keep)
    if env:
        if not isinstance(env, dict):
            raise TypeError(f"env must be a dict of names to values, not {type(env).__name__}")
        pairs = c_strings("env", [f"{k}={v}" for k, v in env.items()], "variable")
        keep.append(pairs)
        x.env = pairs.array
        x.env_count = len(pairs.items)
    if stdin is not None:
        data = stdin.encode("utf-8") if isinstance(stdin, str) else bytes(stdin)
        buf = ffi.new("char[]", data or b"\0")
        keep.append(buf)
        x.stdin_data = ffi.cast("void *", buf)
        x.stdin_len = len(data)
    if timeout is not None:
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ValueError(f"timeout: {timeout!r} is not a positive number of seconds")
        x.timeout_sec = float(timeout)
    return x, keep


def exec_call(session, command, cwd, env, stdin, timeout, on_stdout, on_stderr):
    x, keep = c_exec(command, cwd, env, stdin, timeout)
    return _result_call(session, lambda token, stream, res: lib.aj_session_exec(
        session._handle, x, token, stream, res), on_stdout, on_stderr)


def _result_call(session, fn, on_stdout, on_stderr):
    """fn(token, stream, res): a call whose answer is a result (exec, a
    background command's wait), streamed to the callbacks when given; what
    the library refused before it started is InvalidCommand."""
    rcs = []

    def check(rc, res):
        rcs.append(rc)
        session._closed_rc(rc, res)

    try:
        return result_call(session, lambda token, stream, res: fn(
            token, ffi.NULL if stream is None else stream, res), None,
            listener_for(on_stdout, on_stderr, None), check_rc=check)
    except SandboxError as e:
        if rcs and rcs[0] in (-errno.EINVAL, -errno.EACCES, -errno.EFBIG, -errno.ENAMETOOLONG,
                              -errno.EILSEQ, -errno.EPERM) or \
                (e.execution.message or "").startswith("exec: cwd"):
            raise InvalidCommand(e.execution.message) from None
        raise


class Process:
    """A background command of a session (Session.spawn, or Session.process
    to re-attach by pid from anywhere that holds the session). Its output is
    kept in the sandbox: every wait() streams it from the start."""

    def __init__(self, session, pid, command=None):
        self.session, self.pid, self.command = session, pid, command

    def wait(self, on_stdout=None, on_stderr=None):
        """Its end, as an Execution (exit_code, stdout, stderr, status),
        with its output passed to the callbacks as it comes."""
        s = self.session
        return _result_call(s, lambda token, stream, res: lib.aj_session_proc_wait(
            s._handle, self.pid, token, stream, res), on_stdout, on_stderr)

    def send_stdin(self, data):
        data = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        self.session._lib_call(ProcessError, lib.aj_session_proc_input, self.pid, data,
                               len(data), False)

    def close_stdin(self):
        self.session._lib_call(ProcessError, lib.aj_session_proc_input, self.pid, b"", 0, True)

    def kill(self, signal=9):
        """Sends signal (default SIGKILL) to its process group."""
        self.session._lib_call(ProcessError, lib.aj_session_proc_signal, self.pid, int(signal))

    def __repr__(self):
        return f"<Process {self.pid} {self.command!r}>"


class Terminal(Process):
    """A command on a terminal of the session's own (Session.pty): what it
    shows streams to wait()'s on_stdout (a terminal has one stream, kept in
    the sandbox as a window of the last output-limit bytes), send_stdin()
    types keys ("\\x03" is Ctrl-C), close_stdin() types Ctrl-D."""

    def resize(self, cols, rows):
        """Its new size: its foreground job gets SIGWINCH."""
        self.session._lib_call(ProcessError, lib.aj_session_pty_resize, self.pid,
                               _side(cols, "cols"), _side(rows, "rows"))

    def __repr__(self):
        return f"<Terminal {self.pid} {self.command!r}>"


def _side(n, what):
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 4096:
        raise ValueError(f"{what}: {n!r} is not a terminal side (1 to 4096)")
    return n


def pty_call(session, command, cols, rows, cwd, env, timeout):
    command = ["/bin/bash"] if command is None else command
    x, keep = c_exec(command, cwd, env, None, timeout)
    pid = ffi.new("uint32_t *")
    session._lib_call(ProcessError, lib.aj_session_pty, x, _side(cols, "cols"),
                      _side(rows, "rows"), pid)
    return Terminal(session, pid[0], command if isinstance(command, str) else " ".join(command))


def spawn_call(session, command, cwd, env, stdin, timeout, keep_stdin):
    x, keep = c_exec(command, cwd, env, stdin, timeout)
    pid = ffi.new("uint32_t *")
    session._lib_call(InvalidCommand, lib.aj_session_spawn, x, bool(keep_stdin), pid)
    return Process(session, pid[0], command if isinstance(command, str) else " ".join(command))


def procs_call(session):
    pprocs = ffi.new("struct aj_proc_info **")
    pcount = ffi.new("size_t *")
    session._lib_call(ProcessError, lib.aj_session_procs, pprocs, pcount)
    try:
        return [(p.pid, ffi.string(p.command).decode("utf-8", "replace"), bool(p.running))
                for p in (pprocs[0][i] for i in range(pcount[0]))]
    finally:
        lib.aj_proc_list_free(pprocs[0], pcount[0])
