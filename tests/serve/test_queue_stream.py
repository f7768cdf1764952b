"""Streamed and background runs through the Redis queue: the worker writes
a recorded run's events to Redis as they happen, so serve's readers (any
replica's) follow them live, resume them byte for byte, and find the result
after serve restarted; a worker killed mid-stream ends the stream with the
lost-run answer, exactly once even with two replicas reading."""
import json
import pathlib
import signal

import pytest

from conftest import Event, Stream, wait_for, add_key
# The same Redis and workers as the queue's own tests.
from test_queue import redis, workers  # noqa: F401  (fixtures)
from test_webhook import Receiver, file_secret, verify

# Long enough for a program that prints, waits, prints; the worker's
# limits must be at least serve's, or it refuses the run.
LIMITS = ("--timeout", "30", "--cpu", "30")
# One write per line: print's text and its newline may reach the pipe as
# two writes, and so as two events.
SAY = "import sys, time\ndef say(s):\n    sys.stdout.write(s + '\\n'); sys.stdout.flush()\n"


@pytest.fixture
def keys(tmp_path):
    path = tmp_path / "keys.json"
    return str(path), add_key(path, "alice", "--metrics"), add_key(path, "bob")


def serve(start, redis, keys, *args):
    return start("--queue", redis.url, *LIMITS, *args, keys=keys[0])


class Events(Stream):
    """An SSE answer read event by event, each as {"id", "event", "data"}."""

    def __init__(self, server, key, method, path, body=None, headers=None):
        super().__init__(server, method, path, body, key=key, headers=headers, timeout=90)
        self.run_id = self.headers.get("X-Run-Id")
        self._events = self.events()

    def next(self):
        """The next event, None at the end."""
        ev = next(self._events, None)
        return ev and {"id": ev.id, "event": ev.event, "data": ev.data}

    def until_result(self):
        """The events up to the result, which is last: then the end."""
        got = []
        while True:
            ev = self.next()
            assert ev is not None, f"the stream ended without a result after {got}"
            got.append(ev)
            if ev["event"] == "result":
                assert self.next() is None, "an event after the result"
                return got


def output(events, kind="stdout"):
    return b"".join(Event(e["id"], e["event"], e["data"]).bytes() for e in events
                    if e["event"] == kind)


def state(s, key, run_id):
    return s.request("GET", f"/v1/runs/{run_id}", key=key).json()


def test_chunks_reach_the_client_while_the_program_runs(start, redis, workers, keys):
    workers("w-live", *LIMITS, "--concurrency", "1")
    s = serve(start, redis, keys)
    alice = keys[1]
    ev = Events(s, alice, "POST", "/v1/runs",
                {"code": SAY + "say('first')\ntime.sleep(5)\nsay('second')"})
    assert ev.status == 200 and ev.run_id
    first = ev.next()
    assert first == {"id": 1, "event": "stdout", "data": {"text": "first\n"}}
    # The program still sleeps: the record says so, and has no result.
    info = state(s, alice, ev.run_id)
    assert info["state"] == "running" and "result" not in info
    rest = ev.until_result()
    assert [e["id"] for e in [first] + rest] == list(range(1, len(rest) + 2))
    assert output([first] + rest) == b"first\nsecond\n"
    result = rest[-1]["data"]
    assert result["status"] == "ok" and result["run_id"] == ev.run_id
    assert result["stdout"] == "first\nsecond\n"
    info = state(s, alice, ev.run_id)
    assert info["state"] == "done" and info["result"] == result
    # The plain POST is as it was: not recorded.
    r = s.request("POST", "/v1/runs", {"code": "print(1)"}, key=alice)
    assert r.code == 200 and r.json()["stdout"] == "1\n"
    assert s.request("GET", f"/v1/runs/{r.json()['run_id']}", key=alice).code == 404


