# agentjail's session interpreter: the Python that stays alive inside a
# session's sandbox, on every tier, run as `python3 -I -u -c <this file>`.
#
# fd 0 is /dev/null, fd 1 and 2 the session's stdout and stderr, fd 3 the
# requests (one JSON object a line, from the host), fd 4 the replies (one
# JSON object a line, to the host). Every request carries a sequence number
# that its reply echoes, so a reply left over from an earlier call is never
# taken for the answer to this one.
#
#   {"seq", "op": "run", "code": b64, "cpu": s, "images": n, "image_bytes": n,
#    "memory_mb": n, "value": bool, "value_max": bytes, "context": name,
#    "fresh": bool}
#       -> {"seq", "exit": code, "images": [{name, mime, data}], "dropped": n,
#           "cpu_us": n, "rss_kb": n}, and "memory_error": true when an
#           uncaught MemoryError (any subclass) ended the cell (its exit
#           code is then Python's 1; rule S7 of docs/design.md); with
#           "value", a last bare expression's value is not printed but
#           answered: "value": {"text": repr, "html": its _repr_html_()},
#           each cut to value_max bytes (a notebook cell's result); with
#           "context", the cell runs in that namespace of its own (made on
#           first use, at most MAX_CONTEXTS at once) instead of __main__'s;
#           with "fresh", the namespace's variables are forgotten first (a
#           kernel's restart; a fresh context given no code is dropped)
#   {"seq", "op": "put", "path": p, "data": b64} -> {"seq", "ok": true}
#   {"seq", "op": "get", "path": p, "max": n}    -> {"seq", "data": b64}
#   {"seq", "op": "get", "path": p, "max": n, "offset": o}
#       -> {"seq", "data": b64, "size": n}: at most max bytes from offset,
#          and the file's size (a download in parts; the host checks the cap)
#   {"seq", "op": "list", "path": p}             -> {"seq", "entries": [...]}
#   {"seq", "op": "exec", "shell": cmd | "argv": [..], "cwd": p, "env": {..},
#    "stdin": b64 (absent: /dev/null), "timeout_ms": n, "cpu": s}
#       -> {"seq", "exit": code} or {"seq", "signal": n}, "timed_out": true
#          when its deadline killed it, "cpu_us", "rss_kb" (op_exec)
#   {"seq", "op": "spawn", as exec but "stdin": bool, "timeout_ms" (0: none),
#    "cap": bytes kept of each stream} -> {"seq", "pid": n}: a background
#          command (Proc below), its output kept here for proc_read
#   {"seq", "op": "proc_read", "pid", "out": offset, "err": offset,
#    "wait_ms": n, "max": bytes, "nudge": bool (the host may wake the wait:
#    Nudge below)}
#       -> {"seq", "out": b64, "err": b64 (from the offsets, at most max
#          each), "out_end", "err_end", "out_truncated", "err_truncated",
#          "ended": bool, and once ended as exec's reply: "exit" or
#          "signal", "timed_out", "signalled" (a proc_signal reached
#          it), "output_limit"}; an offset past what
#          the stream holds -> {"seq", "error", "errno": "EINVAL"}
#   {"seq", "op": "proc_input", "pid", "data": b64, "close": bool}
#   {"seq", "op": "proc_signal", "pid", "signal": n}   (its process group)
#   {"seq", "op": "pty", as spawn but "cols", "rows" and no "stdin"}
#       -> {"seq", "pid": n}: a command on a pseudo-terminal of its own (its
#          stdin, stdout and stderr, its controlling terminal); its output
#          is read as a background command's "out", kept as a window of
#          the last cap bytes (a terminal never ends for output_limit):
#          a read from before the window answers "out_from" where its data
#          starts. proc_input writes to the terminal.
#   {"seq", "op": "proc_resize", "pid", "cols", "rows"}   (a pty's size)
#   {"seq", "op": "procs"} -> {"seq", "procs": [{"pid", "command", "running", "pty"}]}
#   {"seq", "op": "js", "code": b64, "cpu": s, "memory_mb": n}
#       -> {"seq", "exit": code} or {"seq", "signal": n} (node ended during
#          the cell), "cpu_us", "rss_kb", "images": [], and "js_restarted":
#          true when an earlier cell's node had ended (its state is gone);
#          {"seq", "error", "errno"} when node cannot start (op_js)
#   {"seq", "op": "js", ..., "fresh": true}: node is ended first, so the
#       cell starts with no JavaScript state (a kernel's restart)
#   {"seq", "op": "ts", as "js"}: a TypeScript cell, its types stripped in
#       the same node (src/core/ts_strip.js), sharing the JavaScript state
#       -> as "js"; {"seq", "error", "errno": "ENOENT"} when the image has
#          no TypeScript compiler
#   {"seq", "op": "save"} -> {"seq", "size", "files", "left_out": [[context,
#       name, why]], "procs": [running pids], "javascript":
#       bool}: the session's state written to the workspace's STATE_FILE
#       (src/core/repl_state.py), which the host reads with "get" in parts
#   {"seq", "op": "state_write", "offset", "data": b64} -> {"seq", "size"}:
#       a part of a state file, in order
#   {"seq", "op": "load"} -> {"seq", "files", "left_out", "loaded": bool}:
#       the state file written back into this session, then removed
#   {"seq", "op": "state_drop"}: the state file removed
#   a process op on a pid that is not the session's -> {"seq", "error", "errno": "ESRCH"}
#   a file operation that fails                  -> {"seq", "error", "errno"}
#
# Before it acts on a request it answers {"ack": SEQ}: the host then knows
# the request was taken (see "unread" in src/core/session_call.h).
#
# This file is not a protection: the cells run in this same interpreter and
# may rewrite any of it. Whatever it answers, the host treats as the
# session's own output: size-capped, parsed strictly, and able to mislabel
# nothing but this session's own results. The limits that matter (uid,
# namespaces, seccomp, rlimits, cgroups, the wall clock) were set before this
# interpreter started, from outside.
#
# The build puts src/core/exit_rule.py (system_exit_code, the SystemExit
# rule the warm zygote shares), src/core/node_flags.py (how node starts,
# shared with a one-shot JavaScript run), src/core/repl_state.py (a
# session's state as a file) and REPL_JS (src/core/repl.js, the
# JavaScript interpreter, as a string) right after this header.
import ast
import base64
import errno
import importlib
import io
import json
import linecache
import math
import os
import resource
import stat
import sys
import traceback
import types

