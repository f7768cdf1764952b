"""Background commands over HTTP (issue 36): POST /v1/sessions/ID/processes
starts one and answers its pid; GET lists them and one's state (with
?wait= its end, exec's result object); .../events streams its output as
runs stream theirs, resumable by the place in each event's id; .../stdin
feeds it and .../signal signals it. Every route is the session's: another
key's session is not there."""
import base64

from conftest import Stream, add_key


def open_session(s, key="default"):
    r = s.request("POST", "/v1/sessions", None, key=key)
    assert r.code == 201, r.body
    return r.json()["id"]


def spawn(s, sid, body, key="default"):
    r = s.request("POST", f"/v1/sessions/{sid}/processes", body, key=key)
    assert r.code == 201, r.body
    return r.json()["pid"]


def proc(s, sid, pid, tail="", method="GET", body=None, key="default"):
    return s.request(method, f"/v1/sessions/{sid}/processes/{pid}{tail}", body, key=key)


def events_until(st, pred):
    """Events read until pred(events so far) holds (or the stream ends)."""
    got = []
    for e in st.events():
        got.append(e)
        if pred(got):
            break
    return got


def output(events, name):
    return b"".join(e.bytes() for e in events if e.event == name)


def test_output_streams_while_it_runs_then_its_result(server):
    sid = open_session(server)
    pid = spawn(server, sid, {"command": "echo 1; read go; echo 2; echo e >&2", "stdin": True})
    st = Stream(server, "GET", f"/v1/sessions/{sid}/processes/{pid}/events")
    assert st.status == 200 and st.headers["Content-Type"] == "text/event-stream"
    # Its first line comes while it waits for its stdin: it cannot have
    # ended, so this is output while it runs.
    got = events_until(st, lambda g: output(g, "stdout") == b"1\n")
    assert output(got, "stdout") == b"1\n" and got[-1].event == "stdout"
    assert got[-1].id == "2-0"  # the place after it: 2 bytes of stdout, none of stderr
    assert proc(server, sid, pid).json() == {"pid": pid, "command":
                                              "echo 1; read go; echo 2; echo e >&2",
                                              "running": True}
    assert proc(server, sid, pid, "/stdin", "POST", {"close": True}).code == 200
    rest = list(st.events())
    st.close()
    assert output(rest, "stdout") == b"2\n" and output(rest, "stderr") == b"e\n"
    assert rest[-1].event == "result"
    res = rest[-1].data
    assert (res["status"], res["exit_code"], res["stdout"], res["stderr"], res["pid"]) == \
        ("ok", 0, "1\n2\n", "e\n", pid)
    # Its state once ended is the same result object.
    end = proc(server, sid, pid).json()
    assert end["running"] is False and end["stdout"] == "1\n2\n" and end["status"] == "ok"
    server.request("DELETE", f"/v1/sessions/{sid}")


def test_a_cut_stream_resumes_from_its_last_event_exactly_once(server):
    sid = open_session(server)
    pid = spawn(server, sid, {"command": "echo a; echo b >&2; read go; echo c; echo d >&2",
                              "stdin": True})
    path = f"/v1/sessions/{sid}/processes/{pid}/events"
    st = Stream(server, "GET", path)
    first = events_until(st, lambda g: output(g, "stdout") == b"a\n" and
                         output(g, "stderr") == b"b\n")
    st.close()  # the connection dropped
    proc(server, sid, pid, "/stdin", "POST", {"close": True})
    st = Stream(server, "GET", path, headers={"Last-Event-ID": first[-1].id})
    rest = list(st.events())
    st.close()
    both = first + rest
    assert (output(both, "stdout"), output(both, "stderr")) == (b"a\nc\n", b"b\nd\n")
    assert rest[-1].event == "result" and rest[-1].data["stdout"] == "a\nc\n"
    # ?after= does the same; any place up to the end, again.
    st = Stream(server, "GET", path + "?after=1-0")
    again = list(st.events())
    st.close()
    assert (output(again, "stdout"), output(again, "stderr")) == (b"\nc\n", b"b\nd\n")
    # A place it never printed is refused, not waited on for ever.
    r = server.request("GET", path + "?after=99-0")
    assert r.code == 400 and "past the 4 bytes of stdout" in r.json()["error"]["message"]
    r = server.request("GET", path, headers={"Last-Event-ID": "7"})
    assert r.code == 400 and "Last-Event-ID: expected OUT-ERR" in r.json()["error"]["message"]
    server.request("DELETE", f"/v1/sessions/{sid}")


