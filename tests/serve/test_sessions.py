"""Sessions over HTTP: state that lasts, files in and out, charts back,
and one key's sessions out of another's reach."""
import base64

from conftest import add_key


def open_session(s, key="default", **body):
    r = s.request("POST", "/v1/sessions", body or None, key=key)
    assert r.code == 201, r.body
    return r.json()["id"]


def test_state_and_files_last_across_calls(server):
    sid = open_session(server)
    base = f"/v1/sessions/{sid}"
    r = server.request("POST", base + "/runs", {"code": "x = 41"})
    assert r.code == 200 and r.json()["status"] == "ok"
    r = server.request("POST", base + "/runs", {"code": "print(x + 1)"})
    assert r.json()["stdout"] == "42\n"
    # A notebook cell: the last value apart, not printed; Python's only.
    r = server.request("POST", base + "/runs", {"code": "x + 1", "value": True})
    assert (r.json()["stdout"], r.json()["value"]) == ("", {"text": "42"})
    assert "value" not in server.request("POST", base + "/runs", {"code": "x + 1"}).json()
    r = server.request("POST", base + "/runs", {"code": "1", "value": "yes"})
    assert r.code == 400 and r.json()["error"]["message"] == "value: expected true or false"
    r = server.request("POST", base + "/runs", {"code": "1", "value": True,
                                                 "language": "javascript"})
    assert r.code == 400 and "Python's only" in r.json()["error"]["message"]
    # A context: a namespace of its own; fresh forgets it.
    r = server.request("POST", base + "/runs", {"code": "x = 1\nx", "value": True,
                                                 "context": "c1"})
    assert r.json()["value"] == {"text": "1"}
    r = server.request("POST", base + "/runs", {"code": "x", "value": True})
    assert r.json()["value"] == {"text": "41"}
    r = server.request("POST", base + "/runs", {"code": "x", "context": "c1", "fresh": True})
    assert r.json()["status"] == "error" and "NameError" in r.json()["stderr"]
    r = server.request("POST", base + "/runs", {"code": "1", "context": "a b"})
    assert r.code == 400 and "context" in r.json()["error"]["message"], r.body
    data = bytes(range(256)) * 4
    r = server.request("PUT", base + "/files/in/data.bin", data, raw=True)
    assert r.code == 201 and r.json() == {"path": "in/data.bin", "bytes": 1024}
    r = server.request("POST", base + "/runs",
                       {"code": "d = open('in/data.bin','rb').read(); print(len(d));"
                                "_ = open('out.txt','w').write(str(sum(d)))"})
    assert r.json()["stdout"] == "1024\n"
    r = server.request("GET", base + "/files/out.txt")
    assert r.code == 200 and r.body == str(sum(data)).encode()
    assert r.headers["Content-Type"] == "application/octet-stream"
    r = server.request("GET", base + "/files/in/data.bin")
    assert r.body == data
    r = server.request("GET", base + "/files")
    names = {e["name"]: e for e in r.json()["entries"]}
    assert names["out.txt"]["type"] == "file" and names["in"]["type"] == "directory"
    r = server.request("GET", base + "/files?dir=in")
    assert [e["name"] for e in r.json()["entries"]] == ["data.bin"]
    assert server.request("DELETE", base).code == 204
    assert server.request("POST", base + "/runs", {"code": "print(x)"}).code == 404


def test_file_errors_are_the_callers(server):
    sid = open_session(server)
    base = f"/v1/sessions/{sid}"
    r = server.request("GET", base + "/files/missing.txt")
    assert r.code == 404 and "missing.txt" in r.json()["error"]["message"]
    r = server.request("GET", base + "/files/a/%2E%2E/%2E%2E/etc/passwd")
    assert r.code == 400 and "'..' is not allowed" in r.json()["error"]["message"]
    r = server.request("PUT", base + "/files/%2Fetc%2Fx", b"x", raw=True)
    assert r.code == 400
    server.request("POST", base + "/runs",
                   {"code": "import os; os.symlink('/etc/shadow', 'link')"})
    r = server.request("GET", base + "/files/link")
    assert r.code == 400
    r = server.request("POST", base + "/files/x", b"x", raw=True)
    assert r.code == 405
    server.request("DELETE", base)


