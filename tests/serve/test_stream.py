"""Streamed and background runs on serve without a queue (docs/serve.md,
"Streaming and background runs"): SSE on POST /v1/runs and on a session's
runs, resume from Last-Event-ID, cancel, background runs and their list,
another key's run, the budget, and a client that never reads."""
import base64
import fcntl
import json
import os
import signal
import socket
import struct
import sys
import termios
import time

import pytest

from conftest import ROOT, Stream, add_key, sandbox_pids, wait_for

sys.path.insert(0, os.path.join(ROOT, "python", "tests"))
from gate import GATE  # noqa: E402

# Bytes written in separate flushes, with pauses so that each is a chunk of
# its own: text, bytes that are not UTF-8, and a character split in two.
CHUNKS = [b"head\n", b"\xff\xfe raw \x00\n", "\u00e9".encode()[:1],
          "\u00e9".encode()[1:] + b" split\n", b"tail\n"]
CHUNKY = ("import sys, time\nw = sys.stdout.buffer\n"
          f"for c in {CHUNKS!r}:\n    w.write(c); w.flush(); time.sleep(0.4)\n")


def stdout_of(events):
    return b"".join(e.bytes() for e in events if e.event == "stdout")


def test_first_output_arrives_while_the_program_runs(start, tmp_path):
    # The program waits for a gate the test opens only once it has seen
    # the first event: order alone shows the event came while it ran.
    tmp_path.chmod(0o755)
    server = start("--timeout", "30", "--cpu", "10", "--ro-bind", f"{tmp_path}:/mnt/gate")
    s = Stream(server, "POST", "/v1/runs",
               {"code": GATE + "print('first', flush=True)\nprint(gate())\n"})
    assert s.status == 200
    assert s.headers["Content-Type"] == "text/event-stream"
    run_id = s.headers["X-Run-Id"]
    events = s.events()
    first = next(events)
    assert s.retry == 1000
    assert (first.id, first.event) == (1, "stdout")
    assert first.data["text"] and "first\n".startswith(first.data["text"])
    # The program waits at the gate: its run is running, not done.
    info = server.request("GET", f"/v1/runs/{run_id}").json()
    assert info["state"] == "running" and "result" not in info
    (tmp_path / "go").touch()
    rest = list(events)
    assert [e.id for e in [first] + rest] == list(range(1, len(rest) + 2))
    assert rest[-1].event == "result"
    result = rest[-1].data
    assert result["status"] == "ok" and result["run_id"] == run_id
    assert stdout_of([first] + rest) == b"first\nsaw the gate\n"
    s.close()


def test_reconnect_from_last_event_id_is_byte_exact(server):
    s = Stream(server, "POST", "/v1/runs", {"code": CHUNKY})
    run_id = s.headers["X-Run-Id"]
    events = s.events()
    seen = [next(events), next(events)]
    s.close()  # dropped mid-run: the run goes on
    r = Stream(server, "GET", f"/v1/runs/{run_id}/events",
               headers={"Last-Event-ID": str(seen[-1].id)})
    assert r.status == 200
    rest = list(r.events())
    r.close()
    got = seen + rest
    # No gap, no duplicate, the result last.
    assert [e.id for e in got] == list(range(1, len(got) + 1))
    assert got[-1].event == "result" and got[-1].data["status"] == "ok"
    assert stdout_of(got) == b"".join(CHUNKS)
    # A chunk that is not UTF-8 went as base64, not mangled into text.
    assert any("base64" in e.data for e in got if e.event == "stdout")
    # ?after= is the same as the header.
    q = server.request("GET", f"/v1/runs/{run_id}/events?after={seen[-1].id}",
                       headers={"Accept": "application/json"}).json()
    assert [e["id"] for e in q["events"]] == [e.id for e in rest]


def test_cancel_mid_stream_leaves_nothing(server):
    code = "import time\nprint('up', flush=True)\ntime.sleep(60)\n"
    s = Stream(server, "POST", "/v1/runs", {"code": code})
    run_id = s.headers["X-Run-Id"]
    events = s.events()
    assert next(events).event == "stdout"
    assert sandbox_pids(), "the run's process is not there to be cancelled"
    d = server.request("DELETE", f"/v1/runs/{run_id}")
    assert d.code == 202 and d.json() == {"id": run_id, "state": "running"}
    rest = list(events)
    result = rest[-1].data
    assert rest[-1].event == "result"
    assert result["status"] == "killed" and "cancel" in result["message"]
    assert wait_for(lambda: sandbox_pids() == [], timeout=10)
    # Done: a second DELETE changes nothing.
    again = server.request("DELETE", f"/v1/runs/{run_id}")
    assert again.code == 200 and again.json()["state"] == "done"