def test_a_reconnect_resumes_byte_for_byte(start, redis, workers, keys):
    workers("w-resume", *LIMITS, "--concurrency", "1")
    s = serve(start, redis, keys)
    alice = keys[1]
    # Not UTF-8, and a character split over two writes.
    code = ("import sys, time\n"
            "o = sys.stdout.buffer\n"
            "def w(b):\n"
            "    o.write(b); o.flush(); time.sleep(0.3)\n"
            "w(b'a\\xff\\xfe')\n"
            "w('\u00e9'.encode()[:1])\n"
            "w('\u00e9'.encode()[1:] + b'z\\n')\n"
            "time.sleep(1)\n"
            "w(b'tail\\n')\n")
    want = b"a\xff\xfe" + "\u00e9".encode() + b"z\ntail\n"
    ev = Events(s, alice, "POST", "/v1/runs", {"code": code})
    first = ev.next()
    assert first["id"] == 1 and first["event"] == "stdout"
    ev.close()  # dropped mid-run: the run goes on
    again = Events(s, alice, "GET", f"/v1/runs/{ev.run_id}/events",
                   headers={"Last-Event-ID": "1"})
    rest = again.until_result()
    assert [e["id"] for e in rest] == list(range(2, len(rest) + 2))
    assert output([first] + rest) == want
    # ?after= is the same resume.
    third = Events(s, alice, "GET", f"/v1/runs/{ev.run_id}/events?after=1").until_result()
    assert third == rest


def test_a_worker_killed_mid_stream_ends_it_with_the_lost_answer_once(start, redis, workers,
                                                                     keys):
    doomed = workers("w-doomed", *LIMITS, "--concurrency", "1")
    s1 = serve(start, redis, keys)
    s2 = serve(start, redis, keys)  # a second replica on the same Redis
    alice = keys[1]
    ev = Events(s1, alice, "POST", "/v1/runs",
                {"code": SAY + "say('begun')\ntime.sleep(60)"})
    assert ev.next()["data"] == {"text": "begun\n"}
    other = Events(s2, alice, "GET", f"/v1/runs/{ev.run_id}/events")
    assert other.next()["data"] == {"text": "begun\n"}
    doomed.stop(signal.SIGKILL)  # by its pid: the worker this test started
    ends = [ev.until_result()[-1], other.until_result()[-1]]
    assert ends[0] == ends[1]
    assert ends[0]["id"] == 2 and ends[0]["event"] == "result"
    lost = ends[0]["data"]
    assert lost["error"]["code"] == "run_lost"
    assert lost["error"]["message"].startswith("worker lost: w-doomed")
    assert lost["run_id"] == ev.run_id and lost["lost"] is True
    assert lost["may_have_started"] is True and lost["retry_safe"] is False
    # Exactly one result in Redis, however many readers found it lost.
    entries = redis.cli("XRANGE", f"agentjail:run:{ev.run_id}:events", "-", "+").split("\n")
    assert entries.count("result") == 1
    info = state(s2, alice, ev.run_id)
    assert info["state"] == "done" and info["result"] == lost
    # Counted once, by the replica that ended it (a reader, or the one
    # that sent it).
    counted = [m['agentjail_runs_lost_total{may_have_started="true"}']
               for m in (s1.metrics(key=alice), s2.metrics(key=alice))]
    assert sum(counted) == 1


