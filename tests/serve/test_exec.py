"""Commands in a session over HTTP (POST /v1/sessions/ID/exec, issue 36):
answered as a session's run is (the same result object, key ownership,
admission, SSE), every bad field a 400 that names it, and stdin as large
as the session's transfer limit even where JSON bodies are capped small."""
import base64

from conftest import Stream, add_key


def open_session(s, key="default", **body):
    r = s.request("POST", "/v1/sessions", body or None, key=key)
    assert r.code == 201, r.body
    return r.json()["id"]


def execute(s, sid, body, key="default", **kw):
    return s.request("POST", f"/v1/sessions/{sid}/exec", body, key=key, **kw)


def test_a_command_answers_as_a_run_does(server):
    sid = open_session(server)
    r = execute(server, sid, {"command": "echo out; echo err >&2; exit 3"})
    assert r.code == 200, r.body
    res = r.json()
    assert (res["status"], res["exit_code"], res["stdout"], res["stderr"]) == \
        ("error", 3, "out\n", "err\n")
    # The run's contract object, keys and all, with its run id.
    run = server.request("POST", f"/v1/sessions/{sid}/runs", {"code": "print(1)"}).json()
    assert set(res) == set(run) and len(res["run_id"]) == 32
    # The session's workspace, shared with its Python: a file one writes
    # the other reads; cwd a directory inside it.
    server.request("POST", f"/v1/sessions/{sid}/runs",
                   {"code": "import os; os.makedirs('sub'); open('sub/f.txt', 'w').write('hi')"})
    r = execute(server, sid, {"argv": ["cat", "f.txt"], "cwd": "sub"})
    assert (r.json()["status"], r.json()["stdout"]) == ("ok", "hi"), r.body
    r = execute(server, sid, {"argv": ["sh", "-c", 'pwd; echo "$GREETING"'],
                              "env": {"GREETING": "hello there"}})
    assert r.json()["stdout"] == "/tmp/work\nhello there\n", r.body
    data = bytes(range(256)) * 64
    r = execute(server, sid, {"command": "wc -c; echo", "stdin": base64.b64encode(data).decode()})
    assert r.json()["stdout"].split() == [str(len(data))], r.body
    r = execute(server, sid, {"command": "cat"})
    assert (r.json()["status"], r.json()["stdout"]) == ("ok", "")  # no stdin: /dev/null
    assert server.request("DELETE", f"/v1/sessions/{sid}").code == 204


def test_a_commands_own_timeout_keeps_the_session(server):
    sid = open_session(server)
    server.request("POST", f"/v1/sessions/{sid}/runs", {"code": "kept = 'still here'"})
    r = execute(server, sid, {"command": "sleep 30", "timeout": 0.5})
    assert r.code == 200
    res = r.json()
    assert res["status"] == "timeout" and "0.5 s" in res["message"], res
    r = server.request("POST", f"/v1/sessions/{sid}/runs", {"code": "print(kept)"})
    assert r.json()["stdout"] == "still here\n", r.body
    server.request("DELETE", f"/v1/sessions/{sid}")


def test_bad_commands_are_refused_naming_the_field(server):
    sid = open_session(server)
    cases = [
        ({"command": "pwd", "cwd": ".."}, "bad_request", "cwd: "),
        ({"command": "pwd", "cwd": "/etc"}, "bad_request", "cwd: "),
        ({"command": "true", "env": {"LD_PRELOAD": "/tmp/work/x.so"}}, "bad_env", "LD_PRELOAD"),
        ({"command": "true", "env": {"https_proxy": "http://10.0.0.1:1"}}, "bad_env",
         "https_proxy"),
        ({"command": "true", "env": ["X=1"]}, "bad_env", "env: must be an object"),
        ({"command": "true", "timeout": 6}, "bad_request", "timeout: 6 s is not within"),
        ({"command": "true", "timeout": 0}, "bad_request", "timeout: expected a positive"),
        ({"command": "true", "timeout": "1"}, "bad_request", "timeout: expected a positive"),
        ({}, "bad_request", "give either a command"),
        ({"command": "true", "argv": ["true"]}, "bad_request", "not both"),
        ({"command": 3}, "bad_request", "command: expected a string"),
        ({"command": "echo\u0000x"}, "bad_request", "command: holds a NUL byte"),
        ({"argv": "ls"}, "bad_request", "argv: expected an array of strings"),
        ({"argv": ["ls", 1]}, "bad_request", "argv[1]: expected a string"),
        ({"argv": []}, "bad_request", "argv has no program"),
        ({"command": "cat", "stdin": "not base64!"}, "bad_request", "stdin: expected base64"),
        ({"command": "true", "code": "print(1)"}, "bad_request", "unknown field 'code'"),
    ]
    for body, code, words in cases:
        r = execute(server, sid, body)
        assert r.code == 400, (body, r.body)
        assert r.json()["error"]["code"] == code, (body, r.body)
        assert words in r.json()["error"]["message"], (body, r.json())
    # Nothing of them ran: the session is as it was.
    assert execute(server, sid, {"command": "echo fine"}).json()["stdout"] == "fine\n"
    server.request("DELETE", f"/v1/sessions/{sid}")


