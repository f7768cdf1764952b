"""Threads: runs from 8 threads at once, the GIL released while a run is in
progress, cancel() from another thread, a caller's deadline, close() while
runs are in progress, and Ctrl-C on the main thread."""
import secrets
import signal
import threading
import time

import pytest

from agentjail import SandboxClosed, Status

SLEEP = "import time\nprint('started', flush=True)\ntime.sleep(30)\nprint('finished')\n"


def test_eight_threads_each_get_their_own_run(sb):
    results, errors = {}, []

    def worker(n):
        try:
            for i in range(4):
                token = f"{n}-{i}-{secrets.token_hex(4)}"
                ex = sb.run(f"import os\nprint({token!r}, os.getpid())\n")
                results[token] = ex
        except Exception as e:  # reported below, with the thread's number
            errors.append((n, e))
    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(results) == 32
    for token, ex in results.items():
        assert ex.ok and ex.stdout.split()[0] == token


def test_the_gil_is_released_during_a_run(sb):
    ticks = []
    running = threading.Event()

    def ticker():
        running.wait()
        while running.is_set():
            ticks.append(1)
            time.sleep(0.01)
    t = threading.Thread(target=ticker)
    t.start()
    try:
        running.set()
        ex = sb.run("import time\ntime.sleep(1)\n")
    finally:
        running.clear()
        t.join()
    assert ex.ok
    # Had the run held the GIL, the ticker could not have ticked during it.
    assert len(ticks) >= 10


def cancel_after_start(ex_box, fn):
    t = threading.Thread(target=lambda: ex_box.append(fn()))
    t.start()
    time.sleep(0.5)
    return t


def test_cancel_from_another_thread(sb):
    box = []
    t = cancel_after_start(box, lambda: sb.run(SLEEP))
    # cancel() reaches runs in progress; retry until the run has begun.
    while t.is_alive() and sb.cancel() == 0:
        time.sleep(0.05)
    t.join()
    ex = box[0]
    assert ex.status is Status.KILLED
    assert ex.message == "cancelled by the caller; the run was stopped"
    assert "finished" not in ex.stdout
    assert sb.cancel() == 0  # nothing in progress: nothing to stop
    assert sb.run("print(1)").ok  # later runs are not affected


def test_close_stops_runs_in_progress(sandbox_for):
    sb = sandbox_for("process")
    box = []
    t = cancel_after_start(box, lambda: sb.run(SLEEP))
    sb.close()
    t.join()
    assert box[0].status is Status.KILLED
    with pytest.raises(SandboxClosed):
        sb.run("print(1)")


def test_ctrl_c_on_the_main_thread_stops_the_run(sb):
    assert threading.current_thread() is threading.main_thread()
    main = threading.main_thread().ident
    # Python's own Ctrl-C handler, whatever this process inherited: a
    # shell's background job starts with SIGINT ignored, and Python then
    # installs none (so Ctrl-C could not reach any program of its).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.5, signal.pthread_kill, (main, signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            ex = sb.run(SLEEP)
            # Reached only if the run ended without the Ctrl-C: say how.
            pytest.fail(f"the run returned {ex.status} ({ex.message}) before Ctrl-C reached "
                        f"the main thread; stderr: {ex.stderr[-300:]!r}")
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    # The run was stopped, not left running (conftest counts its processes).
    assert sb.run("print('after')").stdout == "after\n"


def test_session_calls_from_threads_wait_their_turn(sb):
    with sb.session() as s:
        s.run("n = 0")
        errors = []

        def worker():
            try:
                for _ in range(5):
                    assert s.run("n += 1").ok
            except Exception as e:
                errors.append(e)
        threads = [threading.Thread(target=worker) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert s.run("print(n)").stdout == "40\n"


def test_session_cancel(sb):
    with sb.session() as s:
        s.run("x = 1")
        box = []
        t = cancel_after_start(box, lambda: s.run(SLEEP))
        while t.is_alive() and s.cancel() == 0:
            time.sleep(0.05)
        t.join()
        assert box[0].status is Status.KILLED
        # The interpreter was stopped, so its state with it: the next call
        # runs on a fresh one and says so.
        ex = s.run("print('x' in globals())")
        assert ex.stdout == "False\n"
        assert "interpreter was restarted" in ex.message