def test_a_background_run_outlives_serve(start, redis, workers, keys):
    workers("w-bg", *LIMITS, "--concurrency", "1")
    s1 = serve(start, redis, keys)
    alice = keys[1]
    r = s1.request("POST", "/v1/runs", {"code": "import time\ntime.sleep(3)\nprint('done')",
                                        "background": True}, key=alice)
    assert r.code == 202
    run_id = r.json()["id"]
    assert r.headers["Location"] == f"/v1/runs/{run_id}"
    assert wait_for(lambda: state(s1, alice, run_id)["state"] == "running")
    assert s1.stop() == 0  # SIGTERM while the worker runs it
    s2 = serve(start, redis, keys)
    assert wait_for(lambda: state(s2, alice, run_id)["state"] == "done", timeout=60)
    info = state(s2, alice, run_id)
    assert info["background"] is True
    assert info["result"]["status"] == "ok" and info["result"]["stdout"] == "done\n"
    events = Events(s2, alice, "GET", f"/v1/runs/{run_id}/events").until_result()
    assert output(events) == b"done\n" and events[-1]["data"] == info["result"]
    listed = s2.request("GET", "/v1/runs", key=alice).json()["runs"]
    assert [x["id"] for x in listed] == [run_id]


def test_a_background_runs_webhook_through_the_queue_is_signed(start, redis, workers, keys):
    rcv = Receiver()
    try:
        workers("w-hook", *LIMITS, "--concurrency", "1")
        s = serve(start, redis, keys, "--webhook-allow", rcv.url + "/hooks")
        alice = keys[1]
        r = s.request("POST", "/v1/runs", {"code": "print('hooked')", "background": True,
                                           "webhook": rcv.url + "/hooks/q"}, key=alice)
        assert r.code == 202, r.body
        run_id = r.json()["id"]
        assert rcv.wait(1)
        headers, body = rcv.got[0]
        assert headers["X-Agentjail-Run-Id"] == run_id
        assert verify(headers, body, file_secret(pathlib.Path(keys[0]), "alice"))
        record = json.loads(body)
        assert record["id"] == run_id and record["state"] == "done"
        assert record["result"]["stdout"] == "hooked\n"
        assert record["result"] == state(s, alice, run_id)["result"]
    finally:
        rcv.close()


def test_a_background_runs_webhook_survives_a_serve_restart_and_goes_once(start, redis,
                                                                         workers, keys):
    rcv = Receiver()
    try:
        workers("w-hook-restart", *LIMITS, "--concurrency", "1")
        allow = ("--webhook-allow", rcv.url + "/hooks")
        s1 = serve(start, redis, keys, *allow)
        alice = keys[1]
        r = s1.request("POST", "/v1/runs", {"code": "import time\ntime.sleep(5)\nprint('late')",
                                            "background": True,
                                            "webhook": rcv.url + "/hooks/r"}, key=alice)
        assert r.code == 202, r.body
        run_id = r.json()["id"]
        assert wait_for(lambda: state(s1, alice, run_id)["state"] == "running")
        assert s1.stop() == 0  # SIGTERM while the worker runs it
        # Two replicas come up after it: one of them delivers it, once.
        s2 = serve(start, redis, keys, *allow)
        s3 = serve(start, redis, keys, *allow)
        assert rcv.wait(1)
        headers, body = rcv.got[0]
        assert headers["X-Agentjail-Run-Id"] == run_id
        assert verify(headers, body, file_secret(pathlib.Path(keys[0]), "alice"))
        record = json.loads(body)
        assert record["state"] == "done" and record["result"]["stdout"] == "late\n"
        # Its schedule in Redis says delivered: nothing is left to send.
        assert wait_for(lambda: redis.cli("HGET", f"agentjail:run:{run_id}", "hook")
                        == "delivered")
        assert redis.cli("ZSCORE", "agentjail:hooks", run_id) == ""
        assert len(rcv.got) == 1
        delivered = [m['agentjail_webhook_attempts_total{outcome="delivered"}']
                     for m in (s2.metrics(key=alice), s3.metrics(key=alice))]
        assert sorted(delivered) == [0, 1]
    finally:
        rcv.close()


