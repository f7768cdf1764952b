"""agentjail zygote: a warm interpreter that becomes the program, once.

Started at boot by the guest agent (agent.c, PID 1) as root:

    /usr/bin/python3 -I -u /.agentjail/zygote.py

with fd 0 /dev/null, fd 1 and 2 the pipes the agent reads as the program's
stdout and stderr, fd 3 the request pipe (agent -> zygote), fd 4 the
control pipe (zygote -> agent), fd 5 the run cgroup's directory (O_PATH:
the cgroup2 hierarchy is mounted nowhere the program could look) and fd 6
the program's verdict pipe (program -> agent). The same
flags and environment as the other tiers' `python3 -I -u main.py`, so
sys.flags, sys.path and the stdio encoding are the ones a program gets there.

At boot it imports what agent code commonly uses, says "ready" on fd 4 and
blocks reading the request from fd 3. The host snapshots the VM in that
read; every run is a copy restored from there, so the imports are paid once
per image instead of once per run.

On the request (a line "rlimit RESOURCE SOFT HARD WORD" for each row of the
rlimit table every tier reads, rule E2 of docs/design.md, with the agent's
values for this run; then an empty line) it forks. The parent says "pid N"
on fd 4 and exits at once, which hands the child to PID 1: the agent
waits for the program itself and has its status from the kernel. The child's
CPU clock starts at zero, so RLIMIT_CPU counts the program's time, not the
imports'. The child then, in this order: joins the run's cgroup (memory and
pids bound the whole tree) and closes fd 5, applies the rlimits, drops to
uid/gid 1000 with no groups (and so no capabilities), sets the umask, enters
the workspace, sets the environment from nothing, closes fd 4, moves the
verdict pipe to fd 3 (AJ_VERDICT_FD, src/core/status.h; as on every tier)
and runs /tmp/work/main.py as the __main__ module. A step it cannot apply
is reported as "fail STEP: ERRNO" on fd 4 and the run is refused: the
program never runs with less than asked. When an uncaught MemoryError (any
subclass) ends the program, it writes one byte on the verdict pipe before
it exits with Python's own 1 (src/core/launch.py does the same on the
other tiers); the agent reads it once the program has ended.
"""
import os
import sys

# What agent code commonly imports. A module the image lacks is skipped: the
# program gets the same ImportError it would get anyway.
PRELOAD = (
    "abc argparse array ast base64 binascii bisect calendar collections "
    "collections.abc contextlib copy csv dataclasses datetime decimal difflib "
    "enum errno fnmatch fractions functools glob hashlib heapq hmac html io "
    "itertools json logging math numbers operator pathlib pickle pprint "
    "random re resource secrets shlex shutil signal statistics string struct "
    "subprocess tempfile textwrap threading time traceback types typing "
    "unicodedata urllib.parse uuid warnings zlib"
).split()
for _name in PRELOAD:
    try:
        __import__(_name)
    except ImportError:
        pass
del _name

import builtins  # noqa: E402  (after the preload on purpose: all cheap)
import errno  # noqa: E402
import resource  # noqa: E402
import types  # noqa: E402
from importlib.machinery import SourceFileLoader  # noqa: E402

REQUEST_FD = 3
CONTROL_FD = 4
UID = GID = 1000
WORKSPACE = "/tmp/work"
PROGRAM = WORKSPACE + "/main.py"
CGROUP_FD = 5
VERDICT_FD_AT_START = 6
VERDICT_FD = 3  # AJ_VERDICT_FD, src/core/status.h
# The program's environment: the one the agent started this interpreter
# with, the table every tier reads (rule E1, src/core/contract.c). Taken
# before anything here could change it.
ENVIRONMENT = dict(os.environ)
# The builtin compile() builds the ast module's classes on its first call
# (CPython 3.11: a fifth of a bare start): once here, in the snapshot, not
# in every run's compile of main.py.
compile("", "<zygote>", "exec")


class SetupFailed(Exception):
    """A protection the child could not apply: (step, errno name)."""


def step(name, action, *args):
    try:
        return action(*args)
    except OSError as e:
        raise SetupFailed("%s: %s" % (name, errno.errorcode.get(e.errno, str(e)))) from None
    except ValueError as e:
        raise SetupFailed("%s: %s" % (name, e)) from None


def read_request():
    data = b""
    while not data.endswith(b"\n\n"):
        chunk = os.read(REQUEST_FD, 4096)
        if not chunk:
            os._exit(0)  # the agent is gone: nothing to do
        data += chunk
    return data.decode().splitlines()


def apply_limits(req):
    # Into the run's cgroup first, as root: cgroup.procs is root's to write,
    # and from here on every process of the program is counted against the
    # memory and pids limits.
    step("cgroup join", join_cgroup)
    # Then every row of the rlimit table, with the values the agent computed
    # from the run's limits, in the table's order; each row's reason is
    # beside it there.
    rows = [line.split(" ", 4) for line in req if line and not line.startswith("env ")]
    if not rows or any(len(row) != 5 or row[0] != "rlimit" for row in rows):
        raise ValueError("not a request of rlimits: %r" % req)  # never run unlimited
    for _, resource_id, soft, hard, word in rows:
        step("rlimit " + word, resource.setrlimit, int(resource_id), (int(soft), int(hard)))


