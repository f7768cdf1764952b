# agentjail's docker tier: PID 1 of every container, run as
# `python3 -I -S -c <this file>`.
#
# stdin starts with one header line; its first word says which of two jobs
# this is.
#
# A run: "NONCE DEADLINE\n", then the program. This writes the program into
# the workspace, runs it as a child with a clean environment and stdin from
# /dev/null, reaps every orphan while it runs (python as PID 1 of a program
# would leave them as zombies), and when the program ends kills whatever it
# left behind and reports, as the last bytes on stderr:
#
#     \0agentjail-exit NONCE WSTATUS CPU_US MAXRSS_KB MEMERR\n
#
# MEMERR is 1 when the program's launcher wrote its verdict pipe (its fd 3:
# an uncaught MemoryError ended it, AJ_VERDICT_FD in src/core/status.h),
# else 0; the exit code stays the program's own.
#
# The host strips the report and checks it against Docker's own exit code,
# so a program that prints a forged one can only mislabel its own figures.
#
# A session: "session DEADLINE LENGTH\n", then LENGTH bytes of the session
# interpreter (src/core/repl.py), then frames for as long as the session
# lives. A frame is a kind byte, a 32-bit big-endian length and that many
# bytes. From the host: "s" start an interpreter, "q" request bytes for its
# fd 3, "k" stop it (kill everything in the container but this process).
# To the host, on stdout: "R" ready, "o" / "e" / "r" the interpreter's
# stdout, stderr and reply bytes (fds 1, 2, 4), "x" it ended:
# "WSTATUS CPU_US MAXRSS_KB 0" (a cell's MemoryError is in its reply, not
# here), "f" it could not be started: why. Only this
# process writes to its stdout (the interpreter's fds are pipes of its own),
# so no frame needs a nonce: nothing inside can forge one.
#
# With egress rules (docs/egress.md), either header ends with one more word:
# the path of the egress proxy's unix socket, which the host mounted in.
# Before the program starts, this process listens on 127.0.0.1:3128 (the
# sandbox's own loopback; it has no other network) and carries each
# connection to that socket (Forwarder, a thread of its own). The proxy on
# the host decides every connection; the forwarder only moves bytes. The
# program itself may not make unix sockets (deny_unix_sockets): that is
# this process's alone, as the policy every tier runs under says.
import ctypes
import fcntl
import os
import select
import signal
import struct
import sys
import time

WORKSPACE = "/tmp/work"
# src/core/launch.py, given by the host as this script's first argument.
LAUNCH = sys.argv[1] if len(sys.argv) > 1 else ""
DEADLINE = [0.0]
LIBC = ctypes.CDLL(None, use_errno=True)
PR_SET_DUMPABLE = 4
# The environment every tier gives the program, nothing of the deployer's:
# the host's one table (rule E1, src/core/contract.c), as this script's
# arguments after LAUNCH.
ENV = dict(entry.split("=", 1) for entry in sys.argv[2:])
# The proxy's unix socket (the header's last word); empty: no egress.
EGRESS = [b""]
# Where programs find the proxy: CONTRACT_EGRESS_PORT (src/core/contract.h).
EGRESS_PORT = 3128


