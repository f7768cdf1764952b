"""Scale-out on Redis: serve --queue puts runs on a stream, workers take
them. A worker killed mid-run: its caller hears "worker lost" and the run
never runs again; Redis restarted: clear errors, then recovery; sessions
live on the worker that opened them."""
import concurrent.futures
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time

import pytest

from conftest import wait_for, AGENTJAIL, STATE_DIR, UID_BASE, add_key


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Redis:
    def __init__(self):
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc = None
        self.start()

    def start(self):
        # Loopback only, nothing kept on disk: a restart starts empty,
        # the worst case for the workers' consumer group.
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--protected-mode", "yes"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)

    def cli(self, *args):
        return subprocess.run(["redis-cli", "-p", str(self.port), *args], capture_output=True,
                              text=True, check=True).stdout.strip()

    def claims(self):
        """Who took each request (agentjail:claim:*)."""
        cli = ["redis-cli", "-p", str(self.port)]
        keys = subprocess.run(cli + ["--scan", "--pattern", "agentjail:claim:*"],
                              capture_output=True, text=True).stdout.split()
        return [subprocess.run(cli + ["GET", k], capture_output=True, text=True).stdout.strip()
                for k in keys]


class Worker:
    def __init__(self, url, name, *args):
        self.name = name
        self.proc = subprocess.Popen(
            [AGENTJAIL, "worker", "--queue", url, "--name", name, "--uid-base", str(UID_BASE),
             "--state-dir", STATE_DIR, "--timeout", "5", "--cpu", "3", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("AGENTJAIL_WORKER="), self.proc.stderr.read()
        self.log = []
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        for line in self.proc.stderr:
            self.log.append(line)

    def runs(self):
        return sum(1 for line in self.log if ": run: " in line)

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(60)


@pytest.fixture
def redis():
    r = Redis()
    yield r
    r.stop()


@pytest.fixture
def workers(redis):
    started = []

    def _start(name, *args):
        w = Worker(redis.url, name, *args)
        started.append(w)
        return w

    yield _start
    for w in started:
        w.stop()



def serve(start, redis, *args, **kw):
    return start("--queue", redis.url, "--timeout", "5", "--cpu", "3", *args, **kw)


def test_runs_go_to_a_worker(start, redis, workers):
    w = workers("w-a")
    s = serve(start, redis)
    r = s.run("print(6*7)")
    assert r.code == 200 and r.json()["stdout"] == "42\n" and r.json()["tier"] == "process"
    wait_for(lambda: w.runs() >= 1)  # the log line comes through a reader thread
    assert w.runs() == 1
    # The answer's id is the one the worker logged and Redis claimed.
    run_id = r.json()["run_id"]
    assert re.fullmatch(r"[0-9a-f]{32}", run_id)
    assert any(f"id {run_id}" in line for line in w.log)
    # Claimed by this start of w-a: NAME@START.
    taker = redis.cli("GET", f"agentjail:claim:{run_id}")
    assert re.fullmatch(r"w-a@[0-9a-f]{16}", taker)
    r = s.run("import time; time.sleep(2)", timeout_sec=0.5)
    assert r.json()["status"] == "timeout"
    tiers = s.request("GET", "/v1/tiers").json()
    assert tiers["workers"] == [{"name": "w-a", "start": taker.split("@")[1], "tier": "process",
                                 "slots": os.cpu_count()}]
    assert "queue" not in tiers  # the queue's address is the deployer's, not a key's


def test_no_worker_is_503_and_the_run_never_runs_later(start, redis, workers):
    s = serve(start, redis, "--max-wait", "1")
    r = s.run("print('too late')")
    assert r.code == 503 and r.json()["error"]["code"] == "no_worker"
    assert "no live process worker offered a run slot within 1 s" in r.json()["error"]["message"]
    assert r.headers["Retry-After"]
    assert s.metrics()['agentjail_refused_total{reason="no_worker"}'] == 1
    w = workers("w-late")
    time.sleep(2)  # the stream is read at once; give it time to (not) run
    assert w.runs() == 0
    assert s.run("print('now')").json()["stdout"] == "now\n"


def test_a_worker_killed_mid_run_is_worker_lost_never_run_twice(start, redis, workers):
    doomed = workers("w-doomed", "--concurrency", "1")
    s = serve(start, redis)
    answers = []
    t = threading.Thread(target=lambda: answers.append(
        s.run("import time; time.sleep(3); print('finished')")))
    t.start()
    # The worker has taken it once its claim is in Redis.
    assert wait_for(lambda: [c.split("@")[0] for c in redis.claims()] == ["w-doomed"])
    survivor = workers("w-survivor", "--concurrency", "1")
    doomed.stop(signal.SIGKILL)  # by its pid: the process this test started
    t.join(30)
    r = answers[0]
    # Lost, not a result: 502, and the fields say what a client may do.
    assert r.code == 502
    body = r.json()
    assert body["error"]["code"] == "run_lost"
    assert body["error"]["message"].startswith("worker lost")
    assert body["lost"] is True
    assert body["may_have_started"] is True and body["retry_safe"] is False
    assert redis.cli("GET", f"agentjail:claim:{body['run_id']}").startswith("w-doomed@")
    m = s.metrics()
    assert m['agentjail_runs_lost_total{may_have_started="true"}'] == 1
    assert m['agentjail_runs_lost_total{may_have_started="false"}'] == 0
    # The survivor buried what the dead one held, and ran none of it.
    assert wait_for(lambda: any("is lost" in l for l in survivor.log))
    assert survivor.runs() == 0
    assert s.run("print('still served')").json()["stdout"] == "still served\n"
    wait_for(lambda: survivor.runs() >= 1)
    assert survivor.runs() == 1
    assert s.stop() == 0  # the sanitizer build: nothing leaked on the way


def test_a_worker_restarted_under_its_name_finds_its_predecessors_runs_lost(start, redis,
                                                                          workers):
    # A restart (systemd's, say) under the same --name is another start:
    # the run the killed one held is lost, not hidden behind the new
    # heartbeat, and never taken for the new one's own.
    longer = ("--timeout", "30", "--cpu", "30")
    doomed = workers("w-same", "--concurrency", "2", *longer)
    s = start("--queue", redis.url, *longer)
    answers = []
    t = threading.Thread(target=lambda: answers.append(
        s.run("import time; time.sleep(60); print('finished')")))
    t.start()
    bg = s.request("POST", "/v1/runs", {"code": "import time; time.sleep(60)",
                                        "background": True})
    assert bg.code == 202
    bg_id = bg.json()["id"]
    assert wait_for(lambda: len(redis.claims()) == 2)
    first = redis.cli("GET", f"agentjail:claim:{bg_id}")
    doomed.stop(signal.SIGKILL)  # by its pid: the process this test started
    again = workers("w-same", "--concurrency", "1", *longer)
    t.join(60)
    r = answers[0]
    assert r.code == 502, r.body
    body = r.json()
    assert body["error"]["code"] == "run_lost" and body["may_have_started"] is True
    # Found lost with that start (by its missing heartbeat, or by the new
    # start burying it), not after a 30 s overrun behind the new heartbeat.
    assert body["error"]["message"].startswith(f"worker lost: {first} stopped")
    # The recorded run: a reader ends it lost, too.
    assert wait_for(lambda: s.request("GET", f"/v1/runs/{bg_id}").json()["state"] == "done",
                    timeout=60)
    lost = s.request("GET", f"/v1/runs/{bg_id}").json()["result"]
    assert lost["error"]["code"] == "run_lost" and lost["may_have_started"] is True
    # The new start buried its predecessor and ran none of its runs.
    assert wait_for(lambda: any("is lost" in line for line in again.log))
    assert again.runs() == 0
    assert s.run("print('served again')").json()["stdout"] == "served again\n"
    taker = [c for c in redis.claims() if c != first and c.startswith("w-same@")]
    assert taker and all(c != first for c in taker)


def test_a_second_worker_under_a_live_ones_name_is_refused(redis, workers):
    workers("w-dup")
    r = subprocess.run([AGENTJAIL, "worker", "--queue", redis.url, "--name", "w-dup",
                        "--uid-base", str(UID_BASE), "--state-dir", STATE_DIR],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "the name 'w-dup' is in use by a live worker" in r.stderr


def test_redis_restart_gives_clear_errors_then_recovers(start, redis, workers):
    workers("w-r")
    s = serve(start, redis)
    assert s.run("print(1)").code == 200
    redis.stop()
    t0 = time.monotonic()
    r = s.run("print(2)")
    assert r.code == 503 and r.json()["error"]["code"] == "queue_unavailable"
    assert "Redis" in r.json()["error"]["message"]
    assert r.headers["Retry-After"]
    assert time.monotonic() - t0 < 30  # an answer, not a hang (a bound, not a timing)
    redis.start()
    assert wait_for(lambda: s.run("print('back')").code == 200, timeout=30)
    assert s.run("print(3)").json()["stdout"] == "3\n"


def test_sessions_live_on_their_worker(start, redis, workers, tmp_path):
    workers("w-s1")
    workers("w-s2")
    keys = tmp_path / "keys.json"
    alice = add_key(keys, "alice", "--sessions", "1")
    bob = add_key(keys, "bob")
    s = serve(start, redis, keys=str(keys))
    r = s.request("POST", "/v1/sessions", None, key=alice)
    assert r.code == 201
    sid, worker = r.json()["id"], r.json()["worker"]
    base = f"/v1/sessions/{sid}"
    for i in range(6):
        r = s.request("POST", base + "/runs", {"code": f"n = globals().get('n', 0) + 1"},
                      key=alice)
        assert r.json()["status"] == "ok"
    assert s.request("POST", base + "/runs", {"code": "print(n)"}, key=alice).json()["stdout"] == "6\n"
    # A notebook cell's value comes back through the worker too.
    r = s.request("POST", base + "/runs", {"code": "n * 7", "value": True}, key=alice)
    assert (r.json()["stdout"], r.json()["value"]) == ("", {"text": "42"})
    assert s.request("PUT", base + "/files/a.txt", b"hello", raw=True, key=alice).code == 201
    assert s.request("GET", base + "/files/a.txt", key=alice).body == b"hello"
    names = [e["name"] for e in s.request("GET", base + "/files", key=alice).json()["entries"]]
    assert "a.txt" in names
    assert s.request("GET", base + "/files/nope", key=alice).code == 404
    assert s.request("GET", base + "/files", key=bob).code == 404
    r = s.request("POST", "/v1/sessions", None, key=alice)
    assert r.code == 429
    assert s.request("DELETE", base, key=alice).code == 204
    assert s.request("GET", base + "/files", key=alice).code == 404
    r = s.request("POST", "/v1/sessions", None, key=alice)
    assert r.code == 201
    s.request("DELETE", f"/v1/sessions/{r.json()['id']}", key=alice)
    # Pinned to that start of the worker: NAME@START.
    assert worker.split("@")[0] in ("w-s1", "w-s2")


def session_of_two_seconds(start, redis, workers, name, *worker_args):
    """serve, one worker, and the path of a session of its own 2 s clock."""
    workers(name, *worker_args)
    s = serve(start, redis)
    r = s.request("POST", "/v1/sessions", {"limits": {"timeout_sec": 2}})
    assert r.code == 201, r.body
    return s, f"/v1/sessions/{r.json()['id']}"


def test_a_session_call_through_a_worker_keeps_its_own_timeout(start, redis, workers):
    s, base = session_of_two_seconds(start, redis, workers, "w-call")
    try:
        r = s.request("POST", base + "/runs", {"code": "import time; time.sleep(30)",
                                               "limits": {"timeout_sec": 0.5}})
        assert r.code == 200 and r.json()["status"] == "timeout", r.body
        assert r.json()["message"].startswith("the call's timeout of 0.5 s passed")
        # Within the server's 5 s, past the session's own 2 s: its worker
        # refuses it, naming the limit.
        r = s.request("POST", base + "/runs", {"code": "print(1)",
                                               "limits": {"timeout_sec": 3}})
        assert r.code == 400 and r.json()["error"]["code"] == "bad_limits"
        assert "3 is more than this session allows (2)" in r.json()["error"]["message"]
        assert s.request("POST", base + "/runs", {"code": "print(1)"}).json()["stdout"] == "1\n"
    finally:
        s.request("DELETE", base)


def test_a_command_in_a_session_goes_to_its_worker(start, redis, workers):
    import base64
    from conftest import Stream
    # The worker's transfer limit (1 MiB) under serve's (16 MiB).
    s, base = session_of_two_seconds(start, redis, workers, "w-exec", "--transfer-mb", "1")
    try:
        s.request("POST", base + "/runs", {"code": "open('a.txt', 'w').write('from python')"})
        r = s.request("POST", base + "/exec", {"argv": ["sh", "-c", "cat a.txt; read x; "
                                                                   "echo \" $x\"; exit 5"],
                                               "stdin": "aGk=", "env": {"X": "1"}})
        assert r.code == 200, r.body
        assert (r.json()["status"], r.json()["exit_code"], r.json()["stdout"]) == \
            ("error", 5, "from python hi\n"), r.body
        # serve checks what it can against its own limits (5 s) ...
        r = s.request("POST", base + "/exec", {"command": "pwd", "cwd": "../.."})
        assert r.code == 400 and "cwd" in r.json()["error"]["message"], r.body
        # ... the worker against the session's own (2 s), naming it.
        r = s.request("POST", base + "/exec", {"command": "true", "timeout": 3})
        assert r.code == 400 and "timeout: 3 s is not within" in r.json()["error"]["message"]
        big = base64.b64encode(b"a" * ((1 << 20) + 1)).decode()
        r = s.request("POST", base + "/exec", {"command": "wc -c", "stdin": big})
        assert r.code == 413 and r.json()["error"]["code"] == "too_large", r.body
        assert "1 MiB" in r.json()["error"]["message"]
        r = s.request("POST", base + "/exec", {"command": "sleep 30", "timeout": 0.5})
        assert r.json()["status"] == "timeout", r.body
        st = Stream(s, "POST", base + "/exec", {"command": "echo one; sleep 1; echo two"})
        got = list(st.events())
        st.close()
        assert b"".join(e.bytes() for e in got if e.event == "stdout") == b"one\ntwo\n"
        assert got[-1].event == "result" and got[-1].data["status"] == "ok"
        # Pause, resume and fork keep a session's state where its worker is:
        # refused with a queue, naming why, and the session goes on.
        for op in ("pause", "resume", "fork", "checkpoint"):
            r = s.request("POST", base + "/" + op, None)
            assert r.code == 501 and "queue" in r.json()["error"]["message"], r.body
        for r in (s.request("GET", "/v1/checkpoints"),
                  s.request("POST", "/v1/sessions", {"from_checkpoint": "0" * 32})):
            assert r.code == 501 and "--queue" in r.json()["error"]["message"], r.body
        r = s.request("POST", base + "/runs", {"code": "print(open('a.txt').read())"})
        assert r.json()["stdout"] == "from python\n"
    finally:
        s.request("DELETE", base)


def test_a_session_whose_worker_dies_is_closed_with_why(start, redis, workers):
    a = workers("w-x1")
    s = serve(start, redis)
    sid = s.request("POST", "/v1/sessions", None).json()["id"]
    b = workers("w-x2")
    a.stop(signal.SIGKILL)
    r = s.request("POST", f"/v1/sessions/{sid}/runs", {"code": "print(1)"})
    assert r.code == 410
    assert "worker" in r.json()["error"]["message"]
    assert s.request("DELETE", f"/v1/sessions/{sid}").code == 204
    del b


def test_two_workers_share_the_load(start, redis, workers):
    w1 = workers("w-1", "--concurrency", "2")
    w2 = workers("w-2", "--concurrency", "2")
    s = serve(start, redis, "--concurrency", "8")
    n = 60

    def one(i):
        return i, s.run(f"import time; time.sleep(0.05); print({i})")

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(one, range(n)))
    assert all(r.code == 200 and r.json()["stdout"] == f"{i}\n" for i, r in answers)
    # A worker logs each run before it answers, but the lines reach this
    # test through a reader thread of its own: wait for them to arrive,
    # then count (a run done twice would make more than n).
    wait_for(lambda: w1.runs() + w2.runs() >= n)
    assert w1.runs() + w2.runs() == n
    assert w1.runs() > 0 and w2.runs() > 0


def test_a_worker_stopping_finishes_its_run(start, redis, workers):
    w = workers("w-term", "--concurrency", "1")
    s = serve(start, redis)
    answers = []
    t = threading.Thread(target=lambda: answers.append(
        s.run("import time; time.sleep(1.5); print('done')")))
    t.start()
    assert wait_for(lambda: s.metrics()["agentjail_runs_running"] == 1)
    time.sleep(0.4)
    assert w.stop(signal.SIGTERM) == 0
    t.join(30)
    assert answers[0].json()["stdout"] == "done\n"


def test_a_worker_never_widens_its_own_limits(start, redis, workers):
    workers("w-narrow", "--memory", "128")
    s = serve(start, redis, "--memory", "256")
    r = s.run("print(1)")
    assert r.code == 400
    assert "this worker's limits are narrower" in r.json()["error"]["message"]
    assert "memory_mb" in r.json()["error"]["message"]
    assert s.run("print(1)", memory_mb=100).json()["stdout"] == "1\n"


def test_bad_queue_urls_are_refused(tmp_path):
    for url, expect in [("http://x", "expected redis://"), ("redis://", "names no host"),
                        ("redis://h:99999", "port"), ("redis://h:1/99", "database")]:
        r = subprocess.run([AGENTJAIL, "worker", "--queue", url], capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 2 and expect in r.stderr, (url, r.stderr)
        r = subprocess.run([AGENTJAIL, "serve", "--queue", url], capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 2 and expect in r.stderr, (url, r.stderr)
    r = subprocess.run([AGENTJAIL, "worker"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "--queue" in r.stderr


def test_mcp_tools_call_goes_through_the_queue(start, redis, workers):
    w = workers("w-mcp")
    s = serve(start, redis)
    msg = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
           "params": {"name": "run_python", "arguments": {"code": "print('via worker')"}}}
    r = s.request("POST", "/mcp", msg, headers={"Accept": "application/json, text/event-stream"})
    assert r.code == 200
    result = r.json()["result"]
    assert result["isError"] is False
    assert result["structuredContent"]["stdout"] == "via worker\n"
    wait_for(lambda: w.runs() >= 1)
    assert w.runs() == 1


def test_a_lost_run_no_worker_took_is_safe_to_retry(start, redis, workers):
    # A worker that read the run from the stream and died before it
    # claimed it, played by this test on Redis: "w-fake" offers a slot,
    # reads the entry as a consumer of the group, and its heartbeat ends.
    s = serve(start, redis, "--max-wait", "30")
    redis.cli("XGROUP", "CREATE", "agentjail:runs:process", "workers", "0", "MKSTREAM")
    redis.cli("HSET", "agentjail:workers", "w-fake", "process")
    redis.cli("SET", "agentjail:worker:w-fake:alive", "1", "PX", "30000")
    assert wait_for(lambda: s.metrics()["agentjail_run_slots"] == 1)
    answers = []
    t = threading.Thread(target=lambda: answers.append(s.run("print('never')")))
    t.start()
    read = redis.cli("--raw", "XREADGROUP", "GROUP", "workers", "w-fake", "COUNT", "1",
                     "BLOCK", "20000", "STREAMS", "agentjail:runs:process", ">")
    sent = json.loads(read.splitlines()[-1])  # stream, entry id, "msg", then the request
    redis.cli("DEL", "agentjail:worker:w-fake:alive")
    survivor = workers("w-survivor", "--concurrency", "1")
    t.join(60)
    r = answers[0]
    assert r.code == 502
    body = r.json()
    assert body["run_id"] == sent["id"]
    assert body["lost"] is True
    assert body["may_have_started"] is False and body["retry_safe"] is True
    assert redis.cli("GET", f"agentjail:claim:{sent['id']}") == "abandoned"
    assert s.metrics()['agentjail_runs_lost_total{may_have_started="false"}'] == 1
    assert survivor.runs() == 0
    assert s.stop() == 0  # the sanitizer build: nothing leaked on the way


def run_via(s, front, code):
    """A run's stdout and status, through the JSON API or /mcp."""
    if front == "api":
        r = s.run(code)
        assert r.code == 200
        return r.json()["stdout"], r.json()["status"]
    msg = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
           "params": {"name": "run_python", "arguments": {"code": code}}}
    r = s.request("POST", "/mcp", msg, headers={"Accept": "application/json, text/event-stream"})
    assert r.code == 200
    out = r.json()["result"]["structuredContent"]
    return out["stdout"], out["status"]


@pytest.mark.parametrize("front", ["api", "mcp"])
def test_admission_follows_the_live_workers_slots(start, redis, workers, front):
    # More slots across the fleet than serve's machine has CPUs: serve's
    # own CPU count must not cap them, through either front end.
    each = max(2, os.cpu_count() // 2 + 1)
    w1 = workers("w-f1", "--concurrency", str(each))
    w2 = workers("w-f2", "--concurrency", str(each))
    s = serve(start, redis)
    assert wait_for(lambda: s.metrics()["agentjail_run_slots"] == 2 * each)
    assert s.metrics()["agentjail_workers_alive"] == 2
    n = 2 * each
    # Each run says when it started and ended; all n at once means every
    # start comes before any end (an order, not a duration).
    code = "import time; print(time.time()); time.sleep(3); print(time.time())"
    with concurrent.futures.ThreadPoolExecutor(n) as pool:
        answers = list(pool.map(lambda _: run_via(s, front, code), range(n)))
    assert all(status == "ok" for _, status in answers)
    spans = [tuple(map(float, out.split())) for out, _ in answers]
    assert max(b for b, _ in spans) < min(e for _, e in spans)
    wait_for(lambda: w1.runs() + w2.runs() >= n)
    assert w1.runs() == each and w2.runs() == each
    # A dead worker's slots go with its heartbeat.
    w2.stop(signal.SIGKILL)
    assert wait_for(lambda: s.metrics()["agentjail_run_slots"] == each)
    assert s.metrics()["agentjail_workers_alive"] == 1


def test_a_run_waits_for_a_worker_when_none_is_alive(start, redis, workers):
    s = serve(start, redis, "--max-wait", "60")
    assert s.metrics()["agentjail_run_slots"] == 0
    answers = []
    t = threading.Thread(target=lambda: answers.append(s.run("print('served late')")))
    t.start()
    assert wait_for(lambda: s.metrics()["agentjail_queue_depth"] == 1)
    workers("w-late", "--concurrency", "1")
    t.join(60)
    assert answers[0].code == 200 and answers[0].json()["stdout"] == "served late\n"


def test_an_explicit_concurrency_caps_the_fleet(start, redis, workers):
    workers("w-c", "--concurrency", "3")
    s = serve(start, redis, "--concurrency", "2")
    assert wait_for(lambda: any("offer 3 run slot(s); admitting 2" in l for l in s.stderr))
    assert s.metrics()["agentjail_run_slots"] == 2


def test_help_says_how_admission_is_sized():
    out = subprocess.run([AGENTJAIL, "serve", "--help"], capture_output=True, text=True,
                         timeout=30).stdout
    assert "the sum of the slots the live" in out and "503 no_worker" in out


def test_a_background_command_through_its_worker(start, redis, workers):
    from conftest import Stream
    s, base = session_of_two_seconds(start, redis, workers, "w-procs")
    try:
        r = s.request("POST", base + "/processes",
                      {"command": "echo one; read go; echo two", "stdin": True})
        assert r.code == 201, r.body
        pid = r.json()["pid"]
        listed = s.request("GET", base + "/processes").json()["processes"]
        assert {"pid": pid, "command": "echo one; read go; echo two", "running": True} in listed
        st = Stream(s, "GET", f"{base}/processes/{pid}/events")
        first = []
        for e in st.events():
            first.append(e)
            if e.event == "stdout":
                break
        st.close()
        assert first[-1].bytes() == b"one\n" and first[-1].id == "4-0"
        r = s.request("POST", f"{base}/processes/{pid}/stdin", {"data": "eAo=", "close": True})
        assert r.code == 200, r.body
        st = Stream(s, "GET", f"{base}/processes/{pid}/events",
                    headers={"Last-Event-ID": first[-1].id})
        rest = list(st.events())
        st.close()
        assert b"".join(e.bytes() for e in rest if e.event == "stdout") == b"two\n"
        assert rest[-1].event == "result" and rest[-1].data["stdout"] == "one\ntwo\n"
        r = s.request("GET", f"{base}/processes/999999")
        assert r.code == 404 and "no process 999999" in r.json()["error"]["message"]
        pid = s.request("POST", base + "/processes", {"command": "sleep 100"}).json()["pid"]
        assert s.request("POST", f"{base}/processes/{pid}/signal", {"signal": "KILL"}).code == 200
        res = s.request("GET", f"{base}/processes/{pid}?wait=30").json()
        assert (res["status"], res["signal"]) == ("killed", 9), res
    finally:
        s.request("DELETE", base)


def test_a_terminal_through_its_worker(start, redis, workers):
    from conftest import Stream
    s, base = session_of_two_seconds(start, redis, workers, "w-pty")
    try:
        r = s.request("POST", base + "/processes",
                      {"command": "stty size; read x; stty size; echo got-$x",
                       "pty": {"cols": 80, "rows": 24}})
        assert r.code == 201, r.body
        pid = r.json()["pid"]
        st = Stream(s, "GET", f"{base}/processes/{pid}/events")
        shown = b""
        for e in st.events():
            shown += e.bytes() if e.event == "stdout" else b""
            if b"24 80" in shown:
                break
        r = s.request("POST", f"{base}/processes/{pid}/resize", {"cols": 100, "rows": 30})
        assert r.code == 200, r.body
        assert s.request("POST", f"{base}/processes/{pid}/stdin", {"data": "aGkK"}).code == 200
        rest = list(st.events())
        st.close()
        shown += b"".join(e.bytes() for e in rest if e.event == "stdout")
        assert b"30 100\r\n" in shown and b"got-hi\r\n" in shown, shown
        plain = s.request("POST", base + "/processes", {"command": "sleep 100"}).json()["pid"]
        r = s.request("POST", f"{base}/processes/{plain}/resize", {"cols": 1, "rows": 1})
        assert r.code == 409 and r.json()["error"]["code"] == "not_a_terminal", r.body
    finally:
        s.request("DELETE", base)