def join_cgroup():
    fd = os.open("cgroup.procs", os.O_WRONLY | os.O_CLOEXEC | os.O_NOFOLLOW, dir_fd=CGROUP_FD)
    try:
        os.write(fd, b"0")
    finally:
        os.close(fd)
    # The program gets no handle on the cgroup tree: its knobs are root's,
    # but what it could read there the other tiers do not show either.
    os.close(CGROUP_FD)


def drop_privileges():
    # Groups first (root alone may change them), then gid, then uid: all
    # three ids of each, so nothing can switch back. Leaving uid 0 clears
    # every capability; no file in the initramfs is setuid to regain one.
    step("setgroups", os.setgroups, [])
    step("setresgid", os.setresgid, GID, GID, GID)
    step("setresuid", os.setresuid, UID, UID, UID)
    if os.getresuid() != (UID,) * 3 or os.getresgid() != (GID,) * 3 or os.getgroups():
        raise SetupFailed("drop privileges: ids did not change")


def egress_environment(req):
    """The rows of rule E1 the agent sent ("env K=V"), after the table's:
    with egress the proxy's, then the deployer's variables; the environment
    made at boot has none of them."""
    rows = [line[4:].split("=", 1) for line in req if line.startswith("env ")]
    if any(len(row) != 2 or not row[0] for row in rows):
        raise ValueError("not an environment row: %r" % req)
    return dict(rows)


def enter_workspace(req):
    os.umask(0o022)
    step("chdir " + WORKSPACE, os.chdir, WORKSPACE)
    # From nothing: the zygote's own environment never reaches the program
    # (os.environ's clear and update reach the C environment too).
    os.environ.clear()
    os.environ.update(ENVIRONMENT)
    os.environ.update(egress_environment(req))
    sys.argv[:] = ["main.py"]
    sys.orig_argv[:] = [sys.executable, "-I", "-u", "main.py"]
    # What `pip install` put in the workspace (PIP_TARGET, rule E1).
    if os.environ.get("PIP_TARGET"):
        sys.path.append(os.environ["PIP_TARGET"])


def main_module():
    """A fresh __main__, as the interpreter makes one for `python3 main.py`:
    the program sees none of the zygote's names."""
    main = types.ModuleType("__main__")
    # Its names in the same order (src/core/launch.py makes it so too).
    main.__loader__ = SourceFileLoader("__main__", PROGRAM)
    main.__annotations__ = {}
    main.__builtins__ = builtins
    main.__file__ = PROGRAM
    main.__cached__ = None
    sys.modules["__main__"] = main
    return main


def run_program():
    main = main_module()
    # Read and compiled after the drop, as the program's own uid.
    with open(PROGRAM, "rb") as f:
        source = f.read()
    code = compile(source, PROGRAM, "exec")
    exec(code, main.__dict__)


def child(req):
    try:
        apply_limits(req)
        drop_privileges()
        enter_workspace(req)
        # The verdict pipe at the fd every tier's program has it on (the
        # request pipe's, closed in serve), close-on-exec: it is this
        # process's, not something a child inherits.
        step("verdict pipe", os.dup2, VERDICT_FD_AT_START, VERDICT_FD, False)
        os.close(VERDICT_FD_AT_START)
    except SetupFailed as e:
        os.write(CONTROL_FD, ("fail %s\n" % e).encode())
        os._exit(127)
    except Exception as e:  # a malformed request: refuse, never run unlimited
        os.write(CONTROL_FD, ("fail setup: %r\n" % e).encode())
        os._exit(127)
    # Nothing the program does can speak on the control pipe.
    os.close(CONTROL_FD)


def serve():
    os.write(CONTROL_FD, b"ready\n")
    req = read_request()
    os.close(REQUEST_FD)
    try:
        pid = os.fork()
    except OSError as e:
        os.write(CONTROL_FD, ("fail fork: %s\n" % errno.errorcode.get(e.errno, e)).encode())
        os._exit(127)
    if pid:
        os.write(CONTROL_FD, b"pid %d\n" % pid)
        os._exit(0)
    child(req)


def trimmed(tb):
    """The traceback without this file's frames: what `python3 main.py`
    would print (a SyntaxError in main.py keeps none at all)."""
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    return tb


serve()
try:
    run_program()
except SystemExit:
    raise  # the interpreter's own handling: exit code, or message and 1
except BaseException as e:  # noqa: B902 - an uncaught exception, as Python reports it
    tb = trimmed(e.__traceback__)
    sys.excepthook(type(e), e.with_traceback(tb), tb)
    # Any MemoryError subclass too: the status rules' fact that a
    # MemoryError ended the program, on the pipe the agent reads; the exit
    # code stays Python's 1 (rule S7; src/core/launch.py, the other tiers'
    # launcher).
    if isinstance(e, MemoryError):
        try:
            os.write(VERDICT_FD, b"M")
        except OSError:
            pass
    del e, tb
    # Exit the ordinary way: threads joined, atexit handlers run, streams
    # flushed, as after an uncaught exception.
    sys.exit(1)