def test_cancel_through_the_queue(start, redis, workers, keys):
    w = workers("w-cancel", *LIMITS, "--concurrency", "1")
    s = serve(start, redis, keys)
    alice = keys[1]
    ev = Events(s, alice, "POST", "/v1/runs",
                {"code": SAY + "say('go')\ntime.sleep(60)"})
    assert ev.next()["data"] == {"text": "go\n"}
    r = s.request("DELETE", f"/v1/runs/{ev.run_id}", key=alice)
    assert r.code == 202
    result = ev.until_result()[-1]["data"]
    assert result["status"] == "killed" and "cancel" in result["message"]
    assert result["run_id"] == ev.run_id
    # Ended: a second DELETE changes nothing; the worker takes the next run.
    assert s.request("DELETE", f"/v1/runs/{ev.run_id}", key=alice).code == 200
    r = s.request("POST", "/v1/runs", {"code": "print('next')"}, key=alice)
    assert r.json()["stdout"] == "next\n"
    # The sanitizer build: the worker's recording leaked nothing, broke nothing.
    assert w.stop() == 0
    assert not any("Sanitizer" in line or "runtime error" in line for line in w.log)
    assert s.stop() == 0


def test_another_keys_run_is_a_missing_one(start, redis, workers, keys):
    workers("w-keys", *LIMITS, "--concurrency", "1")
    s = serve(start, redis, keys)
    alice, bob = keys[1], keys[2]
    r = s.request("POST", "/v1/runs", {"code": "print('mine')", "background": True}, key=alice)
    run_id = r.json()["id"]
    assert wait_for(lambda: state(s, alice, run_id)["state"] == "done")
    missing = "0" * 32
    for method, suffix in [("GET", ""), ("GET", "/events"), ("DELETE", "")]:
        theirs = s.request(method, f"/v1/runs/{run_id}{suffix}", key=bob)
        none = s.request(method, f"/v1/runs/{missing}{suffix}", key=bob)
        assert theirs.code == none.code == 404
        assert theirs.json()["error"]["code"] == "no_such_run"
        assert theirs.body == none.body.replace(missing.encode(), run_id.encode())
    assert s.request("GET", "/v1/runs", key=bob).json()["runs"] == []
    assert [x["id"] for x in s.request("GET", "/v1/runs", key=alice).json()["runs"]] == [run_id]


def test_a_session_call_streams_through_its_worker(start, redis, workers, keys):
    workers("w-sess", *LIMITS, "--concurrency", "1")
    s = serve(start, redis, keys)
    alice = keys[1]
    sid = s.request("POST", "/v1/sessions", {}, key=alice).json()["id"]
    try:
        s.request("POST", f"/v1/sessions/{sid}/runs", {"code": "x = 41"}, key=alice)
        ev = Events(s, alice, "POST", f"/v1/sessions/{sid}/runs",
                    {"code": "print(x + 1)"})
        assert ev.status == 200
        got = ev.until_result()
        assert output(got) == b"42\n" and got[-1]["data"]["run_id"] == ev.run_id
        info = state(s, alice, ev.run_id)
        assert info["state"] == "done" and info["session_id"] == sid
    finally:
        s.request("DELETE", f"/v1/sessions/{sid}", key=alice)


def test_a_run_cancelled_before_a_worker_takes_it_never_runs(start, redis, workers, keys):
    s = serve(start, redis, keys, "--max-wait", "60")
    alice = keys[1]
    # No worker yet: the run waits for one, its record queued.
    r = s.request("POST", "/v1/runs", {"code": "print('ran')", "background": True}, key=alice)
    run_id = r.json()["id"]
    assert state(s, alice, run_id)["state"] == "queued"
    assert s.request("DELETE", f"/v1/runs/{run_id}", key=alice).code == 202
    workers("w-late", *LIMITS, "--concurrency", "1")
    assert wait_for(lambda: state(s, alice, run_id)["state"] == "done", timeout=60)
    result = state(s, alice, run_id)["result"]
    assert result["status"] == "killed" and result["stdout"] == ""


