#!/usr/bin/env python3
"""bench/serve.py: what agentjail serve adds to a run, and how its queue
scales from one worker to two. Figures only, never an assertion.

Every run is print(1) on the process tier with the default limits, on
this machine, all in this one program's run (the machine is shared and
noisy: read ratios, not milliseconds).

  direct          build/bench-binding-c N: aj_run_cancellable from C, one
                  run after another (the library with nothing in front)
  serve           POST /v1/runs to agentjail serve on 127.0.0.1, one after
                  another, on one kept-alive connection
  serve + queue   the same through serve --queue and one worker (Redis on
                  loopback): HTTP, Redis stream, worker, reply list

Latency rows interleave the three, round by round, so drift lands on each
alike; "added" is a row's percentile minus direct's. Throughput rows send
RUNS_T runs from 8 client threads and report runs/s: serve (runs here,
--concurrency 2 = the CPUs), and serve --queue with 1 worker, then 2
workers (each --concurrency 2). On this 2-core machine two workers share
the same two cores, so the second worker shows what the queue costs, not
what another machine would add.

Fleet admission: serve --queue with no --concurrency admits what the live
workers advertise (issue 24 item 6): 8 runs of time.sleep(1) from 8 client
threads through 2 workers of 2 slots each; the wall time beside the ideal
(8 runs / 4 slots x 1 s) and beside what serve's own 2 CPUs would allow.

Streaming (issue 27), serve --warm on the process tier, no queue:
  write -> event   the program writes LINES lines, each its CLOCK_MONOTONIC
                   in ns (the process tier's clock is the host's), a pause
                   apart; a loopback client reading POST /v1/runs as
                   Server-Sent Events compares each with its own clock as
                   the event arrives: p50 and p95
  runs/s           print(1) one at a time on one connection and from 8
                   client threads, plain JSON and SSE, the four rows
                   interleaved round by round
  write -> event through the queue   the same write -> event row through
                   serve --queue and one worker (Redis on loopback): the
                   worker's chunks go through Redis (XADD, serve's XREAD)

    bench/serve.py [RUNS] [RUNS_T]   (default 200, 400; make bench-serve)
    bench/serve.py fleet             (the fleet admission row alone)
    bench/serve.py stream [RUNS]     (the streaming rows alone; default 200)
    bench/serve.py stream-queue      (the queue's write -> event row alone)
    bench/serve.py pty [KEYS] [TIER] (issue 36: a keystroke's echo through
                                      serve: POST .../PID/stdin of one key
                                      to a terminal running cat, until the
                                      events stream shows it; p50 and p95;
                                      TIER: serve's --tier, default process)
    bench/serve.py tls [RUNS]        (issue 37: print(1) on serve --warm over
                                      plain HTTP and over TLS, one kept-alive
                                      connection each, interleaved; p50s and
                                      their ratio)
    bench/serve.py plain-against ROOT (plain print(1) on this build and on
                                      ROOT's build/agentjail, interleaved)
    bench/serve.py warm [RUNS] [OTHER] (issue 35: serve --warm with its
                                      defaults, print(1) as plain JSON: one
                                      at a time on one kept-alive
                                      connection, p50, p95 and runs/s, and
                                      from 8 client threads, each its own
                                      connection, runs/s; with OTHER (a
                                      checkout, a build directory or an
                                      agentjail binary) the same on it,
                                      interleaved round by round; beside
                                      them the library without HTTP (the
                                      Python binding, warm), and this
                                      build's runs split into client,
                                      serve (its access log) and the
                                      program's wall_ms; default RUNS 400)
    bench/serve.py warm-concurrency [RUNS] (serve --warm at --concurrency
                                      2, 4 and 8, print(1) from 8 clients,
                                      runs/s, interleaved)
    bench/serve.py warm-cpu [RUNS]    (serve --warm, print(1) from 8
                                      clients: the machine's CPU per run,
                                      this client's share, and the runs/s
                                      the CPUs allow at that cost)
"""
import base64
import concurrent.futures
import http.client
import json
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
AGENTJAIL = os.path.join(ROOT, "build", "agentjail")
C_PROGRAM = os.path.join(ROOT, "build", "bench-binding-c")
UID_BASE = int(os.environ.get("AJ_SERVE_UID_BASE", 2160000000))
STATE_DIR = f"/run/agentjail-bench-serve-{UID_BASE}"