REQUESTS, REPLIES = 3, 4
WORKSPACE = "/tmp/work"
OUTPUTS = "outputs"
IMAGE_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".svg": "image/svg+xml",
    ".webp": "image/webp",
}
LIST_MAX = 10000
REPL_FILE = __file__ if "__file__" in globals() else "<string>"


class FileOpError(Exception):
    def __init__(self, number, message):
        super().__init__(message)
        self.errno_name = errno.errorcode.get(number, "EIO")


def reply(obj):
    data = (json.dumps(obj, ensure_ascii=True, separators=(",", ":")) + "\n").encode()
    view = memoryview(data)
    while view:
        n = os.write(REPLIES, view)
        view = view[n:]


def text(name):
    """A file name as valid UTF-8: undecodable bytes show as U+FFFD."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


# ---- cells ----

def trimmed(tb):
    """The traceback without this file's frames, as `python3 main.py` shows it."""
    while tb is not None and tb.tb_frame.f_code.co_filename == REPL_FILE:
        tb = tb.tb_next
    return tb


def flush():
    for f in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            f.flush()
        except Exception:
            pass


def run_cell(source, number, namespace, shown=None):
    """The cell's exit code, and whether an uncaught MemoryError (any
    subclass) ended it. shown: a list the last bare expression's value is
    appended to instead of being printed (a notebook cell's result)."""
    name = "<cell %d>" % number
    lines = source.decode("utf-8", "replace").splitlines(True)
    # Tracebacks show the cell's own lines, as they would a file's.
    linecache.cache[name] = (len(source), None, lines, name)
    try:
        tree = ast.parse(source, name, "exec")
    except (SyntaxError, ValueError) as e:
        # As Python reports a program that does not compile: no frames.
        traceback.print_exception(type(e), e, None)
        return 1, False
    # A package an earlier cell installed (PIP_TARGET): the import system
    # forgets that its directory was missing when first looked at.
    importlib.invalidate_caches()
    try:
        # A last bare expression is shown, as in any Python prompt.
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, name, "exec"), namespace)
        if last is not None:
            value = eval(compile(last, name, "eval"), namespace)
            if value is not None:
                namespace["_"] = value
                if shown is None:
                    print(repr(value))
                else:
                    shown.append(value)
        return 0, False
    except SystemExit as e:
        return system_exit_code(e), False
    except BaseException as e:  # noqa: B902 - reported as Python would
        tb = trimmed(e.__traceback__)
        try:
            traceback.print_exception(type(e), e, tb)
        except Exception:
            pass
        # Any MemoryError subclass too: the status rules' fact that a
        # MemoryError ended the cell (rule S7; src/core/launch.py for
        # runs), beside Python's own exit code.
        memory_error = isinstance(e, MemoryError)
        del e, tb
        return 1, memory_error


def set_cpu_limit(seconds):
    """This call's CPU budget: the soft limit moves to what was used plus
    the call's share. The hard limit, the session's total, was set from
    outside and cannot be raised from in here."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    spent = math.ceil(used.ru_utime + used.ru_stime)
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    want = spent + seconds
    if hard != resource.RLIM_INFINITY:
        want = min(want, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (want, hard))


def limit_memory(memory_mb):
    """Where no address-space limit stands before the session's memory
    cgroup (container, docker, microvm; process and gvisor have RLIMIT_AS
    at the memory limit), a data limit below the cgroup's: an allocation
    past it is a MemoryError in the cell, which keeps the session's state,
    where the cgroup's OOM killer would end the interpreter and lose it.
    The headroom is for what the cgroup counts beside this interpreter's
    data (its stack and mapped files, the workspace's tmpfs pages, a PID 1
    of the sandbox's): what fills those is still the OOM killer's. Not a
    protection (the cgroup is): a cell may only lower it further."""
    if not memory_mb or resource.getrlimit(resource.RLIMIT_AS)[0] != resource.RLIM_INFINITY:
        return
    total = int(memory_mb) << 20
    want = max(total - max(total // 8, 32 << 20), total // 2)
    hard = resource.getrlimit(resource.RLIMIT_DATA)[1]
    if hard == resource.RLIM_INFINITY or hard > want:
        resource.setrlimit(resource.RLIMIT_DATA, (want, want))


def image_snapshot():
    seen = {}
    try:
        with os.scandir(OUTPUTS) as it:
            for entry in it:
                ext = os.path.splitext(entry.name)[1].lower()
                if ext in IMAGE_TYPES and entry.is_file(follow_symlinks=False):
                    st = entry.stat(follow_symlinks=False)
                    seen[entry.name] = (st.st_mtime_ns, st.st_size)
    except OSError:
        pass
    return seen


def read_image(name, limit):
    fd = os.open(os.path.join(OUTPUTS, name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, limit + 1)
    finally:
        os.close(fd)


def collect_images(before, most, limit):
    images, dropped = [], 0

    def add(name, mime, data):
        nonlocal dropped
        if data is None or len(data) > limit or len(images) >= most:
            dropped += 1
        else:
            images.append({"name": text(name), "mime": mime,
                           "data": base64.b64encode(data).decode()})

    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        try:
            numbers = list(plt.get_fignums())
        except Exception:
            numbers = []
        for number in numbers:
            try:
                figure = plt.figure(number)
                buf = io.BytesIO()
                figure.savefig(buf, format="png")
                add("figure-%d.png" % number, "image/png", buf.getvalue())
            except Exception as e:
                print("agentjail: figure %d could not be saved: %s" % (number, e),
                      file=sys.stderr)
            finally:
                try:
                    plt.close(number)
                except Exception:
                    pass
    after = image_snapshot()
    for name in sorted(after):
        if before.get(name) != after[name]:
            try:
                data = read_image(name, limit)
            except OSError:
                data = None
            add(OUTPUTS + "/" + name, IMAGE_TYPES[os.path.splitext(name)[1].lower()], data)
    return images, dropped


def usage():
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime
    return cpu, max(s.ru_maxrss, c.ru_maxrss)


MAX_CONTEXTS = 32


def fresh_namespace():
    """A namespace as __main__'s starts: a cell defined in it sees only
    the builtins."""
    return {"__name__": "__main__", "__builtins__": __builtins__}


def namespace_for(req, state):
    """The cell's namespace: __main__'s, or its context's (made on first
    use); forgotten first when "fresh". None when the context is dropped
    (fresh, no code) or cannot be made (printed on stderr, the cell's
    error)."""
    name, fresh = req.get("context"), bool(req.get("fresh"))
    if name is None:
        if fresh:
            main = state["namespace"]
            main.clear()
            main.update(fresh_namespace())
        return state["namespace"]
    contexts = state["contexts"]
    if fresh:
        contexts.pop(name, None)
        if not req.get("code"):
            return None
    if name not in contexts:
        if len(contexts) >= MAX_CONTEXTS:
            os.write(2, ("context %s: the session has %d contexts, the most it keeps at "
                         "once: restart one with no code to drop it\n"
                         % (name, MAX_CONTEXTS)).encode())
            return None
        contexts[name] = fresh_namespace()
    return contexts[name]


def op_run(req, state):
    state["cells"] += 1
    set_cpu_limit(int(req["cpu"]))
    limit_memory(req.get("memory_mb"))
    before = image_snapshot()
    cpu0, _ = usage()
    shown = [] if req.get("value") else None
    namespace = namespace_for(req, state)
    if namespace is None:
        dropped = bool(req.get("fresh")) and not req.get("code")
        return {"exit": 0 if dropped else 1, "images": [], "dropped": 0, "cpu_us": 0,
                "rss_kb": usage()[1]}
    code, memory_error = run_cell(base64.b64decode(req["code"]), state["cells"],
                                  namespace, shown)
    flush()
    value = cell_value(shown[0], int(req.get("value_max") or 0)) if shown else None
    images, dropped = collect_images(before, int(req["images"]), int(req["image_bytes"]))
    flush()
    cpu1, rss = usage()
    answer = {"exit": code, "images": images, "dropped": dropped,
              "cpu_us": int((cpu1 - cpu0) * 1e6), "rss_kb": rss}
    if memory_error:
        answer["memory_error"] = True
    if value:
        answer["value"] = value
    return answer


def cell_value(value, cap):
    """A cell result's forms, as a notebook shows them: repr(), and the
    object's own HTML where it has one (a pandas DataFrame), each cut to
    cap bytes of UTF-8. What the object's methods raise is theirs: the
    text falls back to the type's name, the HTML is left out."""
    def cut(text):
        data = text.encode("utf-8", "replace")
        return data[:cap].decode("utf-8", "ignore") if len(data) > cap else text
    try:
        text = repr(value)
    except Exception:
        text = "<%s object>" % type(value).__name__
    out = {"text": cut(text)}
    html = getattr(value, "_repr_html_", None)
    if callable(html) and not isinstance(value, type):
        try:
            h = html()
        except Exception:
            h = None
        if isinstance(h, str):
            out["html"] = cut(h)
    return out


