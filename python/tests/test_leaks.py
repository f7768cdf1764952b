"""500 runs through the binding leave nothing in the caller: no fd, no
thread, and no memory growth (each run returns 32 KiB of output, so a
result the binding failed to free would grow the process by 16 MiB)."""
import gc
import os
import threading

from agentjail import Status

RUNS = 500
CODE = "import sys\nprint('x' * 16383)\nprint('y' * 16383, file=sys.stderr)\n"


def fds():
    return len(os.listdir("/proc/self/fd"))


def tasks():
    return len(os.listdir("/proc/self/task"))


def rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_500_runs_leak_nothing(sb):
    # Warm up: the allocator's arenas and the library's first-use state
    # (caches, the Python objects of the binding) settle here.
    for _ in range(50):
        assert sb.run(CODE).ok
    gc.collect()
    fds0, tasks0, threads0, rss0 = fds(), tasks(), threading.active_count(), rss_kb()
    objects0 = len(gc.get_objects())
    statuses = set()
    for i in range(RUNS):
        ex = sb.run(CODE, timeout=5 if i % 2 else None)  # half with a deadline timer
        statuses.add(ex.status)
        assert len(ex.stdout_bytes) == 16384 and len(ex.stderr_bytes) == 16384
    gc.collect()
    assert statuses == {Status.OK}
    assert fds() == fds0, "file descriptors leaked"
    # At most as many: a thread an earlier test of this process left to
    # finish (a stream's worker, an executor's) may end meanwhile, and that
    # is no leak of these runs (seen once in a loaded run).
    assert tasks() <= tasks0 and threading.active_count() <= threads0, \
        f"threads leaked: {tasks0} -> {tasks()} tasks, {threads0} -> " \
        f"{threading.active_count()} Python threads"
    grown = rss_kb() - rss0
    assert grown < 4096, f"resident memory grew {grown} KiB over {RUNS} runs"
    assert len(gc.get_objects()) - objects0 < 1000, "Python objects accumulate"


def test_sessions_leak_nothing(sb):
    for _ in range(3):
        with sb.session() as s:
            s.run("1")
    gc.collect()
    fds0, tasks0, rss0 = fds(), tasks(), rss_kb()
    for _ in range(25):
        with sb.session() as s:
            s.put_file("a.txt", b"a" * 65536)
            assert s.get_file("a.txt") == b"a" * 65536
            assert s.run(CODE).ok
    gc.collect()
    assert fds() == fds0
    assert tasks() <= tasks0  # each session's keeper thread is gone (at most: as above)
    assert rss_kb() - rss0 < 4096