def test_stdin_round_trip_and_its_close(server):
    sid = open_session(server)
    pid = spawn(server, sid, {"argv": ["cat"], "stdin": True})
    data = b"hello\n\x00\xff"
    r = proc(server, sid, pid, "/stdin", "POST", {"data": base64.b64encode(data).decode()})
    assert r.code == 200 and r.json() == {"pid": pid, "bytes": len(data), "closed": False}
    st = Stream(server, "GET", f"/v1/sessions/{sid}/processes/{pid}/events")
    got = events_until(st, lambda g: output(g, "stdout") == data)
    st.close()
    assert output(got, "stdout") == data
    assert proc(server, sid, pid, "/stdin", "POST", {"close": True}).json()["closed"] is True
    res = proc(server, sid, pid, "?wait=30").json()
    assert (res["status"], res["running"]) == ("ok", False), res
    r = proc(server, sid, pid, "/stdin", "POST", {"data": "eA=="})
    assert r.code == 409 and r.json()["error"]["code"] == "stdin_closed", r.body
    # One started without "stdin": true had its stdin closed at its start.
    other = spawn(server, sid, {"command": "sleep 30"})
    r = proc(server, sid, other, "/stdin", "POST", {"data": "eA=="})
    assert r.code == 409 and r.json()["error"]["code"] == "stdin_closed", r.body
    server.request("DELETE", f"/v1/sessions/{sid}")


def test_a_signal_ends_it_and_the_list_shows_it(server):
    sid = open_session(server)
    a = spawn(server, sid, {"command": "sleep 100"})
    b = spawn(server, sid, {"argv": ["sleep", "100"]})
    listed = server.request("GET", f"/v1/sessions/{sid}/processes").json()["processes"]
    assert {"pid": a, "command": "sleep 100", "running": True} in listed
    assert {"pid": b, "command": "sleep 100", "running": True} in listed
    # A wait that passes while it runs answers its state.
    assert proc(server, sid, a, "?wait=0.3").json()["running"] is True
    r = proc(server, sid, a, "/signal", "POST", {"signal": "SIGKILL"})
    assert r.code == 200 and r.json() == {"pid": a, "signal": 9}
    res = proc(server, sid, a, "?wait=30").json()
    assert (res["status"], res["signal"], res["pid"]) == ("killed", 9, a), res
    assert proc(server, sid, b, "/signal", "POST", {"signal": 15}).code == 200
    assert proc(server, sid, b, "?wait=30").json()["signal"] == 15
    listed = server.request("GET", f"/v1/sessions/{sid}/processes").json()["processes"]
    assert {"pid": a, "command": "sleep 100", "running": False} in listed
    server.request("DELETE", f"/v1/sessions/{sid}")


def test_a_second_client_reattaches_by_pid(server):
    sid = open_session(server)
    pid = spawn(server, sid, {"command": "echo one; read go; echo two", "stdin": True})
    path = f"/v1/sessions/{sid}/processes/{pid}/events"
    one, two = Stream(server, "GET", path), Stream(server, "GET", path)
    for st in (one, two):
        events_until(st, lambda g: output(g, "stdout") == b"one\n")
    proc(server, sid, pid, "/stdin", "POST", {"data": "eAo=", "close": True})
    for st in (one, two):
        rest = list(st.events())
        st.close()
        assert output(rest, "stdout") == b"two\n" and rest[-1].data["stdout"] == "one\ntwo\n"
    server.request("DELETE", f"/v1/sessions/{sid}")