# ---- files: only inside the workspace, never through a symlink ----

def parts_of(path):
    # The host has already refused "..", absolute paths elsewhere, NUL and
    # invalid UTF-8; this only splits what is left.
    return [p for p in path.split("/") if p not in ("", ".")]


def open_dir(parts, create):
    """An fd for the directory parts name under the workspace, opened one
    component at a time with O_NOFOLLOW: a symlink anywhere is refused."""
    fd = os.open(WORKSPACE, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for i, part in enumerate(parts):
            try:
                nfd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise FileOpError(errno.ENOENT, "%s: no such directory in the workspace"
                                      % "/".join(parts[:i + 1]))
                os.mkdir(part, 0o755, dir_fd=fd)
                nfd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as e:
                if e.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                where = "/".join(parts[:i + 1])
                if stat.S_ISLNK(os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode):
                    raise FileOpError(errno.ELOOP, "%s: is a symlink (never followed)" % where)
                raise FileOpError(errno.ENOTDIR, "%s: is not a directory" % where)
            # gVisor (Debian 12's runsc) follows a symlink to a directory
            # despite O_NOFOLLOW when O_DIRECTORY is given: what was opened
            # must be the entry itself, not where a link points.
            st = os.stat(part, dir_fd=fd, follow_symlinks=False)
            got = os.fstat(nfd)
            if stat.S_ISLNK(st.st_mode) or (st.st_dev, st.st_ino) != (got.st_dev, got.st_ino):
                os.close(nfd)
                raise FileOpError(errno.ELOOP, "%s: is a symlink (never followed)"
                                  % "/".join(parts[:i + 1]))
            os.close(fd)
            fd = nfd
        return fd
    except BaseException:
        os.close(fd)
        raise


def op_put(req, state):
    parts = parts_of(req["path"])
    if not parts:
        raise FileOpError(errno.EISDIR, "the workspace itself is not a file")
    data = base64.b64decode(req["data"])
    dfd = open_dir(parts[:-1], True)
    name = parts[-1]
    tmp = ".agentjail-put-%d" % os.getpid()
    try:
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode):
                raise FileOpError(errno.EEXIST, "%s: exists and is not a regular file "
                                  "(a directory, symlink or special file is never replaced)"
                                  % req["path"])
        except FileNotFoundError:
            pass
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644,
                     dir_fd=dfd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        except BaseException:
            os.close(fd)
            os.unlink(tmp, dir_fd=dfd)
            raise
        os.close(fd)
        # Whole or not at all: a reader never sees half a file.
        os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    finally:
        os.close(dfd)
    return {"ok": True}


def op_get(req, state):
    parts = parts_of(req["path"])
    if not parts:
        raise FileOpError(errno.EISDIR, "the workspace is a directory: list it")
    limit = int(req["max"])
    dfd = open_dir(parts[:-1], False)
    try:
        try:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dfd)
        except FileNotFoundError:
            raise FileOpError(errno.ENOENT, "%s: no such file in the workspace" % req["path"])
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise FileOpError(e.errno, "%s: is a symlink (never followed)" % req["path"])
            raise
    finally:
        os.close(dfd)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise FileOpError(errno.EISDIR, "%s: is a directory" % req["path"])
        if not stat.S_ISREG(st.st_mode):
            raise FileOpError(errno.EINVAL, "%s: is not a regular file" % req["path"])
        if "offset" in req:
            # One part: the host asks for the next until it has size bytes.
            offset = int(req["offset"])
            os.lseek(fd, offset, os.SEEK_SET)
            part, want = [], limit
            while want > 0:
                chunk = os.read(fd, min(want, 1 << 20))
                if not chunk:
                    break
                part.append(chunk)
                want -= len(chunk)
            return {"data": base64.b64encode(b"".join(part)).decode(), "size": st.st_size}
        if st.st_size > limit:
            raise FileOpError(errno.EFBIG, "%s: %d bytes is more than the %d allowed"
                              % (req["path"], st.st_size, limit))
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > limit:
                raise FileOpError(errno.EFBIG, "%s: grew past the %d bytes allowed"
                                  % (req["path"], limit))
            chunks.append(chunk)
    finally:
        os.close(fd)
    return {"data": base64.b64encode(b"".join(chunks)).decode()}