def test_output_cap_and_a_flood_hold_while_streaming(server):
    flood = "import sys\nwhile True:\n    sys.stdout.write('x' * 4096 + '\\n')\n"
    s = Stream(server, "POST", "/v1/runs", {"code": flood, "limits": {"output_kb": 64}})
    got = list(s.events())
    s.close()
    result = got[-1].data
    assert result["status"] == "output_limit"
    out = stdout_of(got)
    # No chunk past the cap, and the stream is what the result says.
    assert len(out) <= 64 * 1024
    assert out.decode() == result["stdout"]


def test_background_run_state_events_and_result(server):
    r = server.request("POST", "/v1/runs", {"code": "print('bg')", "background": True})
    assert r.code == 202
    body = r.json()
    run_id = body["id"]
    assert body == {"id": run_id, "state": "queued", "events": f"/v1/runs/{run_id}/events"}
    assert r.headers["Location"] == f"/v1/runs/{run_id}"
    assert wait_for(lambda: server.request("GET", f"/v1/runs/{run_id}").json()["state"]
                    == "done")
    info = server.request("GET", f"/v1/runs/{run_id}").json()
    assert info["background"] is True and info["ended"] >= info["created"]
    assert info["result"]["stdout"] == "bg\n" and info["result"]["run_id"] == run_id
    polled = server.request("GET", f"/v1/runs/{run_id}/events",
                            headers={"Accept": "application/json"}).json()
    assert polled["done"] is True
    kinds = [e["event"] for e in polled["events"]]
    assert set(kinds[:-1]) == {"stdout"} and kinds[-1] == "result"
    # The events of a done run, as SSE: all of them, then the end.
    s = Stream(server, "GET", f"/v1/runs/{run_id}/events")
    got = list(s.events())
    s.close()
    assert [e.event for e in got] == kinds
    assert got[-1].data == info["result"]