def test_another_key_cannot_see_or_touch_it(start, tmp_path):
    keys = tmp_path / "keys.json"
    alice, bob = add_key(keys, "alice"), add_key(keys, "bob")
    s = start(keys=str(keys))
    sid = open_session(s, key=alice)
    pid = spawn(s, sid, {"command": "sleep 100", "stdin": True}, key=alice)
    none = s.request("GET", f"/v1/sessions/{'0' * 32}/processes", key=bob)
    assert none.code == 404
    for method, tail, body in (("GET", "", None), ("GET", f"/{pid}", None),
                               ("GET", f"/{pid}/events", None),
                               ("POST", "", {"command": "true"}),
                               ("POST", f"/{pid}/stdin", {"data": "eA=="}),
                               ("POST", f"/{pid}/signal", {"signal": 9}),
                               ("POST", "", {"pty": {"cols": 80, "rows": 24}}),
                               ("POST", f"/{pid}/resize", {"cols": 10, "rows": 10})):
        r = s.request(method, f"/v1/sessions/{sid}/processes{tail}", body, key=bob)
        assert (r.code, r.body) == (404, none.body), (method, tail)
    assert proc(s, sid, pid, key=alice).json()["running"] is True
    s.request("DELETE", f"/v1/sessions/{sid}", key=alice)


def test_unknown_pids_and_bad_bodies_are_refused_naming_why(server):
    sid = open_session(server)
    for tail in ("", "/events", "?wait=1"):
        r = proc(server, sid, 999999, tail)
        assert r.code == 404 and "no process 999999" in r.json()["error"]["message"], r.body
    for tail, body in (("/stdin", {"close": True}), ("/signal", {"signal": 9})):
        r = proc(server, sid, 999999, tail, "POST", body)
        assert r.code == 404 and "no process 999999" in r.json()["error"]["message"], r.body
    r = proc(server, sid, "abc")
    assert r.code == 404 and "no process abc" in r.json()["error"]["message"]
    assert proc(server, sid, 5, method="DELETE").code == 405
    pid = spawn(server, sid, {"command": "sleep 100", "stdin": True})
    spawns = [({}, "give either a command"),
              ({"command": "true", "stdin": 3}, "stdin: expected true"),
              ({"command": "true", "stdin": "not base64!"}, "stdin: expected base64"),
              ({"command": "pwd", "cwd": ".."}, "cwd: "),
              ({"command": "true", "timeout": -1}, "timeout: expected a positive"),
              ({"command": "true", "wait": 1}, "unknown field 'wait'")]
    for body, words in spawns:
        r = server.request("POST", f"/v1/sessions/{sid}/processes", body)
        assert r.code == 400 and words in r.json()["error"]["message"], (body, r.body)
    for tail, body, words in (("/stdin", {"data": "!!"}, "data: expected base64"),
                              ("/stdin", {}, "give \"data\""),
                              ("/stdin", {"close": 1}, "close: expected true or false"),
                              ("/signal", {"signal": "SIGFOO"}, "signal: expected a name"),
                              ("/signal", {"signal": 65}, "signal: expected a name"),
                              ("/signal", {"sig": 9}, "unknown field 'sig'")):
        r = proc(server, sid, pid, tail, "POST", body)
        assert r.code == 400 and words in r.json()["error"]["message"], (tail, body, r.body)
    r = proc(server, sid, pid, "?wait=61")
    assert r.code == 400 and "wait: expected seconds from 0 to 60" in r.json()["error"]["message"]
    assert proc(server, sid, pid).json()["running"] is True  # nothing of them touched it
    server.request("DELETE", f"/v1/sessions/{sid}")


def test_a_fork_loop_in_the_background_stays_bounded(server):
    sid = open_session(server)
    pid = spawn(server, sid, {"command": "while true; do sleep 1 & done", "timeout": 4})
    res = proc(server, sid, pid, "?wait=60").json()
    assert res["running"] is False and res["status"] in ("error", "timeout"), res
    # The session survives and answers.
    r = server.request("POST", f"/v1/sessions/{sid}/exec", {"command": "echo still"})
    assert r.code == 200 and r.json()["stdout"] == "still\n", r.body
    server.request("DELETE", f"/v1/sessions/{sid}")