def op_list(req, state):
    dfd = open_dir(parts_of(req["path"]), False)
    entries = []
    try:
        with os.scandir(dfd) as it:
            for entry in it:
                if len(entries) >= LIST_MAX:
                    break
                if entry.name.startswith(".agentjail-put-"):
                    continue
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISLNK(st.st_mode):
                    kind = "symlink"
                elif stat.S_ISDIR(st.st_mode):
                    kind = "directory"
                elif stat.S_ISREG(st.st_mode):
                    kind = "file"
                else:
                    kind = "other"
                entries.append({"name": text(entry.name), "type": kind, "size": st.st_size})
    finally:
        os.close(dfd)
    entries.sort(key=lambda e: e["name"])
    return {"entries": entries}


# ---- commands: one more program of the session ----

CHILD_DEFAULT_SIGNALS = ("SIGXCPU", "SIGINT", "SIGQUIT", "SIGTERM", "SIGTSTP", "SIGTTIN",
                         "SIGTTOU", "SIGWINCH")


def cpu_budget(cpu):
    """A command's RLIMIT_CPU: the call's share as the soft limit (None:
    the session's whole), the hard one, the session's total, as the host
    set it."""
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    if cpu is None:
        return (hard, hard)
    return (cpu if hard == resource.RLIM_INFINITY else min(cpu, hard), hard)


PRLIMIT_WORKS = []  # [True] or [False] once known (start_command)


def needs_exec_child(ctty):
    """Whether the command must start by a fork of this interpreter that
    runs exec_child before its exec, or may start by vfork (Popen without
    preexec_fn: about a millisecond less per command) with its CPU budget
    set from here right after. It may when exec_child would undo nothing:
    no terminal to take, none of the signals it resets ignored here (a
    handler is reset by the exec itself) and none blocked (a cell can do
    either; SIGPIPE and SIGXFSZ, which Python ignores, Popen restores)."""
    import signal

    if ctty or signal.pthread_sigmask(signal.SIG_BLOCK, []):
        return True
    for name in CHILD_DEFAULT_SIGNALS:
        handler = signal.getsignal(getattr(signal, name))
        if handler is None or handler == signal.SIG_IGN:
            return True
    return False


def exec_child(cpu, ctty=False):
    """In the command's process, before its exec: its own CPU budget (the
    call's share; the hard limit, the session's total, stays as the host
    set it), and the signals this interpreter's host ignores back to their
    defaults (SIGXCPU must end a command at its limit, Ctrl-C a job). ctty:
    its stdin, a pty's slave, becomes its controlling terminal (it leads a
    new session already), so Ctrl-C and a resize reach its foreground job."""
    import signal

    resource.setrlimit(resource.RLIMIT_CPU, cpu_budget(cpu))
    for s in CHILD_DEFAULT_SIGNALS:
        signal.signal(getattr(signal, s), signal.SIG_DFL)
    # And none blocked (a cell may have blocked some in this thread).
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    if ctty:
        import fcntl
        import termios

        fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def command_argv(req):
    return req.get("argv") or ["/bin/sh", "-c", req["shell"]]


def start_command(req, ctty=False, **pipes):
    """A command's process (exec's and spawn's alike): its argv, the
    session's environment with the request's additions, its cwd (a
    workspace directory opened without following a symlink, entered by its
    fd, so no path is followed again), its own process group and its own
    CPU budget (exec_child). pipes: Popen's stdin/stdout/stderr. OSError
    when it cannot start (FileOpError for its cwd)."""
    import subprocess

    env = dict(os.environ)
    env.update(req.get("env") or {})
    fd = open_dir(parts_of(req.get("cwd") or ""), False)
    here = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fchdir(fd)
        cpu = int(req["cpu"])
        if needs_exec_child(ctty) or PRLIMIT_WORKS != [True]:
            popen = subprocess.Popen(command_argv(req), env=env, start_new_session=True,
                                     preexec_fn=lambda: exec_child(cpu, ctty), **pipes)
            if not PRLIMIT_WORKS:
                # Whether this sandbox lets the interpreter set a child's
                # limit (its filter could refuse): asked once, on a command
                # that has its budget already, so no command ever runs
                # without one.
                try:
                    resource.prlimit(popen.pid, resource.RLIMIT_CPU, cpu_budget(cpu))
                    PRLIMIT_WORKS.append(True)
                except ProcessLookupError:
                    pass  # it ended first: asked again next time
                except OSError:
                    PRLIMIT_WORKS.append(False)
            return popen
        popen = subprocess.Popen(command_argv(req), env=env, start_new_session=True, **pipes)
        try:
            # Before it has used much: what it used counts all the same.
            resource.prlimit(popen.pid, resource.RLIMIT_CPU, cpu_budget(cpu))
        except ProcessLookupError:
            pass  # it has ended already
        except OSError:
            os.killpg(popen.pid, 9)  # never a command without its budget
            popen.wait()
            raise
        return popen
    finally:
        os.fchdir(here)
        os.close(here)
        os.close(fd)