def test_charts_come_back_as_images(server):
    sid = open_session(server)
    r = server.request("POST", f"/v1/sessions/{sid}/runs", {
        "code": "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
                "plt.plot([1, 2, 3])\n"})
    res = r.json()
    assert res["status"] == "ok", res
    assert len(res["images"]) == 1
    img = res["images"][0]
    assert img["mime"] == "image/png"
    assert base64.b64decode(img["data"])[:8] == b"\x89PNG\r\n\x1a\n"
    server.request("DELETE", f"/v1/sessions/{sid}")


def test_sessions_belong_to_their_key(start, tmp_path):
    keys = tmp_path / "keys.json"
    alice = add_key(keys, "alice", "--sessions", "2")
    bob = add_key(keys, "bob")
    s = start(keys=str(keys))
    sid = open_session(s, key=alice)
    base = f"/v1/sessions/{sid}"
    s.request("POST", base + "/runs", {"code": "secret = 'alice-only'"}, key=alice)
    # Bob cannot run in it, read it, list it or close it: it does not exist for him.
    assert s.request("POST", base + "/runs", {"code": "print(secret)"}, key=bob).code == 404
    assert s.request("GET", base + "/files", key=bob).code == 404
    assert s.request("DELETE", base, key=bob).code == 404
    r = s.request("POST", base + "/runs", {"code": "print(secret)"}, key=alice)
    assert r.json()["stdout"] == "alice-only\n"
    # Alice's limit is two open sessions.
    second = open_session(s, key=alice)
    r = s.request("POST", "/v1/sessions", None, key=alice)
    assert r.code == 429 and "its limit" in r.json()["error"]["message"]
    assert r.headers["Retry-After"]
    assert s.request("DELETE", f"/v1/sessions/{second}", key=alice).code == 204
    third = open_session(s, key=alice)
    for x in (sid, third):
        s.request("DELETE", f"/v1/sessions/{x}", key=alice)


def test_an_idle_session_closes_and_says_why(start):
    s = start("--session-idle", "1")
    sid = open_session(s)
    import time
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        r = s.request("POST", f"/v1/sessions/{sid}/runs", {"code": "print(1)"})
        if r.code == 410:
            break
        time.sleep(1.5)
    assert r.code == 410
    assert "idle" in r.json()["error"]["message"]


def test_session_limits_narrow_like_runs(server):
    r = server.request("POST", "/v1/sessions", {"limits": {"memory_mb": 1 << 20}})
    assert r.code == 400 and "limits.memory_mb" in r.json()["error"]["message"]
    r = server.request("POST", "/v1/sessions", {"limits": {"timeout_sec": 1}})
    assert r.code == 201 and r.json()["limits"]["timeout_sec"] == 1
    sid = r.json()["id"]
    r = server.request("POST", f"/v1/sessions/{sid}/runs",
                       {"code": "import time; time.sleep(3)"})
    assert r.json()["status"] == "timeout"
    server.request("DELETE", f"/v1/sessions/{sid}")


def test_a_call_takes_its_own_shorter_timeout_never_a_longer_one(server):
    from conftest import Stream
    sid = open_session(server)
    base = f"/v1/sessions/{sid}"
    assert server.request("POST", base + "/runs", {"code": "x = 1"}).json()["status"] == "ok"
    r = server.request("POST", base + "/runs", {"code": "import time; time.sleep(30)",
                                                "limits": {"timeout_sec": 0.5}})
    assert r.code == 200
    res = r.json()
    assert res["status"] == "timeout", res
    assert res["message"].startswith("the call's timeout of 0.5 s passed; the run was stopped")
    # The session goes on (its files kept); a call without limits has the
    # session's clock.
    r = server.request("POST", base + "/runs", {"code": "print('after')"})
    assert r.json()["stdout"] == "after\n"
    # Never past the session's (5 s here), and nothing but the wall clock.
    for limits, words in [({"timeout_sec": 6}, "limits.timeout_sec: 6 is more than this "
                                               "session allows (5)"),
                          ({"cpu_sec": 1}, "limits.cpu_sec: a session call takes only "
                                           "timeout_sec"),
                          ({"timeout_sec": "1"}, "limits.timeout_sec: expected a positive"),
                          ([1], "limits: expected an object")]:
        r = server.request("POST", base + "/runs", {"code": "print(1)", "limits": limits})
        assert r.code == 400, (limits, r.body)
        assert r.json()["error"]["code"] == "bad_limits"
        assert words in r.json()["error"]["message"], r.json()
    # The same limit on a streamed call.
    st = Stream(server, "POST", base + "/runs", {"code": "import time; time.sleep(30)",
                                                 "limits": {"timeout_sec": 0.5}})
    events = list(st.events())
    st.close()
    assert events[-1].event == "result" and events[-1].data["status"] == "timeout"
    assert server.request("DELETE", base).code == 204