def start(argv, fds=None):
    """In the forked child: the program's fds, then exec. fds maps the
    child's fd numbers to this process's (a session's pipes, a run's
    verdict pipe); a run's child keeps this process's stdout and stderr."""
    try:
        os.chdir(WORKSPACE)
        null = os.open("/dev/null", os.O_RDONLY)
        # Every fd the child gets lifted above 4 first, so that no dup2
        # below clobbers another (dup2 clears close-on-exec).
        wanted = dict(fds or {})
        wanted[0] = null
        lifted = {n: fcntl.fcntl(f, fcntl.F_DUPFD_CLOEXEC, 5) for n, f in wanted.items()}
        for n, f in lifted.items():
            os.dup2(f, n)
        # Nothing else crosses exec: in a session, not this process's own
        # stdout (the attach stream), which only this process may write.
        for n in (3, 4):
            if n not in wanted:
                try:
                    os.close(n)
                except OSError:
                    pass  # not open
        os.closerange(5, 1 << 20)
        # Dumpable again (fork kept PID 1's setting), or its own /proc
        # files are root's and the line below is refused. Nothing else of
        # the sandbox runs yet, and exec replaces this memory.
        LIBC.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
        # The OOM killer takes the program and its children, never this
        # reporter (raising one's own score needs no privilege).
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
        # Python ignores SIGPIPE and SIGXFSZ itself, and SIGINT and SIGXCPU
        # are ignored below; an ignored signal stays ignored across exec,
        # and the program must start with the defaults: every one, those
        # ignored above this container too (Docker's start left 32).
        for s in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGXCPU,
                  signal.SIGCHLD, signal.SIGALRM):
            signal.signal(s, signal.SIG_DFL)
        for s in signal.valid_signals():
            if s not in (signal.SIGKILL, signal.SIGSTOP) and \
                    signal.getsignal(s) == signal.SIG_IGN:
                signal.signal(s, signal.SIG_DFL)
        default_glibc_signals()
        signal.set_wakeup_fd(-1)
        if EGRESS[0]:
            deny_unix_sockets()
        os.execve(argv[0], argv, ENV)
    except BaseException as e:
        os.write(2, ("agentjail: cannot start %s: %s\n" % (argv[0], e)).encode())
    os._exit(127)


class KernelSigaction(ctypes.Structure):
    """The kernel's struct sigaction (x86_64, aarch64)."""
    _fields_ = [("handler", ctypes.c_void_p), ("flags", ctypes.c_ulong),
                ("restorer", ctypes.c_void_p), ("mask", ctypes.c_uint64)]


# rt_sigaction's number, by machine.
SYS_RT_SIGACTION = {"x86_64": 13, "aarch64": 134}


def default_glibc_signals():
    """glibc's own signals 32 and 33, which neither Python nor glibc's
    sigaction will touch, back to their default by the kernel itself: one
    ignored stays ignored across exec. In the forked child only (one
    thread, about to exec)."""
    nr = SYS_RT_SIGACTION.get(os.uname().machine)
    if nr is None:
        return
    dfl = KernelSigaction()  # all zero: SIG_DFL, no flags, no mask
    for sig in (32, 33):
        LIBC.syscall(nr, sig, ctypes.byref(dfl), None, 8)


# ---- egress ----

# seccomp's audit arch and socket(2)'s number, by machine (the policy's two).
SECCOMP_ARCH = {"x86_64": (0xC000003E, 41), "aarch64": (0xC00000B7, 198)}


def deny_unix_sockets():
    """In the forked child, before exec: socket(AF_UNIX) fails with EPERM
    for the program and everything it starts, as on every tier (the policy,
    src/linux/seccomp_policy.c). The container's own filter lets it through
    when egress is on, for the forwarder alone; this filter, inherited
    across exec and fork and never removable, takes it back. socketpair
    stays, as in the policy. Raises if it cannot be set: the program is
    then not started."""
    arch, nr = SECCOMP_ARCH[os.uname().machine]
    allow, eperm = 0x7FFF0000, 0x00050000 | 1
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06

    def op(code, jt, jf, k):
        return struct.pack("=HBBI", code, jt, jf, k)

    prog = b"".join([
        op(ld, 0, 0, 4),               # the call's arch
        op(jeq, 1, 0, arch),
        op(ret, 0, 0, eperm),          # another ABI (i386): nothing
        op(ld, 0, 0, 0),               # the call's number
        op(jge, 4, 0, 0x40000000),     # x32's numbers: nothing
        op(jeq, 0, 2, nr),
        op(ld, 0, 0, 16),              # socket's family (low word of arg 0)
        op(jeq, 1, 0, 1),              # AF_UNIX
        op(ret, 0, 0, allow),
        op(ret, 0, 0, eperm),
    ])
    buf = ctypes.create_string_buffer(prog)
    fprog = struct.pack("=HxxxxxxQ", len(prog) // 8, ctypes.addressof(buf))
    PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
    if (LIBC.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or
            LIBC.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, fprog, 0, 0) != 0):
        raise OSError(ctypes.get_errno(), "seccomp: " + os.strerror(ctypes.get_errno()))