def pct(xs, p):
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Serve:
    def __init__(self, *args, binary=AGENTJAIL, log=None):
        """log: a file for serve's stderr (its access log), else none kept."""
        self.proc = subprocess.Popen(
            [binary, "serve", "--listen", "127.0.0.1:0", "--uid-base", str(UID_BASE),
             "--state-dir", STATE_DIR, "--queue-size", "1000", *args],
            stdout=subprocess.PIPE, stderr=log or subprocess.DEVNULL, text=True)
        self.key = self.url = None
        while not self.url:
            line = self.proc.stdout.readline()
            if not line:
                sys.exit("bench/serve.py: agentjail serve did not start")
            k, _, v = line.strip().partition("=")
            if k == "AGENTJAIL_KEY":
                self.key = v
            elif k == "AGENTJAIL_URL":
                self.url = v
        self.port = int(self.url.rsplit(":", 1)[1])

    def connection(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)

    def run(self, conn, code="print(1)"):
        conn.request("POST", "/v1/runs", json.dumps({"code": code}),
                     {"Authorization": f"Bearer {self.key}",
                      "Content-Type": "application/json"})
        r = conn.getresponse()
        body = r.read()
        result = json.loads(body) if r.status == 200 else None
        if not result or result["status"] != "ok":
            raise RuntimeError(f"serve answered {r.status}: {body[:200]!r}")
        return result

    def stream(self, conn, code="print(1)", on_event=None):
        """POST /v1/runs as Server-Sent Events: on_event(name, data) for
        each output event as it arrives; the result's contract object."""
        conn.request("POST", "/v1/runs", json.dumps({"code": code}),
                     {"Authorization": f"Bearer {self.key}",
                      "Content-Type": "application/json", "Accept": "text/event-stream"})
        r = conn.getresponse()
        if r.status != 200 or not r.getheader("Content-Type", "").startswith(
                "text/event-stream"):
            raise RuntimeError(f"serve answered {r.status}: {r.read()[:200]!r}")
        name, data = None, []
        while True:
            line = r.readline()
            if not line:
                raise RuntimeError("serve ended the event stream before its result")
            line = line.rstrip(b"\r\n")
            if line.startswith(b"event:"):
                name = line[6:].strip().decode()
            elif line.startswith(b"data:"):
                data.append(line[5:].strip())
            elif not line and name:
                payload = json.loads(b"\n".join(data))
                if name == "result":
                    r.read()  # the end of the body: the connection is kept
                    if payload["status"] != "ok":
                        raise RuntimeError(f"run ended {payload['status']}")
                    return payload
                if on_event:
                    on_event(name, payload)
                name, data = None, []

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(60)