def test_an_event_id_past_the_end_is_a_400_or_gets_the_result(server):
    r = server.request("POST", "/v1/runs", {"code": "print('bg')", "background": True})
    run_id = r.json()["id"]
    assert wait_for(lambda: server.request("GET", f"/v1/runs/{run_id}").json()["state"]
                    == "done")
    polled = server.request("GET", f"/v1/runs/{run_id}/events",
                            headers={"Accept": "application/json"}).json()
    last = polled["events"][-1]["id"]
    # Past the last event of a done run: the id was never given, a 400
    # naming it, on SSE and JSON alike.
    bad = server.request("GET", f"/v1/runs/{run_id}/events",
                         headers={"Last-Event-ID": str(last + 1)})
    assert bad.code == 400 and "Last-Event-ID" in bad.json()["error"]["message"]
    assert "past the last event" in bad.json()["error"]["message"]
    bad = server.request("GET", f"/v1/runs/{run_id}/events?after={last + 5}",
                         headers={"Accept": "application/json"})
    assert bad.code == 400 and "after" in bad.json()["error"]["message"]
    # At the last event (the client saw the result): nothing more, no 400.
    s = Stream(server, "GET", f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": str(last)})
    assert s.status == 200 and list(s.events()) == []
    s.close()
    # A live run read from past anything it will have: its end still
    # comes, as exactly one result.
    code = "import time\ntime.sleep(3)\nprint('late')\n"
    r = server.request("POST", "/v1/runs", {"code": code, "background": True})
    run_id = r.json()["id"]
    s = Stream(server, "GET", f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": "1000"})
    assert s.status == 200
    got = list(s.events())
    s.close()
    assert [e.event for e in got] == ["result"]
    # Its id is the run's own last (print's text and newline may have come
    # as one stdout event or two), far below the 1000 asked from.
    assert got[0].data["stdout"] == "late\n" and got[0].id in (2, 3)
    polled = server.request("GET", f"/v1/runs/{run_id}/events",
                            headers={"Accept": "application/json"}).json()
    assert polled["events"][-1]["id"] == got[0].id


@pytest.fixture
def two_keys(tmp_path, start):
    keys = tmp_path / "keys"
    a = add_key(keys, "alice")
    b = add_key(keys, "bob")
    return start("--timeout", "10", "--keys", str(keys)), a, b


def test_list_newest_first_paged_and_another_keys_run_is_missing(two_keys):
    srv, alice, bob = two_keys
    ids = []
    for i in range(3):
        r = srv.request("POST", "/v1/runs", {"code": f"print({i})", "background": True},
                        key=alice)
        ids.append(r.json()["id"])
    for i in ids:
        assert wait_for(lambda: srv.request("GET", f"/v1/runs/{i}", key=alice).json()
                        ["state"] == "done")
    page = srv.request("GET", "/v1/runs?limit=2", key=alice).json()
    assert [r["id"] for r in page["runs"]] == ids[::-1][:2]
    assert page["next"] == ids[1]
    page2 = srv.request("GET", f"/v1/runs?limit=2&before={page['next']}", key=alice).json()
    assert [r["id"] for r in page2["runs"]] == [ids[0]] and page2["next"] is None
    # Bob sees none of them, and each of Alice's ids answers him exactly as
    # an id that never existed.
    assert srv.request("GET", "/v1/runs", key=bob).json() == {"runs": [], "next": None}
    missing = "0" * 32
    for path in ("", "/events"):
        other = srv.request("GET", f"/v1/runs/{ids[0]}{path}", key=bob)
        none = srv.request("GET", f"/v1/runs/{missing}{path}", key=bob)
        assert other.code == none.code == 404
        assert other.body == none.body
        assert other.json()["error"]["code"] == "no_such_run"
    other = srv.request("DELETE", f"/v1/runs/{ids[0]}", key=bob)
    assert (other.code, other.body) == (404, none.body)


def test_session_run_streams_and_is_recorded(server):
    sid = server.request("POST", "/v1/sessions").json()["id"]
    server.request("POST", f"/v1/sessions/{sid}/runs", {"code": "x = 41"})
    s = Stream(server, "POST", f"/v1/sessions/{sid}/runs",
               {"code": "import time\nprint(x + 1, flush=True)\ntime.sleep(1)\nprint('end')"})
    assert s.status == 200
    run_id = s.headers["X-Run-Id"]
    got = list(s.events())
    s.close()
    assert stdout_of(got) == b"42\nend\n"
    assert got[-1].event == "result" and got[-1].data["status"] == "ok"
    info = server.request("GET", f"/v1/runs/{run_id}").json()
    assert info["session"] is True and info["session_id"] == sid
    again = Stream(server, "GET", f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": "1"})
    assert [e.id for e in again.events()] == [e.id for e in got[1:]]
    again.close()
    assert server.request("DELETE", f"/v1/sessions/{sid}").code == 204


@pytest.mark.parametrize("body, headers, path, word", [
    ({"code": "1", "background": "yes"}, {}, "/v1/runs", "background: expected true or false"),
    ({"code": "1", "background": True, "colour": 1}, {}, "/v1/runs", "unknown field 'colour'"),
    ({"code": "1", "background": True, "webhook": "http://127.0.0.1:9/"}, {}, "/v1/runs",
     "webhook: this server takes no webhooks"),
    (None, {"Last-Event-ID": "seven"}, "/v1/runs/{id}/events",
     "Last-Event-ID: expected an event number"),
    (None, {}, "/v1/runs/{id}/events?after=-1", "after: expected an event number"),
    (None, {}, "/v1/runs?limit=0", "limit: expected 1 to 100"),
])
def test_bad_input_is_a_400_naming_it(server, body, headers, path, word):
    if "{id}" in path:
        run_id = server.request("POST", "/v1/runs", {"code": "1", "background": True}
                                ).json()["id"]
        path = path.format(id=run_id)
        assert wait_for(lambda: server.request("GET", f"/v1/runs/{run_id}").json()["state"]
                        == "done")
    r = server.request("POST" if body else "GET", path, body, headers=headers)
    assert r.code == 400
    assert word in r.json()["error"]["message"]


def test_a_key_whose_live_runs_hold_its_budget_gets_429(start):
    srv = start("--timeout", "30", "--runs-budget-mb", "1", "--output", "4096")
    hog = ("import sys, time\nsys.stdout.write('x' * (1536 * 1024))\nsys.stdout.flush()\n"
           "time.sleep(30)\n")
    first = srv.request("POST", "/v1/runs", {"code": hog, "background": True}).json()["id"]
    # Its output is recorded as it comes: once the record holds the whole
    # budget, a new recorded run is refused, and a plain run is not.
    def refused():
        r = srv.request("POST", "/v1/runs", {"code": "1", "background": True})
        if r.code == 202:
            # Done, or already dropped for room (an ended run goes first).
            assert wait_for(lambda: srv.request("GET", f"/v1/runs/{r.json()['id']}").json()
                            .get("state", "done") == "done")
        return r.code == 429 and r.json()["error"]["code"] == "runs_budget"
    assert wait_for(refused)
    assert srv.run("print(1)").json()["status"] == "ok"
    assert srv.request("DELETE", f"/v1/runs/{first}").code == 202
    assert wait_for(lambda: srv.request("GET", f"/v1/runs/{first}").json()["state"] == "done")
    # Ended, it is kept until room is needed, then the first to go: a new
    # run is taken, and the old one is gone.
    assert srv.request("POST", "/v1/runs", {"code": "1", "background": True}).code == 202
    assert srv.request("GET", f"/v1/runs/{first}").code == 404


def test_a_live_runs_worst_case_is_held_before_it_writes(start):
    # Caps of 256 KiB a stream: a run's worst case (its events and the
    # result's copy of them) is the whole 1 MiB budget, held from its
    # start, so a second recorded run is refused while the first has
    # written nothing yet: live runs can never pass the budget together.
    srv = start("--timeout", "30", "--runs-budget-mb", "1", "--output", "256")
    quiet = "import time\ntime.sleep(30)\n"
    first = srv.request("POST", "/v1/runs", {"code": quiet, "background": True}).json()["id"]
    r = srv.request("POST", "/v1/runs", {"code": "1", "background": True})
    assert r.code == 429 and r.json()["error"]["code"] == "runs_budget"
    assert srv.request("DELETE", f"/v1/runs/{first}").code == 202
    assert wait_for(lambda: srv.request("GET", f"/v1/runs/{first}").json()["state"] == "done")
    # Ended, its hold is its actual bytes: room again.
    assert srv.request("POST", "/v1/runs", {"code": "1", "background": True}).code == 202


def test_a_done_run_is_dropped_after_keep_runs(start):
    srv = start("--keep-runs", "1")
    run_id = srv.request("POST", "/v1/runs", {"code": "1", "background": True}).json()["id"]
    assert wait_for(lambda: srv.request("GET", f"/v1/runs/{run_id}").code == 404)


def vm_rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def unread(sock):
    """Bytes that came to sock and wait to be read."""
    return struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0" * 4))[0]


def settled_rss_kb(pid, timeout=60):
    """pid's RSS once it has stopped moving (under 256 KiB over 2 s of
    samples), or as it is at the timeout."""
    deadline = time.monotonic() + timeout
    last, same = vm_rss_kb(pid), 0
    while same < 8 and time.monotonic() < deadline:
        time.sleep(0.25)
        now = vm_rss_kb(pid)
        same = same + 1 if abs(now - last) < 256 else 0
        last = now
    return last


def test_clients_that_never_read_do_not_grow_serves_memory(start):
    """A run prints 20 MiB; eight clients stream it and never read (one
    from its POST, seven once it is done, when all of it is there to
    take). What a reader holds is one batch of events (64 KiB and one
    event) and the text of one event, and it is asked for more only when
    its socket takes it, so readers add a few MiB at most, not a copy of
    the output each (a reader that took all there is went past 350 MiB).
    The bound: serve's RSS with one such run recorded (measured), plus a
    second run's record (its events and its result: twice the output, and
    a quarter more for the allocator), plus 4 MiB a reader, plus 16 MiB."""
    env = dict(os.environ)
    # The sanitizer build keeps freed memory in a quarantine (256 MiB) that
    # RSS would count whatever serve does: off for this measure.
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=0"
    srv = start("--timeout", "60", "--output", "32768", env=env)
    out = 20 << 20
    code = f"import sys\nsys.stdout.write(('x' * 1023 + '\\n') * {out // 1024})\n"

    def background_done():
        run_id = srv.request("POST", "/v1/runs", {"code": code, "background": True}
                             ).json()["id"]
        assert wait_for(lambda: srv.request("GET", f"/v1/runs/{run_id}").json()["state"]
                        == "done", timeout=120)
        return run_id

    background_done()
    base = vm_rss_kb(srv.proc.pid)
    host, port = srv.url[len("http://"):].rsplit(":", 1)
    readers = 8
    socks = []

    def never_reads(request):
        s = socket.socket()
        # A small window before connecting: the kernel holds little for it.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect((host, int(port)))
        s.sendall(request.encode())
        socks.append(s)

    body = json.dumps({"code": code})
    never_reads(f"POST /v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {srv.key}\r\n"
                f"Accept: text/event-stream\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n{body}")
    assert wait_for(lambda: len(srv.request("GET", "/v1/runs").json()["runs"]) == 2)
    streamed = srv.request("GET", "/v1/runs").json()["runs"][0]["id"]
    assert wait_for(lambda: srv.request("GET", f"/v1/runs/{streamed}").json()["state"]
                    == "done", timeout=120)
    # The others come once it is done: all of its 20 MiB is there to take.
    for _ in range(readers - 1):
        never_reads(f"GET /v1/runs/{streamed}/events HTTP/1.1\r\nHost: x\r\n"
                    f"Authorization: Bearer {srv.key}\r\nAccept: text/event-stream\r\n\r\n")
    # The readers are as far as their sockets let them: each has sent
    # (its socket holds bytes), and serve's RSS has stopped moving (each
    # blocks on a full socket; a reader holding more would hold it then).
    assert wait_for(lambda: all(unread(k) > 0 for k in socks), timeout=60)
    grown = settled_rss_kb(srv.proc.pid) - base
    bound = (2 * out * 5 // 4 + readers * (4 << 20) + (16 << 20)) >> 10
    assert grown <= bound, f"serve grew {grown} KiB with {readers} readers; bound {bound} KiB"
    result = srv.request("GET", f"/v1/runs/{streamed}").json()["result"]
    assert result["status"] == "ok" and len(result["stdout"]) == out
    for s in socks:
        s.close()


def test_a_quiet_run_is_kept_alive_past_the_idle_timeout(start):
    """A run silent for longer than serve's idle timeout: the stream sends
    keep-alive comments (at half the timeout) and is not cut."""
    srv = start("--idle-timeout", "2", "--timeout", "20")
    s = Stream(srv, "POST", "/v1/runs",
               {"code": "import time\nprint(1, flush=True)\ntime.sleep(5)\nprint(2)"})
    got = list(s.events())
    s.close()
    assert got[-1].event == "result" and got[-1].data["stdout"] == "1\n2\n"
    assert ": keep-alive" in s.comments


def test_sigterm_lets_streamed_and_background_runs_finish(start):
    """Shutdown drains recorded runs as any run: the stream gets its result
    and ends, then serve exits 0."""
    srv = start("--concurrency", "1", "--timeout", "20")
    s = Stream(srv, "POST", "/v1/runs",
               {"code": "import time\nprint('a', flush=True)\ntime.sleep(2)\nprint('b')"})
    events = s.events()
    assert next(events).event == "stdout"
    queued = srv.request("POST", "/v1/runs", {"code": "print('later')", "background": True})
    assert queued.code == 202
    srv.proc.send_signal(signal.SIGTERM)
    rest = list(events)
    s.close()
    assert rest[-1].event == "result" and rest[-1].data["stdout"] == "a\nb\n"
    assert srv.proc.wait(timeout=30) == 0


def test_a_session_runs_chart_is_an_image_event(server):
    sid = server.request("POST", "/v1/sessions").json()["id"]
    s = Stream(server, "POST", f"/v1/sessions/{sid}/runs", {
        "code": "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
                "plt.plot([1, 2, 3])\n"})
    got = list(s.events())
    s.close()
    images = [e for e in got if e.event == "image"]
    assert len(images) == 1 and got[-1].event == "result"
    img = images[0].data
    assert img["mime"] == "image/png" and img["name"]
    assert "base64" not in img  # one name for an image's bytes: a result's
    assert base64.b64decode(img["data"])[:8] == b"\x89PNG\r\n\x1a\n"
    # The result carries it too, as the plain answer would.
    assert got[-1].data["images"][0]["data"] == img["data"]
    assert server.request("DELETE", f"/v1/sessions/{sid}").code == 204


def test_a_run_cancelled_while_queued_frees_its_place_at_once(start):
    s = start("--timeout", "120", "--cpu", "120", "--concurrency", "1", "--queue-size", "1",
              "--max-wait", "120")

    def state(run_id):
        return s.request("GET", f"/v1/runs/{run_id}").json()

    def background(code):
        return s.request("POST", "/v1/runs", {"code": code, "background": True})

    busy = background("import time; time.sleep(100)").json()["id"]
    assert wait_for(lambda: state(busy)["state"] == "running")
    queued = background("print('never')").json()["id"]
    assert state(queued)["state"] == "queued"
    # The one place in the queue is taken: a third run is refused.
    full = background("print(3)")
    assert full.code == 429 and full.json()["error"]["code"] == "queue_full"
    assert s.request("DELETE", f"/v1/runs/{queued}").code == 202
    # It ends now, while the slot's run still runs, and its place is free.
    assert wait_for(lambda: state(queued)["state"] == "done")
    assert state(busy)["state"] == "running"
    result = state(queued)["result"]
    assert result["status"] == "killed" and "before it started" in result["message"]
    assert result["stdout"] == ""
    assert s.metrics()["agentjail_queue_depth"] == 0
    nxt = background("print(3)")
    assert nxt.code == 202
    for run_id in (busy, nxt.json()["id"]):
        s.request("DELETE", f"/v1/runs/{run_id}")
    assert wait_for(lambda: state(busy)["state"] == "done")