def test_a_run_cancelled_while_waiting_for_a_slot_leaves_at_once(start, redis, workers, keys):
    workers("w-one-slot", *LIMITS, "--concurrency", "1")
    s = serve(start, redis, keys, "--max-wait", "120")
    alice = keys[1]
    # The fleet offers one slot: the second run waits in serve's queue.
    assert wait_for(lambda: s.metrics(key=alice)["agentjail_run_slots"] == 1)
    busy = s.request("POST", "/v1/runs", {"code": "import time; time.sleep(100)",
                                          "background": True}, key=alice).json()["id"]
    assert wait_for(lambda: state(s, alice, busy)["state"] == "running")
    queued = s.request("POST", "/v1/runs", {"code": "print('never')", "background": True},
                       key=alice).json()["id"]
    assert wait_for(lambda: s.metrics(key=alice)["agentjail_queue_depth"] == 1)
    assert s.request("DELETE", f"/v1/runs/{queued}", key=alice).code == 202
    # It ends now, while the slot's run still runs, and its place is free.
    assert wait_for(lambda: state(s, alice, queued)["state"] == "done")
    assert state(s, alice, busy)["state"] == "running"
    result = state(s, alice, queued)["result"]
    assert result["status"] == "killed" and "before it started" in result["message"]
    assert s.metrics(key=alice)["agentjail_queue_depth"] == 0
    s.request("DELETE", f"/v1/runs/{busy}", key=alice)
    assert wait_for(lambda: state(s, alice, busy)["state"] == "done")


def test_a_keys_live_runs_hold_its_budget(start, redis, workers, keys):
    workers("w-budget", *LIMITS, "--concurrency", "2")
    s = serve(start, redis, keys, "--runs-budget-mb", "1")
    alice, bob = keys[1], keys[2]
    # 1.2 MB recorded (each stream under its 1 MiB cap), then it waits.
    big = ("import sys, time\n"
           "sys.stdout.write('o' * 600000); sys.stdout.flush()\n"
           "sys.stderr.write('e' * 600000); sys.stderr.flush()\n"
           "time.sleep(60)\n")
    r = s.request("POST", "/v1/runs", {"code": big, "background": True}, key=alice)
    held = r.json()["id"]
    assert wait_for(lambda: int(redis.cli("HGET", f"agentjail:run:{held}", "bytes") or 0)
                    >= 1200000)
    refused = s.request("POST", "/v1/runs", {"code": "print(1)", "background": True}, key=alice)
    assert refused.code == 429 and refused.json()["error"]["code"] == "runs_budget"
    # Another key's budget is its own.
    assert s.request("POST", "/v1/runs", {"code": "print(1)", "background": True},
                     key=bob).code == 202
    s.request("DELETE", f"/v1/runs/{held}", key=alice)
    assert wait_for(lambda: state(s, alice, held)["state"] == "done")
    # Ended, the oldest record makes room for the new one.
    again = s.request("POST", "/v1/runs", {"code": "print(2)", "background": True}, key=alice)
    assert again.code == 202
    assert s.request("GET", f"/v1/runs/{held}", key=alice).code == 404


def test_the_list_pages_newest_first(start, redis, workers, keys):
    workers("w-list", *LIMITS, "--concurrency", "2")
    s = serve(start, redis, keys)
    alice = keys[1]
    ids = [s.request("POST", "/v1/runs", {"code": f"print({i})", "background": True},
                     key=alice).json()["id"] for i in range(3)]
    page = s.request("GET", "/v1/runs?limit=2", key=alice).json()
    assert [x["id"] for x in page["runs"]] == ids[:0:-1] and page["next"] == ids[1]
    assert all("result" not in x for x in page["runs"])
    rest = s.request("GET", f"/v1/runs?limit=2&before={page['next']}", key=alice).json()
    assert [x["id"] for x in rest["runs"]] == ids[:1] and rest["next"] is None
    gone = s.request("GET", f"/v1/runs?before={'0' * 32}", key=alice).json()
    assert gone["runs"] == []