def start_worker(url, name, slots=2):
    p = subprocess.Popen([AGENTJAIL, "worker", "--queue", url, "--name", name,
                          "--concurrency", str(slots), "--uid-base", str(UID_BASE),
                          "--state-dir", STATE_DIR],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    p.stdout.readline()
    return p


def direct_round(n):
    out = subprocess.run([C_PROGRAM, str(n)], capture_output=True, text=True, check=True)
    return [float(x) for x in out.stdout.split() if float(x) >= 0]


def timed_serve(serve, conn, n, walls=None):
    """n runs' ms at the client; each run's own wall_ms appended to walls."""
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        result = serve.run(conn)
        ts.append((time.perf_counter() - t0) * 1000)
        if walls is not None:
            walls.append(result["wall_ms"])
    return ts


def throughput(serve, n, threads=8, stream=False):
    """Runs per second: n print(1) runs from threads clients, plain JSON or
    as Server-Sent Events."""
    def worker(count):
        conn = serve.connection()
        for _ in range(count):
            (serve.stream if stream else serve.run)(conn)
        conn.close()

    per = [n // threads + (1 if i < n % threads else 0) for i in range(threads)]
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(worker, per))
    return n / (time.perf_counter() - t0)


def start_redis():
    rport = free_port()
    redis = subprocess.Popen(["redis-server", "--port", str(rport), "--bind", "127.0.0.1",
                              "--save", "", "--appendonly", "no"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    return redis, f"redis://127.0.0.1:{rport}/0"


def stop_all(workers, serves, redis):
    """Workers first (SIGTERM: they finish what they hold), then serve, then Redis."""
    for w in workers:
        w.send_signal(signal.SIGTERM)
        w.wait(60)
    for s in serves:
        s.stop()
    redis.terminate()
    redis.wait()


def fleet_admission(runs=8, sleep_s=1, workers=2, slots=2):
    """Wall time of `runs` concurrent sleeps through serve --queue sized by
    its workers alone (no --concurrency)."""
    redis, rurl = start_redis()
    serve = Serve("--queue", rurl, "--timeout", "10")
    ws = [start_worker(rurl, f"bench-fleet-w{i + 1}", slots) for i in range(workers)]
    try:
        # The fleet's slots reach serve's admission within a second of
        # the workers' heartbeats.
        time.sleep(2)
        code = f"import time\ntime.sleep({sleep_s})\n"

        def one(_):
            conn = serve.connection()
            serve.run(conn, code)
            conn.close()

        t0 = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(runs) as pool:
            list(pool.map(one, range(runs)))
        wall = time.perf_counter() - t0
        total = workers * slots
        ideal = -(-runs // total) * sleep_s
        capped = -(-runs // (os.cpu_count() or 1)) * sleep_s
        print(f"fleet admission: {runs} runs of time.sleep({sleep_s}) from {runs} clients, "
              f"serve --queue without --concurrency, {workers} workers x {slots} slots:\n"
              f"  {wall:.2f} s  (ideal {ideal:.1f} s for {total} slots; "
              f"{capped:.1f} s if capped at serve's {os.cpu_count()} CPUs)")
    finally:
        stop_all(ws, [serve], redis)


LINES = 20


def write_to_event(serve, conn, runs):
    """ms from the program's write to the SSE event's arrival, per line."""
    code = ("import os, time\n"
            f"for i in range({LINES}):\n"
            "    os.write(1, b'%d\\n' % time.monotonic_ns())\n"
            "    time.sleep(0.02)\n")
    lat = []
    for _ in range(runs):
        part = [b""]

        def on_event(name, payload):
            now = time.monotonic_ns()
            if name != "stdout":
                return
            text = payload["text"].encode() if "text" in payload else None
            if text is None:
                text = base64.b64decode(payload["base64"])
            *whole, part[0] = (part[0] + text).split(b"\n")
            lat.extend((now - int(x)) / 1e6 for x in whole if x)

        serve.stream(conn, code, on_event)
    return lat


def streaming(runs=200, runs_t=400):
    """The streaming rows: serve --warm, process tier, no queue."""
    serve = Serve("--warm", "--concurrency", "2")
    try:
        conn = serve.connection()
        for _ in range(5):  # warm-up: the zygote, page cache
            serve.run(conn)
            serve.stream(conn)
        lat = write_to_event(serve, conn, 5)
        print(f"streaming: serve --warm, process tier, {os.cpu_count()} CPUs\n"
              f"  write -> SSE event at a loopback client: p50 {pct(lat, 50):.2f} ms, "
              f"p95 {pct(lat, 95):.2f} ms ({len(lat)} lines)")
        rows = {"plain": [], "sse": []}
        rounds = 10
        per = max(1, runs // rounds)
        for r in range(rounds):
            for name in (["plain", "sse"] if r % 2 == 0 else ["sse", "plain"]):
                for _ in range(per):
                    t0 = time.perf_counter()
                    (serve.run if name == "plain" else serve.stream)(conn)
                    rows[name].append((time.perf_counter() - t0) * 1000)
        print(f"  print(1), one at a time, {per * rounds} runs a row, interleaved:")
        for name, ts in rows.items():
            print(f"    {name:6} p50 {pct(ts, 50):6.2f} ms  {1000 / statistics.mean(ts):7.1f} runs/s")
        print(f"    sse / plain p50: {pct(rows['sse'], 50) / pct(rows['plain'], 50):.3f}")
        conn.close()

        tput = {"plain": [], "sse": []}
        for r in range(2):
            for name in (["plain", "sse"] if r % 2 == 0 else ["sse", "plain"]):
                tput[name].append(throughput(serve, runs_t, stream=name == "sse"))
        print(f"  print(1) from 8 client threads, {runs_t} runs, best of 2 interleaved:")
        for name, v in tput.items():
            print(f"    {name:6} {max(v):7.1f} runs/s")
    finally:
        serve.stop()


def plain_against(other_root, runs=200, runs_t=400):
    """print(1) as plain JSON on this build's serve --warm and on another
    checkout's (its build/agentjail), the rows interleaved in one run: what
    this build costs a caller that does not stream."""
    serves = {"this": Serve("--warm", "--concurrency", "2"),
              "other": Serve("--warm", "--concurrency", "2",
                             binary=os.path.join(other_root, "build", "agentjail"))}
    try:
        conns = {n: s.connection() for n, s in serves.items()}
        for _ in range(5):
            for n, s in serves.items():
                s.run(conns[n])
        rows = {"this": [], "other": []}
        rounds = 10
        per = max(1, runs // rounds)
        for r in range(rounds):
            for name in (["this", "other"] if r % 2 == 0 else ["other", "this"]):
                for _ in range(per):
                    t0 = time.perf_counter()
                    serves[name].run(conns[name])
                    rows[name].append((time.perf_counter() - t0) * 1000)
        print(f"plain print(1): serve --warm, process tier, this build against {other_root}")
        print(f"  one at a time, {per * rounds} runs a row, interleaved:")
        for name, ts in rows.items():
            print(f"    {name:6} p50 {pct(ts, 50):6.2f} ms  {1000 / statistics.mean(ts):7.1f} runs/s")
        print(f"    this / other p50: {pct(rows['this'], 50) / pct(rows['other'], 50):.3f}")

        tput = {"this": [], "other": []}
        for r in range(2):
            for name in (["this", "other"] if r % 2 == 0 else ["other", "this"]):
                tput[name].append(throughput(serves[name], runs_t))
        print(f"  from 8 client threads, {runs_t} runs, best of 2 interleaved:")
        for name, v in tput.items():
            print(f"    {name:6} {max(v):7.1f} runs/s")
    finally:
        for s in serves.values():
            s.stop()


def tls_rows(runs=400):
    """print(1) as plain JSON on serve --warm over plain HTTP and over TLS
    (--tls-cert, a certificate made here), each on one kept-alive
    connection, the two rows interleaved round by round: what TLS adds to
    a run (issue 37's goal: at most 10 %)."""
    import ssl
    import tempfile

    d = tempfile.mkdtemp(prefix="aj-bench-tls-")
    cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext",
                    "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    serves = {"plain": Serve("--warm", "--concurrency", "2"),
              "tls": Serve("--warm", "--concurrency", "2", "--tls-cert", cert, "--tls-key", key)}
    try:
        ctx = ssl.create_default_context(cafile=cert)
        conns = {"plain": serves["plain"].connection(),
                 "tls": http.client.HTTPSConnection("127.0.0.1", serves["tls"].port,
                                                    context=ctx, timeout=120)}
        for _ in range(10):
            for n, s in serves.items():
                s.run(conns[n])
        socks = {n: c.sock for n, c in conns.items()}
        rows = {"plain": [], "tls": []}
        rounds = 20
        per = max(1, runs // rounds)
        for r in range(rounds):
            for name in (["plain", "tls"] if r % 2 == 0 else ["tls", "plain"]):
                for _ in range(per):
                    t0 = time.perf_counter()
                    serves[name].run(conns[name])
                    rows[name].append((time.perf_counter() - t0) * 1000)
        kept = all(conns[n].sock is socks[n] for n in conns)
        print(f"print(1) through serve --warm, process tier, {per * rounds} runs a row, "
              f"interleaved, one kept-alive connection each ({'kept' if kept else 'NOT kept'}):")
        for name, ts in rows.items():
            print(f"  {name:6} p50 {pct(ts, 50):6.2f} ms  p95 {pct(ts, 95):6.2f} ms")
        print(f"  tls / plain p50: {pct(rows['tls'], 50) / pct(rows['plain'], 50):.3f} "
              f"(load {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs)")
    finally:
        for s in serves.values():
            s.stop()


def agentjail_of(other):
    """OTHER's agentjail: the binary itself, DIR/agentjail or DIR/build/agentjail."""
    for p in (other, os.path.join(other, "agentjail"), os.path.join(other, "build", "agentjail")):
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return os.path.abspath(p)
    sys.exit(f"bench/serve.py: no agentjail binary at {other}")


def warm_rows(runs=400, other=None, rounds=10, t_rounds=4):
    """Issue 35: print(1) through serve --warm (its defaults: --concurrency
    the CPUs), one at a time and from 8 clients, this build and OTHER's
    interleaved round by round so that the machine's load lands on each
    alike."""
    binaries = {"this": AGENTJAIL}
    if other:
        binaries["other"] = agentjail_of(other)
    log = tempfile.TemporaryFile("w+")
    serves = {n: Serve("--warm", binary=b, log=log if n == "this" else None)
              for n, b in binaries.items()}
    library = None
    try:
        library = warm_library()
        conns = {n: s.connection() for n, s in serves.items()}
        for _ in range(20):  # warm-up: the zygote, the page cache
            for n, s in serves.items():
                s.run(conns[n])
            library.run("print(1)")
        lat = {n: [] for n in serves}
        lat["library"] = []
        per = max(1, runs // rounds)
        names = list(lat)
        walls = []
        for r in range(rounds):
            for name in (names if r % 2 == 0 else names[::-1]):
                if name == "library":
                    lat[name] += timed_library(library, per)
                else:
                    lat[name] += timed_serve(serves[name], conns[name], per,
                                             walls if name == "this" else None)
        inside = served_ms(log)[-per * rounds:]
        tput = {n: [] for n in serves}
        for r in range(t_rounds):
            for name in (list(serves) if r % 2 == 0 else list(serves)[::-1]):
                tput[name].append(throughput(serves[name], runs))
        load = os.getloadavg()[0]
        print(f"serve --warm, print(1) as plain JSON, process tier, {os.cpu_count()} CPUs, "
              f"load {load:.1f}")
        print(f"  {'':6} {'p50 ms':>7} {'p95 ms':>7} {'runs/s 1':>9} {'runs/s 8 (median, best)':>24}")
        for n in serves:
            t = sorted(tput[n])
            print(f"  {n:6} {pct(lat[n], 50):7.2f} {pct(lat[n], 95):7.2f} "
                  f"{1000 / statistics.mean(lat[n]):9.1f} {statistics.median(t):15.1f} "
                  f"{t[-1]:8.1f}")
            print(f"         ({per * rounds} runs one at a time; {t_rounds} x {runs} from "
                  f"8 clients) {binaries[n]}")
        print(f"  {'library':6} {pct(lat['library'], 50):7.2f} {pct(lat['library'], 95):7.2f} "
              f"{1000 / statistics.mean(lat['library']):9.1f}")
        print(f"         (the same runs without HTTP: this build's library through the Python "
              f"binding, Sandbox(warm=True).run)")
        print(f"  this build's one-at-a-time runs, p50: {pct(lat['this'], 50):.2f} ms at the "
              f"client, {pct(inside, 50):.2f} ms in serve (its access log: headers in to "
              f"answer sent), {pct(walls, 50):.2f} ms the program's own wall_ms (the "
              f"result's: from its init's start report to its end)")
        if other:
            print(f"  this / other: p50 {pct(lat['this'], 50) / pct(lat['other'], 50):.3f}, "
                  f"runs/s one at a time "
                  f"{statistics.mean(lat['other']) / statistics.mean(lat['this']):.3f}, "
                  f"8 clients {statistics.median(tput['this']) / statistics.median(tput['other']):.3f}")
    finally:
        if library is not None:
            library.close()
        for s in serves.values():
            s.stop()
        log.close()


def warm_concurrency(runs=400, levels=(2, 4, 8), rounds=4):
    """print(1) from 8 clients through serve --warm at each --concurrency,
    interleaved round by round: what admitting more runs than CPUs gives."""
    serves = {n: Serve("--warm", "--concurrency", str(n)) for n in levels}
    try:
        for s in serves.values():
            conn = s.connection()
            timed_serve(s, conn, 20)
            conn.close()
        tput = {n: [] for n in serves}
        for r in range(rounds):
            for n in (levels if r % 2 == 0 else levels[::-1]):
                tput[n].append(throughput(serves[n], runs))
        print(f"serve --warm, print(1) from 8 clients, {rounds} x {runs} runs, interleaved, "
              f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
        base = statistics.median(tput[levels[0]])
        for n, v in tput.items():
            print(f"  --concurrency {n}: {statistics.median(v):7.1f} runs/s (median; best "
                  f"{max(v):.1f}), x{statistics.median(v) / base:.2f}")
    finally:
        for s in serves.values():
            s.stop()


def machine_busy_ms():
    """The machine's busy CPU time so far, all cores (/proc/stat), in ms."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v) - v[3] - v[4]) * 1000 / os.sysconf("SC_CLK_TCK")


def warm_cpu(runs=1200, rounds=3):
    """Issue 35: what a serve --warm run costs the machine in CPU when 8
    clients keep it busy, the ceiling on runs/s it sets (the CPUs over the
    cost), and the part of it that is this client's own (getrusage)."""
    s = Serve("--warm")
    try:
        conn = s.connection()
        timed_serve(s, conn, 50)
        conn.close()
        print(f"serve --warm, print(1) from 8 clients, {rounds} x {runs} runs, "
              f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
        for _ in range(rounds):
            b0, r0 = machine_busy_ms(), resource.getrusage(resource.RUSAGE_SELF)
            rate = throughput(s, runs)
            b1, r1 = machine_busy_ms(), resource.getrusage(resource.RUSAGE_SELF)
            client = ((r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)) * 1000
            per = (b1 - b0) / runs
            print(f"  {rate:6.1f} runs/s; machine CPU {per:.2f} ms a run (this client "
                  f"{client / runs:.2f}); the CPUs allow {os.cpu_count() * 1000 / per:.0f} "
                  f"runs/s at that cost")
    finally:
        s.stop()


def served_ms(log):
    """Each POST /v1/runs's ms in serve's access log so far, in order."""
    log.flush()
    log.seek(0)
    out = []
    for line in log:
        try:
            e = json.loads(line)
        except ValueError:
            continue  # not an access log line
        if e.get("event") == "request" and e.get("route") == "/v1/runs" and e.get("status") == 200:
            out.append(e["ms"])
    log.seek(0, os.SEEK_END)
    return out


def warm_library():
    """This build's library, warm, through the Python binding: the row
    without HTTP (what serve adds is the difference)."""
    sys.path.insert(0, os.path.join(ROOT, "python"))
    os.environ.setdefault("AGENTJAIL_LIBRARY", os.path.join(ROOT, "build", "libagentjail.so.0"))
    from agentjail import Sandbox  # noqa: E402 - only this mode needs it
    return Sandbox("process", warm=True, uid_base=UID_BASE, state_dir=STATE_DIR)


def timed_library(sandbox, n):
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        r = sandbox.run("print(1)")
        ts.append((time.perf_counter() - t0) * 1000)
        if r.status != "ok":
            raise RuntimeError(f"the library's run ended {r.status}")
    return ts


def streaming_queue(runs=5):
    """The write -> event row through serve --queue and one worker."""
    redis, rurl = start_redis()
    serve = Serve("--queue", rurl, "--concurrency", "2")
    ws = [start_worker(rurl, "bench-stream-w1")]
    try:
        conn = serve.connection()
        for _ in range(5):  # warm-up, and the worker's heartbeat seen
            serve.stream(conn)
        lat = write_to_event(serve, conn, runs)
        print(f"streaming through the queue: serve --queue, 1 worker (--concurrency 2), "
              f"Redis on loopback, process tier, {os.cpu_count()} CPUs\n"
              f"  write -> SSE event at a loopback client: p50 {pct(lat, 50):.2f} ms, "
              f"p95 {pct(lat, 95):.2f} ms ({len(lat)} lines)")
        conn.close()
    finally:
        stop_all(ws, [serve], redis)


def pty_echo(keys=200, tier="process"):
    """ms from POSTing one key to a terminal (cat on a pty: the terminal
    echoes it) until serve's events stream shows it."""
    import threading

    serve = Serve("--tier", tier)
    try:
        auth = {"Authorization": f"Bearer {serve.key}", "Content-Type": "application/json"}
        conn = serve.connection()

        def call(method, path, body=None):
            conn.request(method, path, json.dumps(body) if body is not None else None, auth)
            r = conn.getresponse()
            data = r.read()
            if r.status >= 300:
                raise RuntimeError(f"{method} {path}: {r.status} {data[:200]!r}")
            return json.loads(data) if data else None

        sid = call("POST", "/v1/sessions", {})["id"]
        pid = call("POST", f"/v1/sessions/{sid}/processes",
                   {"argv": ["cat"], "pty": {"cols": 80, "rows": 24}})["pid"]
        shown, cond = bytearray(), threading.Condition()
        events = serve.connection()
        events.request("GET", f"/v1/sessions/{sid}/processes/{pid}/events",
                       headers={"Authorization": f"Bearer {serve.key}",
                                "Accept": "text/event-stream"})
        stream = events.getresponse()

        def read_events():
            name = None
            for line in stream:
                line = line.rstrip(b"\r\n")
                if line.startswith(b"event:"):
                    name = line[6:].strip()
                elif line.startswith(b"data:") and name == b"stdout":
                    payload = json.loads(line[5:])
                    text = payload["text"].encode() if "text" in payload else \
                        base64.b64decode(payload["base64"])
                    with cond:
                        shown.extend(text)
                        cond.notify_all()

        threading.Thread(target=read_events, daemon=True).start()
        lat = []
        for i in range(keys):
            key = bytes([ord("a") + i % 26])
            with cond:
                before = len(shown)
            t0 = time.perf_counter()
            call("POST", f"/v1/sessions/{sid}/processes/{pid}/stdin",
                 {"data": base64.b64encode(key).decode()})
            with cond:
                while key not in shown[before:]:
                    if not cond.wait(30):
                        raise RuntimeError("the key's echo never came")
            lat.append((time.perf_counter() - t0) * 1000)
        call("DELETE", f"/v1/sessions/{sid}")
        print(f"terminal echo through serve, {tier} tier, {keys} keys one after another: "
              f"p50 {pct(lat, 50):.2f} ms, p95 {pct(lat, 95):.2f} ms "
              f"(load {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs)")
    finally:
        serve.stop()


def main():
    if sys.argv[1:2] == ["pty"] and len(sys.argv) <= 4:
        pty_echo(int(sys.argv[2]) if len(sys.argv) > 2 else 200,
                 sys.argv[3] if len(sys.argv) > 3 else "process")
        return
    if sys.argv[1:2] == ["tls"] and len(sys.argv) <= 3:
        tls_rows(int(sys.argv[2]) if len(sys.argv) > 2 else 400)
        return
    if sys.argv[1:2] == ["plain-against"] and len(sys.argv) == 3:
        plain_against(sys.argv[2])
        return
    if sys.argv[1:2] == ["warm"] and len(sys.argv) <= 4:
        warm_rows(int(sys.argv[2]) if len(sys.argv) > 2 else 400,
                  sys.argv[3] if len(sys.argv) > 3 else None)
        return
    if sys.argv[1:2] == ["warm-cpu"] and len(sys.argv) <= 3:
        warm_cpu(int(sys.argv[2]) if len(sys.argv) > 2 else 1200)
        return
    if sys.argv[1:2] == ["warm-concurrency"] and len(sys.argv) <= 3:
        warm_concurrency(int(sys.argv[2]) if len(sys.argv) > 2 else 400)
        return
    if sys.argv[1:] == ["stream-queue"]:
        streaming_queue()
        return
    if sys.argv[1:] == ["fleet"]:
        fleet_admission()
        return
    if sys.argv[1:2] == ["stream"]:
        streaming(int(sys.argv[2]) if len(sys.argv) > 2 else 200)
        streaming_queue()
        return
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    runs_t = int(sys.argv[2]) if len(sys.argv) > 2 else 400
    for p in (AGENTJAIL, C_PROGRAM):
        if not os.access(p, os.X_OK):
            sys.exit(f"bench/serve.py: {p} is missing (make bench-serve builds it)")
    redis, rurl = start_redis()
    local = Serve("--concurrency", "2")
    queued = Serve("--concurrency", "16", "--queue", rurl)
    workers = [start_worker(rurl, "bench-w1")]
    try:
        lconn, qconn = local.connection(), queued.connection()
        # Warm-up: the first run of each pays for page cache and pools.
        timed_serve(local, lconn, 5)
        timed_serve(queued, qconn, 5)
        direct_round(5)
        rows = {"direct": [], "serve": [], "serve + queue": []}
        rounds = 10
        per = max(1, runs // rounds)
        for r in range(rounds):
            order = ["direct", "serve", "serve + queue"]
            order = order[r % 3:] + order[:r % 3]
            for name in order:
                if name == "direct":
                    rows[name] += direct_round(per)
                elif name == "serve":
                    rows[name] += timed_serve(local, lconn, per)
                else:
                    rows[name] += timed_serve(queued, qconn, per)
        base50, base99 = pct(rows["direct"], 50), pct(rows["direct"], 99)
        print(f"agentjail serve, print(1) on the process tier, {per * rounds} runs a row, "
              f"{os.cpu_count()} CPUs\n")
        print(f"{'':16} {'p50 ms':>8} {'p99 ms':>8} {'added p50':>10} {'added p99':>10} "
              f"{'x direct':>9}")
        for name, ts in rows.items():
            p50, p99 = pct(ts, 50), pct(ts, 99)
            added = "" if name == "direct" else f"{p50 - base50:+10.2f} {p99 - base99:+10.2f}"
            print(f"{name:16} {p50:8.2f} {p99:8.2f} {added:>21} {p50 / base50:9.2f}")
        print(f"\nthroughput, {runs_t} runs from 8 client threads:")
        t_local = throughput(local, runs_t)
        print(f"  serve (runs here, 2 at once)        {t_local:7.1f} runs/s")
        t1 = throughput(queued, runs_t)
        print(f"  serve --queue, 1 worker (2 at once) {t1:7.1f} runs/s")
        workers.append(start_worker(rurl, "bench-w2"))
        time.sleep(1.5)  # its heartbeat and group join
        t2 = throughput(queued, runs_t)
        print(f"  serve --queue, 2 workers            {t2:7.1f} runs/s  "
              f"({t2 / t1:.2f}x one worker; both on these {os.cpu_count()} cores)")
    finally:
        stop_all(workers, [local, queued], redis)
    print()
    fleet_admission()
    print()
    streaming(runs, runs_t)


if __name__ == "__main__":
    main()