class Forwarder:
    """127.0.0.1:EGRESS_PORT inside the sandbox, each connection carried
    to the proxy's unix socket on the host. One thread for all of them
    (every thread counts against the pids limit), never blocking: a
    connection's bytes are read only while the other side's buffer has
    room, so memory stays at CHUNK per direction."""

    CHUNK = 65536

    def __init__(self, path):
        self.path = path
        self.sel = selectors.DefaultSelector()
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", EGRESS_PORT))
        self.listener.listen(128)
        self.listener.setblocking(False)
        self.sel.register(self.listener, selectors.EVENT_READ, None)
        self.accepting = True

    def start(self):
        threading.Thread(target=self.serve, daemon=True).start()

    def accept(self):
        try:
            inner, _ = self.listener.accept()
        except BlockingIOError:
            return
        except OSError:
            # Out of fds (the program's limit is ours): wait for a
            # connection to end before accepting again.
            self.sel.unregister(self.listener)
            self.accepting = False
            return
        outer = None
        try:
            outer = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            outer.setblocking(False)
            outer.connect(self.path)
        except OSError:
            # The proxy is gone or its queue is full: this connection
            # fails, closed (never waited for here).
            inner.close()
            if outer:
                outer.close()
            return
        inner.setblocking(False)
        a, b = End(inner), End(outer)
        a.peer, b.peer = b, a
        self.update(a)
        self.update(b)

    def update(self, e):
        if e.closed:
            return
        events = 0
        if not e.eof and len(e.peer.out) < self.CHUNK:
            events |= selectors.EVENT_READ
        if e.out:
            events |= selectors.EVENT_WRITE
        if events and e.registered:
            self.sel.modify(e.sock, events, e)
        elif events:
            self.sel.register(e.sock, events, e)
        elif e.registered:
            self.sel.unregister(e.sock)
        e.registered = bool(events)
        if e.eof and e.peer.eof and not e.out and not e.peer.out:
            self.close(e)

    def close(self, e):
        for x in (e, e.peer):
            if x.closed:
                continue
            if x.registered:
                self.sel.unregister(x.sock)
            x.sock.close()
            x.closed = True
        if not self.accepting:
            self.sel.register(self.listener, selectors.EVENT_READ, None)
            self.accepting = True

    def serve(self):
        while True:
            for key, mask in self.sel.select():
                e = key.data
                if e is None:
                    self.accept()
                    continue
                if e.closed:
                    continue
                if mask & selectors.EVENT_WRITE and e.out:
                    self.write(e)
                if mask & selectors.EVENT_READ:
                    self.read(e)
                self.update(e)
                self.update(e.peer)

    def write(self, e):
        try:
            del e.out[:e.sock.send(e.out)]
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            # e's reader is gone (the proxy closed after a refusal while
            # the program still sent its body): what was for e is
            # dropped, and so is what still comes for it, but what e
            # has for its peer still goes there. Closing both at once
            # lost the proxy's answer: the program read "closed
            # without response".
            e.out.clear()
            e.gone = True
            return
        if not e.out and e.peer.eof:
            self.half_close(e)

    def read(self, e):
        try:
            data = e.sock.recv(self.CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""  # a reset ends what e sends, as its EOF does
        if data:
            if not e.peer.gone:
                e.peer.out += data
            return
        e.eof = True
        if not e.peer.out:
            self.half_close(e.peer)

    def half_close(self, e):
        """Nothing more goes to e: its reader sees the end."""
        if e.gone:
            return
        try:
            e.sock.shutdown(socket.SHUT_WR)
        except OSError:
            e.gone = True


class End:
    """One side of a forwarded connection: its socket and the bytes
    waiting to be written to it."""

    def __init__(self, sock):
        self.sock = sock
        self.peer = None
        self.out = bytearray()
        self.eof = False          # nothing more to read from it
        self.gone = False         # it takes nothing more: what is for it is dropped
        self.registered = False
        self.closed = False


def start_egress():
    """Listens for the program before it starts; a failure ends the sandbox
    (the run then has no report: the host says why)."""
    if not EGRESS[0]:
        return
    global selectors, socket, threading
    import selectors
    import socket
    import threading
    try:
        Forwarder(EGRESS[0].decode()).start()
    except OSError as e:
        os.write(2, ("agentjail: egress: cannot listen on 127.0.0.1:%d: %s\n"
                     % (EGRESS_PORT, e)).encode())
        os._exit(125)


def backstop(signum, frame):
    # The host stops the container at the wall clock (a session: when it
    # closes); this fires only if the host is gone: nothing outlives the
    # deadline anyway. A SIGALRM the program sends before then is ignored.
    if time.monotonic() < DEADLINE[0]:
        return
    try:
        os.kill(-1, signal.SIGKILL)
    finally:
        os._exit(137)


def read_header():
    """The first line of stdin, and the bytes read past it."""
    data = b""
    while b"\n" not in data:
        chunk = os.read(0, 65536)
        if not chunk:
            os._exit(125)  # the host is gone before it said anything
        data += chunk
    head, _, rest = data.partition(b"\n")
    return head, rest


def make_workspace():
    try:
        os.mkdir(WORKSPACE, 0o700)
    except OSError as e:
        os.write(2, ("agentjail: cannot make the workspace: %s\n" % e).encode())
        os._exit(125)


def run(nonce, rest):
    chunks = [rest]
    while True:
        chunk = os.read(0, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    code = b"".join(chunks)
    make_workspace()
    try:
        fd = os.open(WORKSPACE + "/main.py", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with open(fd, "wb") as f:
            f.write(code)
    except OSError as e:
        os.write(2, ("agentjail: cannot write the program: %s\n" % e).encode())
        os._exit(125)
    # The launcher's verdict pipe (its fd 3): read once the program has
    # ended. The program holds the write end, so it can say MEMERR 1 of
    # its own run only.
    verdict_r, verdict_w = os.pipe()
    os.set_blocking(verdict_r, False)
    pid = os.fork()
    if pid == 0:
        # -u: what the program printed before a timeout or a kill is not
        # lost in its own buffers (as in every tier).
        # main.py through the launcher (argv[1], src/core/launch.py): as
        # `python3 -I -u main.py`, and it writes the verdict pipe when a
        # MemoryError ends the program.
        start([sys.executable, "-I", "-u", "-c", LAUNCH], {3: verdict_w})
    os.close(verdict_w)
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
    try:
        memory_error = len(os.read(verdict_r, 1)) == 1
    except BlockingIOError:
        memory_error = False
    report = b"\0agentjail-exit %s %d %d %d %d\n" % (nonce, status, int(cpu * 1e6), rss,
                                                     memory_error)
    os.write(2, report)
    if os.WIFEXITED(status):
        os._exit(os.WEXITSTATUS(status))
    os._exit(128 + os.WTERMSIG(status))


# ---- a session ----

CHUNK = 65536
# The interpreter's output is read only while less than this waits for the
# host (which reads during calls only): past it, the interpreter blocks on
# its own pipes, as it would in the jail tiers, and this process still
# reads its stdin (a stop must always get through).
HIGH_WATER = 1 << 20


class Session:
    def __init__(self, repl):
        self.repl = repl
        self.inbox = bytearray()      # from the host, not yet parsed
        self.outbox = bytearray()     # to the host, not yet written
        self.requests = bytearray()   # for the interpreter's fd 3
        self.pid = 0
        self.pipes = {}               # our fd -> frame kind ("o", "e", "r")
        self.req_w = -1
        self.cpu = 0.0
        self.rss = 0

    def send(self, kind, payload=b""):
        self.outbox += kind + struct.pack(">I", len(payload)) + payload

    def start_interpreter(self):
        if self.pid:
            return
        fds = []
        try:
            for _ in range(4):
                fds += os.pipe()
            out_r, out_w, err_r, err_w, req_r, req_w, rep_r, rep_w = fds
            pid = os.fork()
        except OSError as e:
            # The pids limit, say: this call fails, the session stays.
            for fd in fds:
                os.close(fd)
            self.send(b"f", str(e).encode()[:300])
            return
        if pid == 0:
            start([sys.executable, "-I", "-u", "-c", self.repl],
                  {1: out_w, 2: err_w, 3: req_r, 4: rep_w})
        for fd in (out_w, err_w, req_r, rep_w):
            os.close(fd)
        for fd in (out_r, err_r, rep_r, req_w):
            os.set_blocking(fd, False)
        self.pid = pid
        self.pipes = {out_r: b"o", err_r: b"e", rep_r: b"r"}
        self.req_w = req_w
        self.requests.clear()
        self.cpu, self.rss = 0.0, 0

    def read_pipe(self, fd):
        """One read of what is there: all of it (a pipe holds at most
        1 MiB). False once there is nothing (EOF closes the pipe)."""
        try:
            data = os.read(fd, 1 << 20)
        except BlockingIOError:
            return False
        kind = self.pipes[fd]
        if not data:
            os.close(fd)
            del self.pipes[fd]
            return False
        for i in range(0, len(data), CHUNK):
            self.send(kind, data[i:i + CHUNK])
        return True

    def reap(self):
        while True:
            try:
                p, ws, ru = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if p == 0:
                return
            self.cpu += ru.ru_utime + ru.ru_stime
            self.rss = max(self.rss, ru.ru_maxrss)
            if p == self.pid:
                self.ended(ws)

    def ended(self, status):
        # The interpreter's state is gone with it: so is what it left
        # running. kill(-1) from PID 1 reaches everything else in the
        # container; then every child is reaped before the report.
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        while True:
            try:
                p, ws, ru = os.wait4(-1, 0)
            except ChildProcessError:
                break
            self.cpu += ru.ru_utime + ru.ru_stime
            self.rss = max(self.rss, ru.ru_maxrss)
        # Every writer is dead: what the pipes hold goes out before the
        # report, and then they are at EOF.
        for fd in list(self.pipes):
            while self.read_pipe(fd):
                pass
            if fd in self.pipes:
                os.close(fd)  # a writer escaped the kill: not waited for
        os.close(self.req_w)
        self.pipes, self.req_w, self.pid = {}, -1, 0
        # A request it never took must not reach the next interpreter.
        self.requests.clear()
        self.send(b"x", b"%d %d %d 0" % (status, int(self.cpu * 1e6), self.rss))

    def stop(self):
        if self.pid:
            try:
                os.kill(-1, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def take_frames(self):
        while len(self.inbox) >= 5:
            kind = bytes(self.inbox[:1])
            n = struct.unpack(">I", self.inbox[1:5])[0]
            if len(self.inbox) < 5 + n:
                return
            payload = bytes(self.inbox[5:5 + n])
            del self.inbox[:5 + n]
            if kind == b"s":
                self.start_interpreter()
            elif kind == b"q" and self.pid:
                self.requests += payload
            elif kind == b"k":
                self.stop()

    def serve(self, wake_r):
        os.set_blocking(1, False)
        self.send(b"R")
        while True:
            p = select.poll()
            p.register(0, select.POLLIN)
            p.register(wake_r, select.POLLIN)
            if self.outbox:
                p.register(1, select.POLLOUT)
            if len(self.outbox) < HIGH_WATER:
                for fd in self.pipes:
                    p.register(fd, select.POLLIN)
            if self.requests and self.req_w >= 0:
                p.register(self.req_w, select.POLLOUT)
            ready = dict(p.poll())
            if ready.get(wake_r):
                try:
                    os.read(wake_r, 4096)
                except BlockingIOError:
                    pass
            if ready.get(0):
                data = os.read(0, 1 << 20)
                if not data:
                    # The host is gone (its attach stream closed): the
                    # session ends with it.
                    try:
                        os.kill(-1, signal.SIGKILL)
                    finally:
                        os._exit(0)
                self.inbox += data
                self.take_frames()
            if self.req_w >= 0 and ready.get(self.req_w):
                try:
                    n = os.write(self.req_w, self.requests[:CHUNK])
                    del self.requests[:n]
                except BlockingIOError:
                    pass
                except OSError:
                    self.requests.clear()  # it closed fd 3: its end says how
            reply = [fd for fd, k in self.pipes.items() if k == b"r" and ready.get(fd)]
            # A reply goes out after all the output the interpreter wrote
            # before it: the reply pipe is read first, then stdout and
            # stderr to their end (everything written before the reply is
            # in them by now), and only then is the reply sent.
            held = []
            for fd in reply:
                try:
                    held.append((fd, os.read(fd, 1 << 20)))
                except BlockingIOError:
                    pass
            for fd, kind in list(self.pipes.items()):
                if kind != b"r" and (ready.get(fd) or held):
                    # Bounded: a thread left flooding must not hold the
                    # loop (the host's cap stops it anyway).
                    for _ in range(64 if held else 1):
                        if fd not in self.pipes or not self.read_pipe(fd):
                            break
            for fd, data in held:
                if not data:
                    os.close(fd)
                    del self.pipes[fd]
                for i in range(0, len(data), CHUNK):
                    self.send(b"r", data[i:i + CHUNK])
            self.reap()
            if self.outbox:
                try:
                    n = os.write(1, self.outbox)
                    del self.outbox[:n]
                except BlockingIOError:
                    pass


def session(deadline, length, rest):
    repl = bytearray(rest)
    while len(repl) < length:
        chunk = os.read(0, length - len(repl))
        if not chunk:
            os._exit(125)
        repl += chunk
    s = Session(bytes(repl[:length]).decode())
    s.inbox += repl[length:]
    make_workspace()
    # SIGCHLD wakes the loop through a pipe; the handler itself does
    # nothing (Python runs it between bytecodes).
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    s.take_frames()
    s.serve(wake_r)


def main():
    # Python's SIGINT handler would let the program end this reporter
    # with os.kill(1, SIGINT) (KeyboardInterrupt); PID 1 of the other
    # tiers ignores what comes from inside.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # kill(-1) below means "everything in the sandbox" only for PID 1 of
    # a pid namespace of its own; anywhere else (started by hand on a host,
    # as root) it would kill every process of the machine.
    if os.getpid() != 1:
        os.write(2, b"agentjail: boot.py runs only as PID 1 of a container\n")
        os._exit(125)
    # The CPU limit holds for every process of the container, this one
    # too: its own seconds (a session's hour of relaying) must not end it.
    # The hard limit still does, a second later.
    signal.signal(signal.SIGXCPU, signal.SIG_IGN)
    # Not dumpable: the program (same uid) cannot open /proc/1/mem to
    # read the nonce or rewrite this reporter, nor /proc/1/fd/1 to write
    # frames of its own. exec makes the program dumpable again, as any
    # process.
    if LIBC.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        os.write(2, b"agentjail: prctl(PR_SET_DUMPABLE) failed\n")
        os._exit(125)
    head, rest = read_header()
    words = head.split(b" ")
    is_session = words[0] == b"session"
    seconds = float((words[1] if len(words) > 1 else b"") or 3600)
    if len(words) > (3 if is_session else 2):
        EGRESS[0] = words[-1]
    start_egress()
    DEADLINE[0] = time.monotonic() + seconds - 0.1
    signal.signal(signal.SIGALRM, backstop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    if is_session:
        session(seconds, int(words[2]), rest)
    else:
        run(words[0], rest)


main()