def feed(pipe, data):
    """stdin, from a thread of its own: the command may read it slowly, or
    never, while this interpreter waits for its end."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(pipe.fileno(), view):]
    except OSError:
        pass  # it closed its stdin or ended: what is left is not read
    finally:
        pipe.close()


def op_exec(req, state):
    """The command as the session's own child: its user, namespaces, limits
    and filter are this interpreter's, set from outside. stdout and stderr
    are this interpreter's (the host captures, caps and streams them); its
    own process group, killed whole at its deadline and at its end (what it
    left running ends with it)."""
    import signal
    import subprocess
    import threading

    data = base64.b64decode(req["stdin"]) if "stdin" in req else None
    flush()
    cpu0, _ = usage()
    try:
        proc = start_command(req, stdin=subprocess.PIPE if data is not None else None)
    except OSError as e:
        # As a shell reports it: 127 not found, 126 not runnable.
        code = 127 if isinstance(e, FileNotFoundError) else 126
        os.write(2, ("agentjail: exec: %s: %s\n" % (command_argv(req)[0],
                                                    os.strerror(e.errno or 5)))
                 .encode("utf-8", "replace"))
        return {"exit": code, "cpu_us": 0, "rss_kb": 0}
    if data is not None:
        threading.Thread(target=feed, args=(proc.stdin, data), daemon=True).start()
    timed_out = False
    try:
        proc.wait(req["timeout_ms"] / 1000.0)
    except subprocess.TimeoutExpired:
        timed_out = True
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the group: what it started too
    except OSError:
        pass
    rc = proc.wait()
    cpu1, rss = usage()
    answer = {"exit": rc} if rc >= 0 else {"signal": -rc}
    answer.update({"cpu_us": int((cpu1 - cpu0) * 1e6), "rss_kb": rss})
    if timed_out:
        answer["timed_out"] = True
    return answer


# ---- background commands: started, then read, fed and signalled by pid ----

PROCS = {}
ENDED_KEPT = 64  # ended commands whose output can still be read


class Proc:
    """A background command: its process group, its output kept (up to cap
    bytes a stream; past it the group is killed: output_limit), its end.
    Reader and waiter threads of its own fill it; a condition wakes
    proc_read. With pty (the master's fd), its one stream is the terminal:
    a window of the last cap bytes (base: the offset the window starts at),
    never output_limit, and its input goes to the terminal."""

    def __init__(self, command, cap, timeout, pty=None, stdin=False):
        """Its threads, started before the command is (a command that fills
        the session's pids limit at once, a fork loop, must not leave its
        own readers and waiter unmade): each waits for attach, or for
        abandon when the command could not start. RuntimeError when the
        threads cannot start (nothing is left of them then)."""
        import threading

        self.popen, self.command, self.cap, self.pty = None, command, cap, pty
        self.started, self.wall_ms, self.timeout = 0, 0, timeout
        self.bufs = [bytearray(), bytearray()]
        self.base = [0, 0]
        self.truncated = [False, False]
        # The master (and the exit's wake pipe) is closed by the last of
        # its reader, feeder and waiter to end (never under another: its
        # number could be reused).
        self.master_users = 3 if pty is not None else 0
        self.open_streams = 1 if pty is not None else 2
        self.streams = []
        self.returncode = None
        self.timed_out = False
        # A caller signalled it: a SIGKILL at its end is theirs, never
        # taken for the OOM killer's (the host's status rules).
        self.signalled = False
        self.cond = threading.Condition()
        self.pending = []  # stdin not yet written
        self.stdin_closing = False
        self.stdin_fd = None
        self.attached, self.abandoned = threading.Event(), False
        targets = [(self.read, (i,)) for i in range(self.open_streams)] + [(self.wait, ())]
        if pty is not None or stdin:
            targets.append((self.feed, ()))
        try:
            for target, args in targets:
                threading.Thread(target=target, args=args, daemon=True).start()
        except RuntimeError:
            self.abandon()
            raise

    def attach(self, popen):
        """The command started: its threads go on with it."""
        import time

        self.popen, self.started = popen, time.monotonic()
        if self.pty is not None:
            self.exited_r, self.exited_w = os.pipe2(os.O_CLOEXEC)
            self.streams = [io.FileIO(self.pty, "rb", closefd=False)]
            self.stdin_fd = self.pty
        else:
            self.streams = [popen.stdout, popen.stderr]
            self.stdin_fd = popen.stdin.fileno() if popen.stdin is not None else None
        self.attached.set()

    def abandon(self):
        """The command did not start: its threads end, touching nothing."""
        self.abandoned = True
        self.attached.set()

    def go(self):
        """In a thread: False when the command never started."""
        self.attached.wait()
        return not self.abandoned

    def kill(self, sig=9):
        try:
            os.killpg(self.popen.pid, sig)
        except OSError:
            pass

    def read_chunk(self, f):
        """The next output, b"" at the end. A pty's master reads EIO once
        no process holds the terminal, on Linux; gVisor's never does, so
        the end is also the command's exit (the waiter's wake): what the
        master holds then is drained, and that is all."""
        import select

        while True:
            try:
                if self.pty is not None:
                    ready = select.select([f, self.exited_r], [], [])[0]
                    if f not in ready and select.select([f], [], [], 0)[0] == []:
                        return b""  # exited, and nothing left to read
                return os.read(f.fileno(), 65536)
            except InterruptedError:
                continue
            except OSError:
                return b""

    def read(self, i):
        if not self.go():
            return
        f = self.streams[i]
        while True:
            chunk = self.read_chunk(f)
            with self.cond:
                if not chunk:
                    # (A pty's master reads EIO once no process holds
                    # the terminal: its end.)
                    self.open_streams -= 1
                    self.stdin_closing = self.stdin_closing or self.pty is not None
                    self.cond.notify_all()
                    if self.pty is None:
                        f.close()
                    else:
                        self.release_master()
                    return
                if self.pty is not None:
                    self.bufs[i] += chunk
                    over = len(self.bufs[i]) - self.cap
                    if over > 0:
                        del self.bufs[i][:over]
                        self.base[i] += over
                    self.cond.notify_all()
                    continue
                room = self.cap - len(self.bufs[i])
                self.bufs[i] += chunk[:max(room, 0)]
                if len(chunk) > room:
                    self.truncated[i] = True
                    self.kill()
                self.cond.notify_all()

    def wait(self):
        import subprocess

        if not self.go():
            return
        timeout = self.timeout
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.timed_out = True
        self.kill()  # the group: what it left running ends with it
        rc = self.popen.wait()
        import time

        with self.cond:
            self.wall_ms = (time.monotonic() - self.started) * 1000
            self.returncode = rc
            self.cond.notify_all()
        if self.pty is not None:
            os.write(self.exited_w, b"x")  # read_chunk: drain, then the end
            with self.cond:
                self.release_master()

    def release_master(self):
        """Under cond: one user of the pty's master is done with it."""
        self.master_users -= 1
        if self.master_users == 0:
            os.close(self.pty)
            os.close(self.exited_r)
            os.close(self.exited_w)

    def feed(self):
        if not self.go() or self.stdin_fd is None:
            if not self.abandoned and self.pty is not None:
                with self.cond:
                    self.release_master()
            return
        try:
            self.feed_all()
        finally:
            if self.pty is not None:
                with self.cond:
                    self.release_master()

    def feed_all(self):
        while True:
            with self.cond:
                while not self.pending and not self.stdin_closing:
                    self.cond.wait()
                data = b"".join(self.pending)
                self.pending.clear()
                closing = self.stdin_closing
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self.stdin_fd, view):]
                if closing:
                    if self.pty is None:
                        self.popen.stdin.close()
                    elif self.open_streams:
                        os.write(self.stdin_fd, b"\x04")  # end of input, as a terminal gives it
                    return
            except OSError:
                return  # it closed its stdin or ended

    def ended(self):
        return self.returncode is not None and self.open_streams == 0


