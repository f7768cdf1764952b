# The agentjail zygote (warm mode; src/warm/warm.c has the whole design).
#
# Started by the host as `python3 -I -u -c <this> PRELOAD`, root in a sandbox
# of its own (the tier's view, an empty network, a clean environment), with
# its socket to the host at fd 3 and the warm helper library at fd 4. It
# imports the deployer's PRELOAD modules once, says "R" (ready), and then for
# each request calls the helper, which clones the run's init (new
# namespaces, the run's cgroup, tmpfs and /proc); init forks the program's
# process, which drops to the run's uid, limits and filter and comes back
# here, in run_program, to run main.py. The zygote itself only answers with
# the init's pidfd: the host supervises the run as it does a cold one.
#
# The zygote never reads a program, an output or anything else of a run:
# every later run gets a copy of its memory, so nothing of one run may ever
# be in it.
#
# The build puts src/core/exit_rule.py (system_exit_code, the SystemExit
# rule, and finish, the program's exit, which the launcher and the session
# interpreter share) right after this header.
import builtins
import ctypes
import gc
import importlib
import importlib.machinery
import os
import random
import signal
import socket
import sys
import traceback
import types
from array import array

# Everything a run's process uses before main.py is imported here, once: an
# import in each run would cost it a millisecond or more.

SOL_SOCKET, SCM_RIGHTS = socket.SOL_SOCKET, socket.SCM_RIGHTS
MAX_FDS = 9  # protocol.h's WARM_MAX_FDS
REPLY_LEN = 256
WORKSPACE_PROGRAM = "/tmp/work/main.py"
# Where a run's program says that an uncaught MemoryError ended it: the
# verdict pipe its init made (AJ_VERDICT_FD, src/core/status.h;
# src/core/launch.py does the same for a cold run).
VERDICT_FD = 3

# Native libraries that start worker threads when they load (OpenBLAS under
# numpy, OpenMP, MKL, numexpr) are held to one thread while the zygote
# imports: a fork copies only the calling thread, so another thread's
# locks would stay held for ever in every run. Unset afterwards: a run's
# environment is a cold run's.
# Every page a run's process writes is a copy (a fault, several
# microseconds here): what each run would otherwise set up itself is made
# once, here, and every run gets its own pristine copy. The program's
# __main__, as `python3 -I -u main.py` makes it, and its argv:
# (its names in the same order, as src/core/launch.py makes it):
MAIN = types.ModuleType("__main__")
MAIN.__loader__ = importlib.machinery.SourceFileLoader("__main__", WORKSPACE_PROGRAM)
MAIN.__annotations__ = {}
MAIN.__builtins__ = builtins
MAIN.__file__ = WORKSPACE_PROGRAM
MAIN.__cached__ = None
RUN_ARGV = ["main.py"]
RUN_ORIG_ARGV = [sys.orig_argv[0], "-I", "-u", "main.py"]

THREAD_PINS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
               "NUMEXPR_NUM_THREADS", "GOTO_NUM_THREADS")


def say(sock, text):
    sock.send(text.encode("utf-8", "replace")[:4000])


def preload(sock, names):
    for key in THREAD_PINS:
        os.environ[key] = "1"
    try:
        for name in names:
            try:
                importlib.import_module(name)
            except BaseException as e:  # noqa: BLE001 - reported to the host
                say(sock, "Epreload: import %s: %s: %s" % (name, type(e).__name__, e))
                os._exit(1)
    finally:
        for key in THREAD_PINS:
            os.environ.pop(key, None)
    threads = len(os.listdir("/proc/self/task"))
    if threads != 1:
        say(sock, "Epreload: the zygote has %d threads after importing %s; a fork would "
            "copy one of them, so warm mode needs modules that start none"
            % (threads, ",".join(names) or "nothing"))
        os._exit(1)
    # The builtin compile() builds the ast module's classes on its first
    # call (CPython 3.11: a fifth of a bare start): once here, not in
    # every run's compile of main.py.
    compile("", "<zygote>", "exec")
    # The preloaded objects move to the permanent generation: a run's
    # garbage collector then never walks (and so never copies) them.
    gc.collect()
    gc.freeze()


