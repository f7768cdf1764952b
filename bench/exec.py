#!/usr/bin/env python3
"""bench/exec.py: what a command in a session costs over the bare program
(issue 36's goal: exec("true") at most 2 ms over /bin/true run from the
host), and how soon a background command's first output byte reaches a
caller that waits on it. Figures only, never an assertion.

  exec       /bin/true from this host (subprocess, argv, no shell), then
             Session.exec(["true"]) on the process and container tiers, and
             on a warm process sandbox's session; ROUNDS interleaved rounds
             of RUNS each; medians and each tier's median minus bare's
  first      Session.spawn of a command that prints one line at once and
             then sleeps; the time from spawn's return to the first
             on_stdout callback of a wait started right after it (median;
             it includes the command's own start, python3's)
  echo       a line sent to a background `cat` (send_stdin) until the wait's
             on_stdout sees it come back, and a key typed into a terminal
             (Session.pty running cat) until its echo shows (medians)
  js         console.log(1): bare `node -e` from this host, a one-shot
             JavaScript run and a session's JavaScript call on the process
             tier (medians, and the ratio to bare node)

    AJ_PYTEST_UID_BASE=... python3 bench/exec.py [RUNS] [ROUNDS]
"""
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
import agentjail  # noqa: E402

UID_BASE = int(os.environ.get("AJ_PYTEST_UID_BASE", "2110000000"))


def bare(n):
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run(["/bin/true"], check=True)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def in_session(session, n):
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        ex = session.exec(["true"])
        out.append((time.perf_counter() - t0) * 1000)
        assert ex.ok, ex
    return out


def first_byte(session, n):
    out = []
    for _ in range(n):
        seen = []
        p = session.spawn(["python3", "-u", "-c", "print('x'); import time; time.sleep(0.3)"])
        t0 = time.perf_counter()
        p.wait(on_stdout=lambda text: seen or seen.append(time.perf_counter()))
        out.append((seen[0] - t0) * 1000)
    return out


def echo_round_trips(session, proc, n, line):
    """Times from sending line to seeing it come back on proc's output,
    with one wait streaming it meanwhile."""
    import threading

    got, seen = threading.Condition(), []
    out = []

    def on_out(text):
        with got:
            seen.append(text)
            got.notify_all()

    waiter = threading.Thread(target=proc.wait, kwargs={"on_stdout": on_out}, daemon=True)
    waiter.start()
    for i in range(n):
        want = f"{line}{i}"
        t0 = time.perf_counter()
        proc.send_stdin(want + "\n")
        with got:
            while want not in "".join(seen):
                got.wait(30)
            seen.clear()
        out.append((time.perf_counter() - t0) * 1000)
    proc.kill()
    waiter.join(30)
    return out


def javascript(n):
    sb = agentjail.Sandbox(uid_base=UID_BASE + 300)
    session = sb.session()
    try:
        lat = {"bare node -e": [], "one-shot run": [], "session call": []}
        session.run("console.log(0)", language="javascript")  # node started
        for _ in range(n):
            t0 = time.perf_counter()
            subprocess.run(["node", "-e", "console.log(1)"], check=True, capture_output=True)
            lat["bare node -e"].append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            ex = sb.run("console.log(1)", language="javascript")
            lat["one-shot run"].append((time.perf_counter() - t0) * 1000)
            assert ex.ok and ex.stdout == "1\n", ex
            t0 = time.perf_counter()
            ex = session.run("console.log(1)", language="javascript")
            lat["session call"].append((time.perf_counter() - t0) * 1000)
            assert ex.ok and ex.stdout == "1\n", ex
        base = statistics.median(lat["bare node -e"])
        print(f"JavaScript console.log(1), process tier, {n} runs interleaved:")
        for name, xs in lat.items():
            m = statistics.median(xs)
            print(f"  {name:14} median {m:8.2f} ms   {m / base:5.2f}x bare node")
    finally:
        session.close()
        sb.close()


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    # The default image (agentjail image build; make demo makes it): it has
    # coreutils' true, which the test images copied from this host lack.
    image = os.environ.get("AJ_BENCH_IMAGE", "default")
    sandboxes = {
        "process": agentjail.Sandbox(uid_base=UID_BASE),
        "container": agentjail.Sandbox(tier="container", image=image, uid_base=UID_BASE + 100),
        "process warm": agentjail.Sandbox(warm=True, uid_base=UID_BASE + 200),
    }
    sessions = {k: sb.session() for k, sb in sandboxes.items()}
    try:
        for s in sessions.values():
            in_session(s, 5)  # warm-up: the interpreter, subprocess's import
        lat = {"bare /bin/true": []}
        lat.update({k: [] for k in sessions})
        for r in range(rounds):
            order = list(lat) if r % 2 == 0 else list(lat)[::-1]
            for name in order:
                lat[name] += bare(runs) if name == "bare /bin/true" else \
                    in_session(sessions[name], runs)
        print(f"exec(['true']) in a session, {rounds} x {runs} runs, interleaved, "
              f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
        base = statistics.median(lat["bare /bin/true"])
        for name, xs in lat.items():
            m = statistics.median(xs)
            print(f"  {name:16} median {m:7.2f} ms   over bare {m - base:+7.2f} ms")
        fb = first_byte(sessions["process"], 20)
        print(f"background command, first output byte to a waiting caller (process tier, 20 "
              f"runs): median {statistics.median(fb):.2f} ms, max {max(fb):.2f} ms")
        s = sessions["process"]
        bg = echo_round_trips(s, s.spawn(["cat"], keep_stdin=True), 20, "line")
        tty = echo_round_trips(s, s.pty(80, 24, ["cat"]), 20, "key")
        print(f"input to output, process tier, 20 each: background cat median "
              f"{statistics.median(bg):.2f} ms (max {max(bg):.2f}); terminal echo median "
              f"{statistics.median(tty):.2f} ms (max {max(tty):.2f})")
        javascript(runs)
    finally:
        for s in sessions.values():
            s.close()
        for sb in sandboxes.values():
            sb.close()


main()
