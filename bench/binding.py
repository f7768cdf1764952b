#!/usr/bin/env python3
"""bench/binding.py: what the Python binding adds to a run, against the same
run made from C. Figures only, never an assertion (the issue's target, at
most 0.5 ms a run, is printed beside them, not enforced).

Every row runs print(1) on the process tier with the library's defaults, and
all rows are interleaved round by round (their order rotated each round) in
this one process, so the machine's drift lands on each alike:

  C                 build/bench-binding-c ROUND: aj_run_cancellable with a
                    fresh aj_cancel token per run, timed in C (bench/binding.c),
                    a subprocess per round; its per-run times are parsed
  Python, main      Sandbox(tier="process").run("print(1)") from the main
                    thread, where the binding makes the C call on a helper
                    thread so that Ctrl-C works; timed with perf_counter
  Python, worker    the same from a thread that is not the main one, where
                    the binding makes the C call on the calling thread

The binding's own time is measured inside each Python run: the binding's
module-level `lib` (agentjail.sandbox.lib) is replaced with a proxy whose
aj_run_cancellable times the real cffi call and forwards every other
attribute. Per run, overhead = Sandbox.run's wall time minus the time inside
the C call. It is conservative: it includes the proxy's own cost (measured
and printed) and its attribute forwarding. It does not include what being a
Python process costs the C call itself (a bigger address space for the
library's clone to copy, say); the end-to-end difference of medians, Python
minus C, does, but it is a difference of two noisy figures.

Beside the overhead, the minor page faults the process took per run outside
the C call: the library clones its sandbox from the caller's address space,
copy-on-write, so every page the caller writes after a run faults once, and
a Python process writes many (reference counts). And, for scale, the
binding's Python code alone: Sandbox.run with the C call replaced by a no-op
that fills an ok result (no clone, so no such faults).

    bench/binding.py [RUNS]   (default 200 per row; make bench-python)
"""
import math
import os
import platform
import resource
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))

import agentjail  # noqa: E402  (the source tree's package, found above)
import agentjail.sandbox  # noqa: E402
from agentjail import Sandbox, SandboxUnavailable, Status  # noqa: E402

C_PROGRAM = os.path.join(ROOT, "build", "bench-binding-c")
CODE = "print(1)"
ROUND = 20  # runs of each row per round
WARMUP = 3  # untimed runs of each Python row before the first round
NOOP_RUNS = 2000  # calls of each thread's no-op row


def minflt():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def percentile(values, p):
    """Nearest rank, as src/cli/measure.h: always a measured value."""
    v = sorted(values)
    if not v:
        return math.nan
    rank = min(max(math.ceil(p / 100 * len(v)), 1), len(v))
    return v[rank - 1]


class TimedLib:
    """agentjail.sandbox's `lib`, with aj_run_cancellable timed. The last
    call's time is left in `last` and read after Sandbox.run returns (runs
    are one at a time; on the main thread the call is made on the binding's
    helper thread, which has ended by then)."""

    def __init__(self, real):
        self._real = real
        self._run = real.aj_run_cancellable
        self.last = None
        self.faults = 0

    def aj_run_cancellable(self, *args):
        f0 = minflt()
        t0 = time.perf_counter()
        rc = self._run(*args)
        self.last = time.perf_counter() - t0
        self.faults = minflt() - f0
        return rc

    def __getattr__(self, name):
        return getattr(self._real, name)


def proxy_cost_ms(real, n=20000):
    """What the proxy adds to a call: aj_version through a wrapper shaped as
    TimedLib.aj_run_cancellable (attribute lookup, two clock reads, two
    getrusage calls, stores), minus aj_version called directly. Median of 5 batches, per call."""

    class Probe(TimedLib):
        def __init__(self, r):
            super().__init__(r)
            self._run = r.aj_version

        def aj_version(self, *args):
            return self.aj_run_cancellable(*args)

    probe = Probe(real)
    diffs = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            real.aj_version()
        direct = time.perf_counter() - t0
        t0 = time.perf_counter()
        for _ in range(n):
            probe.aj_version()
        wrapped = time.perf_counter() - t0
        diffs.append((wrapped - direct) / n * 1e3)
    return percentile(diffs, 50)


class Row:
    """One Python row's samples, per run."""

    def __init__(self):
        self.total, self.inside, self.faults = [], [], []


def python_runs(sb, timed, n, row):
    """n timed Sandbox.run calls on this thread: wall ms, ms in the C call,
    and page faults outside it into row; a run not ending ok is reported
    and left out."""
    for _ in range(n):
        timed.last = None
        f0 = minflt()
        t0 = time.perf_counter()
        ex = sb.run(CODE)
        t = time.perf_counter() - t0
        f = minflt() - f0
        if ex.status is not Status.OK or timed.last is None:
            print(f"binding.py: a run ended {ex.status}: {ex.message or ''} {ex.stderr}",
                  file=sys.stderr)
            continue
        row.total.append(t * 1e3)
        row.inside.append(timed.last * 1e3)
        row.faults.append(f - timed.faults)


class NoopLib:
    """agentjail.sandbox's `lib` with aj_run_cancellable a no-op that
    fills an ok result: Sandbox.run is then the binding's Python alone."""

    def __init__(self, real):
        self._real = real

    def aj_run_cancellable(self, sb, code, length, cancel, res):
        res.status = self._real.AJ_STATUS_OK
        res.has_exit_code = True
        return 0

    def __getattr__(self, name):
        return getattr(self._real, name)


def noop_runs(sb, n, out):
    for _ in range(n):
        t0 = time.perf_counter()
        sb.run(CODE)
        out.append((time.perf_counter() - t0) * 1e3)