def test_another_keys_session_is_not_there(start, tmp_path):
    keys = tmp_path / "keys.json"
    alice = add_key(keys, "alice")
    bob = add_key(keys, "bob")
    s = start(keys=str(keys))
    sid = open_session(s, key=alice)
    r = execute(s, sid, {"command": "echo secret > s.txt"}, key=alice)
    assert r.json()["status"] == "ok"
    # Bob's call is the answer for no session at all, whatever it carries.
    none = execute(s, "0" * 32, {"command": "cat s.txt"}, key=bob)
    for body in ({"command": "cat s.txt"}, {"argv": ["cat", "s.txt"], "stdin": "AAAA"}):
        r = execute(s, sid, body, key=bob)
        assert (r.code, r.body) == (404, none.body)
    assert execute(s, sid, {"command": "cat s.txt"}, key=alice).json()["stdout"] == "secret\n"
    s.request("DELETE", f"/v1/sessions/{sid}", key=alice)


def test_stdin_may_be_a_transfers_worth_whatever_the_json_cap(start):
    s = start("--max-body-kb", "64", "--transfer-mb", "1")
    sid = open_session(s)
    data = b"a" * (1 << 20)
    b64 = base64.b64encode(data).decode()
    # Code is held to the JSON cap ...
    r = s.request("POST", f"/v1/sessions/{sid}/runs", {"code": "#" + b64})
    assert r.code == 413, r.body
    # ... a command's stdin to the transfer limit, base64 and all.
    r = execute(s, sid, {"command": "wc -c", "stdin": b64})
    assert r.code == 200 and r.json()["stdout"].strip() == str(len(data)), r.body
    r = execute(s, sid, {"command": "wc -c", "stdin": base64.b64encode(data + b"a").decode()})
    assert r.code == 413 and r.json()["error"]["code"] == "too_large", r.body
    assert "stdin" in r.json()["error"]["message"]
    s.request("DELETE", f"/v1/sessions/{sid}")


def test_a_commands_output_streams_and_is_recorded(server):
    sid = open_session(server)
    st = Stream(server, "POST", f"/v1/sessions/{sid}/exec",
                {"command": "echo one; sleep 1; echo two >&2; exit 4"})
    got, run_id = list(st.events()), st.headers["X-Run-Id"]
    st.close()
    assert st.status == 200
    out = b"".join(e.bytes() for e in got if e.event == "stdout")
    err = b"".join(e.bytes() for e in got if e.event == "stderr")
    assert (out, err) == (b"one\n", b"two\n"), [(e.event, e.data) for e in got]
    assert got[-1].event == "result"
    assert (got[-1].data["status"], got[-1].data["exit_code"]) == ("error", 4)
    info = server.request("GET", f"/v1/runs/{run_id}").json()
    assert info["session"] is True and info["session_id"] == sid
    # A refusal comes before any stream: a 400, not an event.
    st = Stream(server, "POST", f"/v1/sessions/{sid}/exec", {"command": "pwd", "cwd": "/"})
    assert st.status == 400 and b"cwd" in st.body()
    st.close()
    assert server.request("DELETE", f"/v1/sessions/{sid}").code == 204