def proc_of(req):
    proc = PROCS.get(req.get("pid"))
    if proc is None:
        raise FileOpError(errno.ESRCH, "no command %s in this session" % req.get("pid"))
    return proc


def op_spawn(req, state):
    import subprocess

    argv = command_argv(req)
    proc = new_proc(req, argv, stdin=bool(req.get("stdin")))
    try:
        popen = start_command(req, stdin=subprocess.PIPE if req.get("stdin") else None,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except BaseException as e:
        proc.abandon()
        if isinstance(e, OSError) and not isinstance(e, FileOpError):
            raise FileOpError(e.errno or errno.ENOENT,
                              "%s: %s" % (argv[0], os.strerror(e.errno or 2)))
        raise
    proc.attach(popen)
    PROCS[popen.pid] = proc
    forget_ended()
    return {"pid": popen.pid}


def new_proc(req, argv, **kw):
    """A Proc whose threads wait for its command (Proc's own words on why),
    or FileOpError(EAGAIN) when the session's process limit leaves no room
    for them: refused before the command starts."""
    timeout = req.get("timeout_ms") or 0
    try:
        return Proc(req.get("shell") or " ".join(argv), int(req["cap"]),
                    timeout / 1000.0 if timeout else None, **kw)
    except RuntimeError as e:
        raise FileOpError(errno.EAGAIN, "%s: not started: the session's process limit leaves "
                          "no room for the threads that read it (%s)" % (argv[0], e))


def forget_ended():
    ended = [pid for pid, p in PROCS.items() if p.ended()]
    for pid in ended[:max(0, len(ended) - ENDED_KEPT)]:
        del PROCS[pid]


class Nudge:
    """A wait for a background command's output (op_proc_read) holds the
    host's session: a call that comes for it meanwhile (typed input, a
    signal) would wait out the read. On the tiers that can, the host then
    writes an empty line into the request pipe (no request: the main loop
    skips it), and a watcher thread that sees new bytes there while the
    main loop reads none wakes the wait, which answers at once. lines: the
    request lines the main loop has read; woke: the value lines had when
    the watcher last saw bytes no read took. Started by the first read that
    asks for it ("nudge"); one that cannot start (the pids limit) leaves
    the reads to wait their time."""
    lines = 0
    woke = -1
    read = None  # set by the main loop at each line, once started

    @classmethod
    def start(cls):
        import threading

        if cls.read:
            return
        cls.read = threading.Event()
        try:
            threading.Thread(target=cls.watch, daemon=True).start()
        except RuntimeError:
            cls.read = None

    @classmethod
    def watch(cls):
        import select

        while True:
            seen = cls.lines
            try:
                select.select([REQUESTS], [], [])
            except (OSError, ValueError):
                return  # a cell closed the pipe
            if cls.lines == seen:
                cls.woke = seen
                for p in list(PROCS.values()):
                    with p.cond:
                        p.cond.notify_all()
            # The bytes stay until the main loop reads them: till then.
            cls.read.wait()
            cls.read.clear()


def op_proc_read(req, state):
    import time

    if req.get("nudge"):
        Nudge.start()
    mine = Nudge.lines
    proc = proc_of(req)
    # A pty's window may have moved past what the reader had: from its start.
    offs = [max(int(req["out"]), proc.base[0]), max(int(req["err"]), proc.base[1])]
    most = int(req["max"])
    for name, b, base, o in zip(("stdout", "stderr"), proc.bufs, proc.base, offs):
        if o > base + len(b):  # a place no reader was ever given: it would wait for ever
            raise FileOpError(errno.EINVAL, "offset %d is past the %d bytes of %s it printed"
                              % (o, base + len(b), name))
    deadline = time.monotonic() + int(req["wait_ms"]) / 1000.0
    with proc.cond:
        while not proc.ended() and all(len(b) + base <= o for b, base, o
                                       in zip(proc.bufs, proc.base, offs)):
            left = deadline - time.monotonic()
            if Nudge.woke == mine:
                break  # a call waits behind this read
            if left <= 0:
                break
            proc.cond.wait(left)
        offs = [max(o, base) for o, base in zip(offs, proc.base)]
        parts = [bytes(b[o - base:o - base + most]) for b, base, o
                 in zip(proc.bufs, proc.base, offs)]
        answer = {"out": base64.b64encode(parts[0]).decode(),
                  "err": base64.b64encode(parts[1]).decode(),
                  "out_end": offs[0] + len(parts[0]), "err_end": offs[1] + len(parts[1]),
                  "out_truncated": proc.truncated[0], "err_truncated": proc.truncated[1],
                  "ended": proc.ended() and all(len(b) + base == o + len(p) for b, base, o, p
                                                 in zip(proc.bufs, proc.base, offs, parts))}
        if offs[0] > int(req["out"]):
            answer["out_from"] = offs[0]
        if answer["ended"]:
            rc = proc.returncode
            answer.update({"exit": rc} if rc >= 0 else {"signal": -rc})
            answer["timed_out"] = proc.timed_out
            answer["signalled"] = proc.signalled
            answer["output_limit"] = any(proc.truncated)
            answer["wall_ms"] = proc.wall_ms
            answer["timeout_ms"] = int((proc.timeout or 0) * 1000)
    return answer


def op_proc_input(req, state):
    proc = proc_of(req)
    if proc.stdin_fd is None:
        raise FileOpError(errno.EBADF, "command %d was started without stdin" % proc.popen.pid)
    with proc.cond:
        if proc.stdin_closing:
            raise FileOpError(errno.EPIPE, "command %d: its stdin is closed" % proc.popen.pid)
        if req.get("data"):
            proc.pending.append(base64.b64decode(req["data"]))
        proc.stdin_closing = bool(req.get("close"))
        proc.cond.notify_all()
    return {"ok": True}


def op_proc_signal(req, state):
    proc = proc_of(req)
    if not proc.ended():
        proc.signalled = True
        proc.kill(int(req["signal"]))
    return {"ok": True}


def op_procs(req, state):
    return {"procs": [{"pid": pid, "command": p.command, "running": p.returncode is None,
                       "pty": p.pty is not None}
                      for pid, p in PROCS.items()]}


# ---- JavaScript: one node of the session's, started on the first call ----

class Node:
    """The session's JavaScript interpreter (src/core/repl.js): a child of
    this interpreter, so the same user, namespaces, limits and filter. Its
    stdout and stderr are this interpreter's; a pipe pair of its own carries
    the cells and their ends."""

    def __init__(self, memory_mb):
        import subprocess

        path = node_path()
        if not path:
            raise FileOpError(errno.ENOENT, NODE_NOT_INSTALLED)
        try:
            flags = node_flags(memory_mb)
        except RuntimeError as e:
            raise FileOpError(errno.ENOMEM, str(e))
        req_r, self.req_w = os.pipe()
        self.rep_r, rep_w = os.pipe()
        death = parent_death_signal()
        try:
            self.popen = subprocess.Popen(
                [path] + flags + ["-e", REPL_JS, str(req_r), str(rep_w)],
                stdin=subprocess.DEVNULL, pass_fds=(req_r, rep_w), env=node_environment(),
                # Its start is no cell's: its CPU budget is the session's
                # until a cell's is set (call); a slow machine (a microVM
                # under TCG) spends seconds of CPU starting node.
                preexec_fn=lambda: (death(), exec_child(None)))
        except OSError as e:
            os.close(self.req_w)
            os.close(self.rep_r)
            raise FileOpError(e.errno or errno.ENOENT, "javascript: %s: %s"
                              % (path, os.strerror(e.errno or 2)))
        finally:
            os.close(req_r)
            os.close(rep_w)
        self.replies = io.open(self.rep_r, "rb", closefd=False)
        ready = self.take()
        if not ready or not ready.get("ready"):
            rc = self.end()
            import signal

            if rc == -signal.SIGXCPU:
                raise FileOpError(errno.ETIME, "javascript: node ran out of the session's CPU "
                                  "time as it started (%s)" % ended_how(rc))
            raise FileOpError(errno.ENOMEM, "javascript: node ended as it started (%s) under "
                              "this sandbox's memory limit of %s MiB: its own words are on "
                              "stderr; raise --memory" % (ended_how(rc), memory_mb))

    def take(self):
        """node's next reply, or None when it ended."""
        try:
            line = self.replies.readline()
            return json.loads(line) if line else None
        except (OSError, ValueError):
            return None

    def cpu_spent(self):
        """node's CPU seconds so far, rounded up (/proc/PID/stat)."""
        with open("/proc/%d/stat" % self.popen.pid, "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return math.ceil((int(fields[11]) + int(fields[12])) / ticks)

    def call(self, code, number, cpu, ts=False):
        """Runs one cell: its reply, or None when node ended during it."""
        try:
            # This call's CPU budget, as a cell's (set_cpu_limit): node's
            # own soft limit moves; the hard one stays the session's.
            hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
            want = self.cpu_spent() + cpu
            if hard != resource.RLIM_INFINITY:
                want = min(want, hard)
            resource.prlimit(self.popen.pid, resource.RLIMIT_CPU, (want, hard))
            data = (json.dumps({"cell": number, "code": code, "ts": ts}) + "\n").encode()
            view = memoryview(data)
            while view:
                view = view[os.write(self.req_w, view):]
        except OSError:
            return None
        return self.take()

    def end(self):
        """Ends node (if it has not ended) and its pipes: its wait status
        as Popen gives it."""
        try:
            self.popen.kill()
        except OSError:
            pass
        rc = self.popen.wait()
        for fd in (self.req_w, self.rep_r):
            try:
                os.close(fd)
            except OSError:
                pass
        return rc


def parent_death_signal():
    """What node's process calls before its exec so that it dies with this
    interpreter (SIGKILL when its parent ends): prctl(PR_SET_PDEATHSIG)
    through ctypes, loaded here, before the fork. Without ctypes, node ends
    when its request pipe closes, and the sandbox's end takes it anyway."""
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except Exception:
        return lambda: None
    return lambda: prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL


def ended_how(rc):
    if rc < 0:
        import signal

        try:
            return "killed by signal %d (%s)" % (-rc, signal.Signals(-rc).name)
        except ValueError:
            return "killed by signal %d" % -rc
    return "exit %d" % rc


def op_ts(req, state):
    return op_js(req, state, ts=True)


def op_js(req, state, ts=False):
    if req.get("fresh") and state.get("node") is not None:
        # A restart asked for: this node's state is dropped on purpose.
        state["node"].end()
        state["node"] = None
        state.pop("node_lost", None)
    node, restarted = state.get("node"), state.pop("node_lost", False)
    if node is not None and node.popen.poll() is not None:
        node.end()  # it ended between calls (a callback's process.exit)
        node, restarted = None, True
    flush()
    if node is None:
        node = Node(req.get("memory_mb"))
        state["node"] = node
    state["js_cells"] = state.get("js_cells", 0) + 1
    code = base64.b64decode(req["code"]).decode("utf-8", "replace")
    answer = node.call(code, state["js_cells"], int(req["cpu"]), ts)
    if answer is not None and answer.get("refused"):
        raise FileOpError(errno.ENOENT, str(answer["refused"]))  # no TypeScript compiler
    if answer is None:
        # node ended during the cell (process.exit, its CPU limit, a crash
        # of V8's): its end is the cell's, and the next cell gets a fresh
        # node, told that the state is gone.
        rc = node.end()
        state["node"], state["node_lost"] = None, True
        answer = {"exit": rc} if rc >= 0 else {"signal": -rc}
        os.write(2, ("javascript: node ended (%s): the next JavaScript call starts a fresh "
                     "one\n" % ended_how(rc)).encode())
    else:
        answer = {"exit": int(answer.get("exit", 1)), "cpu_us": int(answer.get("cpu_us", 0)),
                  "rss_kb": int(answer.get("rss_kb", 0))}
    answer.setdefault("cpu_us", 0)
    answer.setdefault("rss_kb", 0)
    answer["images"] = []
    if restarted:
        answer["js_restarted"] = True
    return answer


def winsize(req):
    import struct

    return struct.pack("HHHH", int(req["rows"]), int(req["cols"]), 0, 0)


def op_pty(req, state):
    """A command on a terminal of its own: the pty's slave is its stdin,
    stdout, stderr and controlling terminal, the master stays here (Proc
    reads it and writes input to it). The terminal is the sandbox's own
    devpts instance, bounded by the tier (max=), not the host's."""
    import fcntl
    import termios

    argv = command_argv(req)
    # What a terminal program reads to know what it draws on (the
    # caller's env may say otherwise).
    req["env"] = {"TERM": "xterm-256color", **(req.get("env") or {})}
    try:
        master, slave = os.openpty()
    except OSError as e:
        raise FileOpError(e.errno or errno.ENODEV, "pty: this sandbox has no pseudo-terminal "
                          "to give (%s)" % os.strerror(e.errno or errno.ENODEV))
    proc = None
    try:
        proc = new_proc(req, argv, pty=master)
        fcntl.ioctl(slave, termios.TIOCSWINSZ, winsize(req))
        os.set_inheritable(master, False)
        popen = start_command(req, ctty=True, stdin=slave, stdout=slave, stderr=slave)
    except BaseException as e:
        if proc is not None:
            proc.abandon()
        os.close(master)
        if isinstance(e, OSError) and not isinstance(e, FileOpError):
            raise FileOpError(e.errno or errno.ENOENT,
                              "%s: %s" % (argv[0], os.strerror(e.errno or 2)))
        raise
    finally:
        os.close(slave)  # the command's alone: its end is the master's EOF
    proc.attach(popen)
    PROCS[popen.pid] = proc
    forget_ended()
    return {"pid": popen.pid}


def op_proc_resize(req, state):
    import fcntl
    import termios

    proc = proc_of(req)
    if proc.pty is None:
        raise FileOpError(errno.ENOTTY, "command %d has no terminal to resize" % proc.popen.pid)
    with proc.cond:
        if proc.open_streams:  # its reader holds the master open (see Proc)
            # The kernel tells the terminal's foreground job (SIGWINCH).
            fcntl.ioctl(proc.pty, termios.TIOCSWINSZ, winsize(req))
    return {"ok": True}


def op_save(req, state):
    return state_save(state)


def op_load(req, state):
    return state_load(state)


def op_state_write(req, state):
    return state_write(req)


def op_state_drop(req, state):
    try:
        os.unlink(os.path.join(WORKSPACE, STATE_FILE))
    except FileNotFoundError:
        pass
    return {"ok": True}


OPS = {"run": op_run, "put": op_put, "get": op_get, "list": op_list,
       "exec": op_exec, "spawn": op_spawn, "proc_read": op_proc_read,
       "proc_input": op_proc_input, "proc_signal": op_proc_signal, "procs": op_procs,
       "js": op_js, "ts": op_ts, "pty": op_pty, "proc_resize": op_proc_resize,
       "save": op_save, "load": op_load, "state_write": op_state_write,
       "state_drop": op_state_drop}


def serve():
    os.environ["MPLBACKEND"] = "Agg"  # no display: figures render to images
    # matplotlib's cache and config outside the workspace the agent lists.
    os.environ.setdefault("MPLCONFIGDIR", "/tmp/.matplotlib")
    try:
        os.mkdir(OUTPUTS, 0o755)
    except OSError:
        pass
    # The cells' own __main__: they see none of this file's names, and
    # classes they define pickle as they would in a script.
    main = types.ModuleType("__main__")
    main.__builtins__ = __builtins__
    sys.modules["__main__"] = main
    sys.argv[:] = [""]
    # What `pip install` puts in the workspace (PIP_TARGET, rule E1): a
    # later cell imports what an earlier one installed.
    if os.environ.get("PIP_TARGET"):
        sys.path.append(os.environ["PIP_TARGET"])
    state = {"cells": 0, "namespace": main.__dict__, "contexts": {}}
    requests = io.open(REQUESTS, "rb", closefd=False)
    while True:
        try:
            line = requests.readline()
        except OSError:
            line = b""  # a cell closed the request pipe
        Nudge.lines += 1
        if Nudge.read:
            Nudge.read.set()
        if not line:
            # The host is gone or the pipe is: end now, without the
            # interpreter's shutdown (daemon threads a cell left would
            # make that abort).
            os._exit(0)
        try:
            req = json.loads(line)
            seq = req["seq"]
        except Exception:
            # Not a request: never answered. (Each interpreter starts on
            # an empty request pipe, so only a cell writing into it could
            # bring one.)
            continue
        # Taken: from here on the request may have run. An interpreter that
        # ends before this line never ran it, and the host may hand it to a
        # fresh one.
        reply({"ack": seq})
        try:
            answer = OPS[req["op"]](req, state)
        except KeyError as e:
            answer = {"error": "bad request: no %s" % e, "errno": "EINVAL"}
        except FileOpError as e:
            answer = {"error": str(e), "errno": e.errno_name}
        except RuntimeError as e:
            # A thread that could not start (the session's process limit):
            # this call fails, the interpreter and its state go on.
            answer = {"error": "%s: %s" % (req.get("op"), e), "errno": "EAGAIN"}
        except OSError as e:
            answer = {"error": "%s: %s" % (req.get("path", ""), os.strerror(e.errno or 5)),
                      "errno": errno.errorcode.get(e.errno, "EIO")}
        # A call's end says which background commands outlive it.
        if req.get("op") in ("run", "exec", "js", "ts") and "error" not in answer:
            running = [pid for pid, p in PROCS.items() if p.returncode is None]
            if running:
                answer["background"] = running[:256]  # AJ_MAX_BACKGROUND_LISTED
        # The sequence number first: the host matches replies on it.
        reply({"seq": seq, **answer})


serve()