def on_worker(fn, *args):
    """fn(*args) on a thread that is not the main one, waited for."""
    failure = []

    def body():
        try:
            fn(*args)
        except BaseException as e:  # reported on the main thread
            failure.append(e)

    t = threading.Thread(target=body, name="bench-worker")
    t.start()
    t.join()
    if failure:
        raise failure[0]


def c_round(n, out):
    p = subprocess.run([C_PROGRAM, str(n)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if p.stderr:
        sys.stderr.write(p.stderr)
    if p.returncode != 0:
        raise SystemExit(f"binding.py: {C_PROGRAM} exited {p.returncode}")
    out.extend(t for t in map(float, p.stdout.split()) if t >= 0)


def main():
    try:
        runs = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    except ValueError:
        runs = 0
    if len(sys.argv) > 2 or not 1 <= runs <= 100000:
        print("usage: bench/binding.py [RUNS (1-100000, default 200)]", file=sys.stderr)
        return 2
    if not os.access(C_PROGRAM, os.X_OK):
        print(f"binding.py: {C_PROGRAM} is missing: build it with `make bench-python`",
              file=sys.stderr)
        return 1
    try:
        sb = Sandbox(tier="process")
    except SandboxUnavailable as e:
        print(f"binding.py: the process tier is not available here: {e}", file=sys.stderr)
        return 1

    real = agentjail.sandbox.lib
    timed = TimedLib(real)
    agentjail.sandbox.lib = timed

    rounds = math.ceil(runs / ROUND)
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f
                        if ln.startswith("model name")), cpu)
    except OSError:
        pass
    print(f"bench-python: {runs} runs of print(1) per row on the process tier, "
          f"{rounds} interleaved rounds, {len(os.sched_getaffinity(0))} CPUs ({cpu})")
    print(f"  Python {platform.python_version()}, library {agentjail.LIBRARY_PATH} "
          f"({agentjail.LIBRARY_VERSION})")
    print()

    c_ms, main, work = [], Row(), Row()
    noop_main, noop_work = [], []
    try:
        # Warm-up: the first runs of this process (allocator, cffi's first
        # calls, the helper thread's first start); the C program warms
        # itself up once per round.
        python_runs(sb, timed, WARMUP, Row())
        on_worker(python_runs, sb, timed, WARMUP, Row())
        row_fns = [
            lambda n: c_round(n, c_ms),
            lambda n: python_runs(sb, timed, n, main),
            lambda n: on_worker(python_runs, sb, timed, n, work),
        ]
        for r in range(rounds):
            n = min(ROUND, runs - r * ROUND)
            for i in range(len(row_fns)):
                row_fns[(r + i) % len(row_fns)](n)
        proxy_ms = proxy_cost_ms(real)
        agentjail.sandbox.lib = NoopLib(real)
        noop_runs(sb, NOOP_RUNS, noop_main)
        on_worker(noop_runs, sb, NOOP_RUNS, noop_work)
    finally:
        agentjail.sandbox.lib = real
        sb.close()

    c_med = percentile(c_ms, 50)

    def row(name, v):
        if not v:
            print(f"  {name:<34} {'-':>5}  (no runs)")
            return
        med = percentile(v, 50)
        print(f"  {name:<34} {len(v):5d}  {med:9.3f}  {percentile(v, 95):9.3f}  "
              f"{med / c_med if c_med > 0 else 0:7.3f}x")

    print("process tier, print(1)  (ms; ratio of medians to the C row)")
    print(f"  {'row':<34} {'runs':>5}  {'median':>9}  {'p95':>9}  {'ratio':>8}")
    row("C aj_run_cancellable", c_ms)
    row("Python Sandbox.run, main thread", main.total)
    row("Python Sandbox.run, worker thread", work.total)
    row("  inside the C call, main", main.inside)
    row("  inside the C call, worker", work.inside)
    print()

    print("binding overhead per run: Sandbox.run minus the C call inside it (ms), and the")
    print("page faults taken outside the C call (copy-on-write after the library's clone)")
    print(f"  {'thread':<34} {'runs':>5}  {'median':>9}  {'p95':>9}  {'faults':>7}")
    for name, r in (("main (C call on a helper thread)", main),
                    ("worker (C call on the caller)", work)):
        over = [t - i for t, i in zip(r.total, r.inside)]
        if over:
            print(f"  {name:<34} {len(over):5d}  {percentile(over, 50):9.3f}  "
                  f"{percentile(over, 95):9.3f}  {percentile(r.faults, 50):7d}")
    print(f"  (issue's target: at most 0.500 ms; includes the timing proxy's own "
          f"{proxy_ms * 1e3:.2f} us a call)")
    print()

    print("the binding's Python alone: Sandbox.run with a no-op C call (ms; no clone, no faults)")
    print(f"  {'thread':<34} {'runs':>5}  {'median':>9}  {'p95':>9}")
    for name, v in (("main thread (helper thread started)", noop_main),
                    ("worker thread", noop_work)):
        print(f"  {name:<34} {len(v):5d}  {percentile(v, 50):9.3f}  {percentile(v, 95):9.3f}")
    print()

    print("end to end, difference of medians, Python minus C (ms; noisy: a difference of")
    print("two medians of separate runs, whose spread is the p95s above; it also counts")
    print("what a Python process costs the C call itself)")
    for name, v in (("main thread", main.total), ("worker thread", work.total)):
        if v and c_ms:
            print(f"  {name:<34} {percentile(v, 50) - c_med:+9.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