def run_program(sock, egress_environment):
    """In the run's program process: run main.py as `python3 -I -u main.py`
    would, then exit. Never returns."""
    # The helper has run CPython's after-fork repair (random reseeded
    # itself in its at-fork hook) and kept Python's signal handlers.
    sock.detach()  # its fd was closed in the run's init; 3 is the verdict pipe now
    # The verdict pipe is this process's, not something a child inherits.
    os.set_inheritable(VERDICT_FD, False)
    # With egress: E1's egress rows, from the helper's C table.
    rows = egress_environment()
    i = 0
    while rows and rows[i] is not None:
        name, _, value = rows[i].decode().partition("=")
        os.environ[name] = value
        i += 1
    # What `pip install` put in the workspace (PIP_TARGET, rule E1).
    if os.environ.get("PIP_TARGET"):
        sys.path.append(os.environ["PIP_TARGET"])
    # Randomness of the run's own: numpy's global generator does not
    # reseed itself at fork.
    np_random = sys.modules.get("numpy.random")
    if np_random is not None:
        np_random.seed()
    sys.argv = RUN_ARGV
    sys.orig_argv = RUN_ORIG_ARGV
    main = MAIN
    sys.modules["__main__"] = main
    code = 0
    try:
        with open(WORKSPACE_PROGRAM, "rb") as f:
            source = f.read()
        exec(compile(source, WORKSPACE_PROGRAM, "exec", dont_inherit=True), main.__dict__)
    except SystemExit as e:
        code = system_exit_code(e)
    except BaseException as e:  # noqa: BLE001 - reported as Python would
        # Without this frame: the traceback starts at main.py, as cold
        # (and a SyntaxError has none at all).
        e.__traceback__ = e.__traceback__.tb_next
        report_uncaught(e)
        code = 1
        if isinstance(e, MemoryError):
            # Any subclass too: the status rules' fact that a MemoryError
            # ended the program, on the pipe its init reads; the exit code
            # stays Python's 1 (src/core/launch.py, rule S7).
            try:
                os.write(VERDICT_FD, b"M")
            except OSError:
                pass
        if isinstance(e, KeyboardInterrupt):
            # Python ends by SIGINT for an uncaught KeyboardInterrupt.
            code = -signal.SIGINT
    finish(code, MAIN)


def report_uncaught(e):
    """sys.excepthook, and what CPython prints when the hook itself fails."""
    try:
        sys.excepthook(type(e), e, e.__traceback__)
    except BaseException as hook_error:  # noqa: BLE001
        try:
            sys.stderr.write("Error in sys.excepthook:\n")
            tb = hook_error.__traceback__.tb_next  # from the hook, as CPython
            traceback.print_exception(type(hook_error), hook_error, tb, chain=False)
            sys.stderr.write("\nOriginal exception was:\n")
            traceback.print_exception(type(e), e, e.__traceback__)
        except BaseException:  # noqa: BLE001
            pass


def reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main():
    sock = socket.socket(fileno=3)
    helper = ctypes.PyDLL("/proc/self/fd/4")  # the GIL stays held in its calls
    os.close(4)
    spawn = helper.agentjail_warm_spawn
    spawn.restype = ctypes.c_int
    spawn.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int),
                      ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.c_char_p,
                      ctypes.c_size_t, ctypes.POINTER(ctypes.c_int)]
    egress_environment = helper.agentjail_warm_egress_environment
    egress_environment.restype = ctypes.POINTER(ctypes.c_char_p)
    egress_environment.argtypes = []
    prepare = helper.agentjail_warm_prepare
    prepare.restype = ctypes.c_int
    prepare.argtypes = [ctypes.POINTER(ctypes.c_int)]
    names = [n for n in (sys.argv[1] if len(sys.argv) > 1 else "").split(",") if n]
    preload(sock, names)
    say(sock, "R")
    reply = ctypes.create_string_buffer(REPLY_LEN)
    fd_array = (ctypes.c_int * MAX_FDS)()
    pidfd = ctypes.c_int(-1)
    spare = (ctypes.c_int * 3)(-1, -1, -1)
    while True:
        reap()
        if spare[0] < 0 and prepare(spare) < 0:
            spare[0] = spare[1] = spare[2] = -1
        msg, anc, flags, _ = sock.recvmsg(4096, socket.CMSG_SPACE(MAX_FDS * 4))
        if not msg:
            # The host closed its end, or is gone: runs still going end
            # with this process (their inits' PDEATHSIG).
            os._exit(0)
        fds = array("i")
        for level, kind, data in anc:
            if level == SOL_SOCKET and kind == SCM_RIGHTS:
                fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
        nfds = len(fds) if len(fds) <= MAX_FDS and not flags & socket.MSG_CTRUNC else -1
        for i in range(min(len(fds), MAX_FDS)):
            fd_array[i] = fds[i]
        pidfd.value = -1
        rc = spawn(msg, len(msg), fd_array, nfds, ctypes.byref(pidfd), reply, REPLY_LEN, spare)
        if rc == 0:
            run_program(sock, egress_environment)
        for fd in fds:
            os.close(fd)
        # The namespaces are the run's now (or, if it never started,
        # nobody's): the next run gets new ones.
        for i in range(3):
            if spare[i] >= 0:
                os.close(spare[i])
                spare[i] = -1
        anc_out = [(SOL_SOCKET, SCM_RIGHTS, array("i", [pidfd.value]))] if rc > 0 else []
        sock.sendmsg([reply.raw], anc_out)
        if pidfd.value >= 0:
            os.close(pidfd.value)


main()