def test_a_reader_finds_a_worker_lost_with_no_serve_waiting(start, redis, workers, keys):
    # The serve that sent the run is gone: only a reader can end it.
    doomed = workers("w-alone", *LIMITS, "--concurrency", "1")
    s1 = serve(start, redis, keys)
    alice = keys[1]
    r = s1.request("POST", "/v1/runs", {"code": SAY + "say('begun')\ntime.sleep(60)",
                                        "background": True}, key=alice)
    run_id = r.json()["id"]

    def printed():
        got = s1.request("GET", f"/v1/runs/{run_id}/events", key=alice,
                         headers={"Accept": "application/json"}).json()
        return len(got["events"]) == 1 and not got["done"]
    assert wait_for(printed)
    assert s1.stop() == 0
    doomed.stop(signal.SIGKILL)  # by its pid: the worker this test started
    s2 = serve(start, redis, keys)
    events = Events(s2, alice, "GET", f"/v1/runs/{run_id}/events").until_result()
    assert output(events) == b"begun\n"
    lost = events[-1]["data"]
    assert lost["error"]["code"] == "run_lost" and lost["lost"] is True
    assert lost["may_have_started"] is True and lost["run_id"] == run_id
    assert state(s2, alice, run_id)["result"] == lost
    # The reader that ended it counts it in /metrics.
    m = s2.metrics(key=alice)
    assert m['agentjail_runs_lost_total{may_have_started="true"}'] == 1
    assert m['agentjail_runs_lost_total{may_have_started="false"}'] == 0


def test_a_run_its_serve_left_untaken_is_given_up_by_a_reader(start, redis, workers, keys):
    busy = workers("w-busy", *LIMITS, "--concurrency", "1")
    s1 = serve(start, redis, keys)
    s2 = serve(start, redis, keys, "--max-wait", "5")
    alice = keys[1]
    first = s1.request("POST", "/v1/runs", {"code": SAY + "say('a')\ntime.sleep(60)",
                                            "background": True}, key=alice).json()["id"]
    assert wait_for(lambda: state(s1, alice, first)["state"] == "running")
    # The worker is busy: the second run waits, and its serve dies
    # before it gives up on it (a SIGKILL: nothing ends its record).
    r = s2.request("POST", "/v1/runs", {"code": "print('b')", "background": True}, key=alice)
    second = r.json()["id"]
    s2.proc.send_signal(signal.SIGKILL)  # by its pid: the serve this test started
    s2.proc.wait()
    assert wait_for(lambda: state(s1, alice, second)["state"] == "done", timeout=60)
    end = state(s1, alice, second)["result"]
    assert end["error"]["code"] == "no_worker" and "stopped waiting" in end["error"]["message"]
    assert end["run_id"] == second
    # Given up, it never runs: the worker, freed, goes on to the next run.
    s1.request("DELETE", f"/v1/runs/{first}", key=alice)
    assert s1.request("POST", "/v1/runs", {"code": "print('c')"},
                      key=alice).json()["stdout"] == "c\n"
    assert wait_for(lambda: busy.runs() == 2)
    assert not any(f"id {second}" in line for line in busy.log)


def mcp_messages(stream):
    """The JSON-RPC messages of an /mcp SSE answer, as they come."""
    data = []
    while True:
        line = stream.resp.readline()
        if not line:
            return
        line = line.decode().rstrip("\n")
        if line.startswith("data:"):
            data.append(line[5:].lstrip())
        elif line == "" and data:
            yield json.loads("\n".join(data))
            data = []


