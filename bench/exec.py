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
             on_stdout callback of a wait started right after it (median)

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
    finally:
        for s in sessions.values():
            s.close()
        for sb in sandboxes.values():
            sb.close()


main()
