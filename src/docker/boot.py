# agentjail's docker tier: PID 1 of every container, run as
# `python3 -I -S -c <this file>`.
#
# stdin carries one line with the run's nonce and a deadline in seconds,
# then the program. This writes
# the program into the workspace, runs it as a child with a clean environment
# and stdin from /dev/null, reaps every orphan while it runs (python as PID 1
# of a program would leave them as zombies), and when the program ends kills
# whatever it left behind and reports, as the last bytes on stderr:
#
#     \0agentjail-exit NONCE WSTATUS CPU_US MAXRSS_KB\n
#
# The host strips the report and checks it against Docker's own exit code,
# so a program that prints a forged one can only mislabel its own figures.
import ctypes
import os
import signal
import sys
import time

WORKSPACE = "/tmp/work"
DEADLINE = [0.0]
LIBC = ctypes.CDLL(None, use_errno=True)
PR_SET_DUMPABLE = 4
# The environment every tier gives the program: nothing of the deployer's.
ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "HOME": WORKSPACE,
    "TMPDIR": "/tmp",
    "MALLOC_ARENA_MAX": "2",
}


def start(python):
    try:
        os.chdir(WORKSPACE)
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        # Dumpable again (fork kept PID 1's setting), or its own /proc
        # files are root's and the line below is refused. Nothing else of
        # the sandbox runs yet, and exec replaces this memory.
        LIBC.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
        # The OOM killer takes the program and its children, never this
        # reporter (raising one's own score needs no privilege).
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
        # Python ignores SIGPIPE and SIGXFSZ itself, and SIGINT is ignored
        # below; an ignored signal stays ignored across exec, and the
        # program must start with the defaults.
        for s in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT):
            signal.signal(s, signal.SIG_DFL)
        # -u: what the program printed before a timeout or a kill is not
        # lost in its own buffers (as in every tier).
        os.execve(python, [python, "-I", "-u", "main.py"], ENV)
    except BaseException as e:
        os.write(2, ("agentjail: cannot start %s: %s\n" % (python, e)).encode())
    os._exit(127)


def backstop(signum, frame):
    # The host stops the container at the wall clock; this fires only if
    # the host is gone: nothing outlives the deadline anyway. A SIGALRM the
    # program sends before then is ignored.
    if time.monotonic() < DEADLINE[0]:
        return
    try:
        os.kill(-1, signal.SIGKILL)
    finally:
        os._exit(137)


def main():
    # Python's SIGINT handler would let the program end this reporter
    # with os.kill(1, SIGINT) (KeyboardInterrupt); PID 1 of the other
    # tiers ignores what comes from inside.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Not dumpable: the program (same uid) cannot open /proc/1/mem to
    # read the nonce or rewrite this reporter. exec makes the program
    # dumpable again, as any process.
    if LIBC.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        os.write(2, b"agentjail: prctl(PR_SET_DUMPABLE) failed\n")
        os._exit(125)
    data = sys.stdin.buffer.read()
    head, _, code = data.partition(b"\n")
    nonce, _, deadline = head.partition(b" ")
    seconds = float(deadline or 3600)
    DEADLINE[0] = time.monotonic() + seconds - 0.1
    signal.signal(signal.SIGALRM, backstop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        os.mkdir(WORKSPACE, 0o700)
        fd = os.open(WORKSPACE + "/main.py", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with open(fd, "wb") as f:
            f.write(code)
    except OSError as e:
        os.write(2, ("agentjail: cannot write the program: %s\n" % e).encode())
        os._exit(125)
    pid = os.fork()
    if pid == 0:
        start(sys.executable)
    status, cpu, rss = None, 0.0, 0
    while True:
        try:
            p, ws, ru = os.wait4(-1, 0)
        except ChildProcessError:
            break
        cpu += ru.ru_utime + ru.ru_stime
        rss = max(rss, ru.ru_maxrss)
        if p == pid:
            status = ws
            # What the program left behind ends with it, as in every tier:
            # kill(-1) from PID 1 reaches everything else in the container.
            try:
                os.kill(-1, signal.SIGKILL)
            except ProcessLookupError:
                pass
    report = b"\0agentjail-exit %s %d %d %d\n" % (nonce, status, int(cpu * 1e6), rss)
    os.write(2, report)
    if os.WIFEXITED(status):
        os._exit(os.WEXITSTATUS(status))
    os._exit(128 + os.WTERMSIG(status))


main()