def test_an_mcp_call_through_the_queue_streams_its_output(start, redis, workers, keys):
    workers("w-mcp-live", *LIMITS, "--concurrency", "1")
    s = serve(start, redis, keys)
    alice = keys[1]
    code = SAY + "say('first line')\ntime.sleep(5)\nsay('second line')"
    msg = {"jsonrpc": "2.0", "id": "q", "method": "tools/call",
           "params": {"name": "run_python", "arguments": {"code": code},
                      "_meta": {"progressToken": "tok"}}}
    st = Stream(s, "POST", "/mcp", msg, key=alice,
                headers={"Accept": "application/json, text/event-stream"}, timeout=90)
    assert st.status == 200 and st.headers["Content-Type"].startswith("text/event-stream")
    got = mcp_messages(st)
    first = next(got)
    assert first["method"] == "notifications/progress"
    assert first["params"]["progressToken"] == "tok"
    assert first["params"]["message"] == "first line\n"
    # The program still sleeps on the worker: the call's record (no key's:
    # its owner is empty) says so, and has no result.
    runs = [k for k in redis.cli("--raw", "KEYS", "agentjail:run:*").split("\n")
            if k and not k.endswith(":events")]
    assert len(runs) == 1
    assert redis.cli("--raw", "HGET", runs[0], "owner") == ""
    assert redis.cli("--raw", "HGET", runs[0], "state") == "running"
    rest = list(got)
    assert [m["params"]["message"] for m in rest[:-1]] == ["second line\n"]
    assert rest[-1]["id"] == "q"
    out = rest[-1]["result"]["structuredContent"]
    assert out["status"] == "ok" and out["stdout"] == "first line\nsecond line\n"
    # Not one of the key's runs.
    assert s.request("GET", "/v1/runs", key=alice).json()["runs"] == []


def test_an_event_id_past_the_end_through_the_queue(start, redis, workers, keys):
    workers("w-past", *LIMITS, "--concurrency", "1")
    s = serve(start, redis, keys)
    alice = keys[1]
    # A live run read from past anything it will have: its end still
    # comes, as exactly one result (its number from the record).
    r = s.request("POST", "/v1/runs", {"code": SAY + "time.sleep(3)\nsay('late')",
                                       "background": True}, key=alice)
    run_id = r.json()["id"]
    ev = Events(s, alice, "GET", f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": "1000"})
    assert ev.status == 200
    got = ev.until_result()
    assert [(e["id"], e["event"]) for e in got] == [(2, "result")]
    assert got[0]["data"]["stdout"] == "late\n"
    # The run is done now: past its last event is a 400 naming the id.
    bad = s.request("GET", f"/v1/runs/{run_id}/events", key=alice,
                    headers={"Last-Event-ID": "3"})
    assert bad.code == 400 and "past the last event" in bad.json()["error"]["message"]


def test_a_keys_bytes_are_a_running_total_and_expired_records_leave_it(start, redis, workers,
                                                                        keys):
    workers("w-total", *LIMITS, "--concurrency", "1")
    s = serve(start, redis, keys, "--keep-runs", "1")
    alice = keys[1]

    def held(run_id):
        return int(redis.cli("HGET", f"agentjail:run:{run_id}", "bytes") or 0)

    def total():
        return int(redis.cli("GET", "agentjail:key:alice:runbytes") or 0)

    first = s.request("POST", "/v1/runs", {"code": "print('one')", "background": True},
                      key=alice).json()["id"]
    assert wait_for(lambda: state(s, alice, first)["state"] == "done")
    # A create reads the key's total, not every record: the total is the
    # record's bytes (its fixed cost, its output, its result twice).
    assert held(first) > 512 and total() == held(first)
    # Redis expires the record (kept 1 s): the next create takes it off
    # the total and the set.
    assert wait_for(lambda: redis.cli("EXISTS", f"agentjail:run:{first}") == "0")
    second = s.request("POST", "/v1/runs", {"code": "print('two')", "background": True},
                       key=alice).json()["id"]
    assert redis.cli("ZSCORE", "agentjail:key:alice:runs", first) == ""
    assert redis.cli("HGET", "agentjail:key:alice:runsize", first) == ""
    assert wait_for(lambda: state(s, alice, second)["state"] == "done")
    assert total() == held(second)