def test_pause_resume_and_fork(start, tmp_path):
    """POST .../pause frees the sandbox and keeps the state, which the next
    call (or .../resume) brings back; .../fork makes copies, each a session
    of the key's, independent; a fork past the key's sessions makes none."""
    keys = tmp_path / "keys.json"
    alice = add_key(keys, "alice", "--sessions", "3")
    bob = add_key(keys, "bob")
    s = start(keys=str(keys))
    sid = open_session(s, key=alice)
    base = f"/v1/sessions/{sid}"
    r = s.request("POST", base + "/runs", {"code": "x = [1]\ndef f(): return sum(x)"},
                  key=alice)
    assert r.json()["status"] == "ok"
    r = s.request("POST", base + "/pause", None, key=alice)
    assert r.code == 200 and r.json()["paused"] is True and r.json()["note"] == "", r.body
    assert s.request("POST", base + "/pause", None, key=alice).code == 409
    assert s.request("POST", base + "/pause", None, key=bob).code == 404
    r = s.request("POST", base + "/runs", {"code": "x.append(2)\nprint(f())"}, key=alice)
    assert r.json()["stdout"] == "3\n", r.body
    assert s.request("POST", base + "/pause", None, key=alice).code == 200
    r = s.request("POST", base + "/resume", None, key=alice)
    assert r.code == 200 and r.json() == {"paused": False, "resumed": True}
    r = s.request("POST", base + "/fork", {"count": 2}, key=alice)
    assert r.code == 201, r.body
    copies = r.json()["sessions"]
    assert len(copies) == 2 and sid not in copies
    for i, c in enumerate(copies):
        r = s.request("POST", f"/v1/sessions/{c}/runs", {"code": f"x.append({i})\nprint(x)"},
                      key=alice)
        assert r.json()["stdout"] == f"[1, 2, {i}]\n"
        assert s.request("GET", f"/v1/sessions/{c}/files", key=bob).code == 404
    r = s.request("POST", base + "/runs", {"code": "print(x)"}, key=alice)
    assert r.json()["stdout"] == "[1, 2]\n"
    # Three open: one more copy would pass alice's limit, and none is made.
    r = s.request("POST", base + "/fork", {"count": 1}, key=alice)
    assert r.code == 429 and "do not fit" in r.json()["error"]["message"]
    for bad in ({"count": 0}, {"count": "2"}, {"count": 101}, {"copies": 1}):
        assert s.request("POST", base + "/fork", bad, key=alice).code == 400
    assert s.request("GET", base + "/pause", key=alice).code == 405
    for x in [sid] + copies:
        assert s.request("DELETE", f"/v1/sessions/{x}", key=alice).code == 204


def test_an_idle_session_is_paused_with_idle_pause(start):
    """--idle pause: the idle timeout pauses the session instead of closing
    it; its next call resumes it as it was and says so."""
    s = start("--session-idle", "1", "--idle", "pause")
    sid = open_session(s)
    base = f"/v1/sessions/{sid}"
    assert s.request("POST", base + "/runs", {"code": "kept = 41"}).json()["status"] == "ok"
    import time
    deadline, wait = time.monotonic() + 60, 2.5
    while time.monotonic() < deadline:
        time.sleep(wait)  # no call: idle past 1 s, and the reaper's second
        r = s.request("POST", base + "/runs", {"code": "print(kept + 1)"})
        assert r.code == 200 and r.json()["stdout"] == "42\n", r.body
        if "paused while idle and resumed" in (r.json().get("message") or ""):
            break
        wait *= 2  # a busy machine: the reaper had not come yet
    assert "paused while idle and resumed" in r.json()["message"]
    assert s.request("DELETE", base).code == 204
