"""A run's language over HTTP (docs/serve.md, "Languages"; issue 36): the
"language" field of POST /v1/runs and of a session's runs, plain, streamed
and background, on this machine and through a queue's worker; an unknown
or malformed one is a 400 naming the accepted names."""
import os
import re
import subprocess

import pytest

from conftest import Stream, wait_for
from test_queue import redis, workers, serve  # noqa: F401 (fixtures)

# The library's own list (include/agentjail.h), read as the server has it.
NAMES = re.search(r'#define AJ_LANGUAGE_NAMES "([^"]*)"',
                  open(os.path.join(os.path.dirname(__file__), "..", "..", "include",
                                    "agentjail.h")).read()).group(1)


def test_a_javascript_run(server):
    r = server.request("POST", "/v1/runs", {"code": "console.log(6*7)", "language": "javascript"})
    assert r.code == 200, r.body
    assert r.json()["status"] == "ok" and r.json()["stdout"] == "42\n"
    # "js" is the same language; Python stays the default.
    r = server.request("POST", "/v1/runs", {"code": "console.log(typeof process)",
                                            "language": "js"})
    assert r.json()["stdout"] == "object\n"
    assert server.run("print(6*7)").json()["stdout"] == "42\n"


def test_a_bash_run(server):
    r = server.request("POST", "/v1/runs", {"code": "echo $((6*7)); [[ -n x ]] && echo bash",
                                            "language": "bash"})
    assert r.code == 200, r.body
    assert r.json()["stdout"] == "42\nbash\n"


def test_a_session_keeps_javascript_and_python_state_side_by_side(server):
    sid = server.request("POST", "/v1/sessions").json()["id"]
    runs = f"/v1/sessions/{sid}/runs"
    try:
        r = server.request("POST", runs, {"code": "let n = 40", "language": "javascript"})
        assert r.code == 200 and r.json()["status"] == "ok", r.body
        r = server.request("POST", runs, {"code": "n = 'python'"})
        assert r.json()["status"] == "ok"
        r = server.request("POST", runs, {"code": "console.log(n + 2)", "language": "js"})
        assert r.json()["stdout"] == "42\n", r.body
        assert server.request("POST", runs, {"code": "print(n)"}).json()["stdout"] == "python\n"
    finally:
        server.request("DELETE", f"/v1/sessions/{sid}")


def test_a_streamed_javascript_run(server):
    s = Stream(server, "POST", "/v1/runs", {"code": "console.log('a'); console.log(6*7)",
                                            "language": "javascript"})
    assert s.status == 200
    got = list(s.events())
    s.close()
    out = b"".join(e.bytes() for e in got if e.event == "stdout")
    assert out == b"a\n42\n"
    assert got[-1].event == "result" and got[-1].data["status"] == "ok"


def background_result(srv, body):
    """body run in the background on srv: its result once done."""
    r = srv.request("POST", "/v1/runs", {**body, "background": True})
    assert r.code == 202, r.body
    rid = r.json()["id"]
    assert wait_for(lambda: srv.request("GET", f"/v1/runs/{rid}").json()["state"] == "done",
                    timeout=60)
    return srv.request("GET", f"/v1/runs/{rid}").json()["result"]


def test_a_background_javascript_run(server):
    res = background_result(server, {"code": "console.log(6*7)", "language": "javascript"})
    assert res["status"] == "ok" and res["stdout"] == "42\n"


@pytest.mark.parametrize("path", ["/v1/runs", "session"])
@pytest.mark.parametrize("language, word", [
    ("cobol", f"language: 'cobol' is not one of {NAMES}"),
    (7, f"language: expected a string, one of {NAMES}"),
    (None, f"language: expected a string, one of {NAMES}"),
])
def test_a_bad_language_is_a_400_naming_the_accepted_ones(server, path, language, word):
    sid = None
    if path == "session":
        sid = server.request("POST", "/v1/sessions").json()["id"]
        path = f"/v1/sessions/{sid}/runs"
    try:
        r = server.request("POST", path, {"code": "print(1)", "language": language})
        assert r.code == 400, r.body
        err = r.json()["error"]
        assert err["code"] == "bad_language" and err["message"] == word
    finally:
        if sid:
            server.request("DELETE", f"/v1/sessions/{sid}")


def test_the_queue_runs_javascript_on_a_worker(start, redis, workers):  # noqa: F811
    w = workers("w-js")
    s = serve(start, redis)
    # What crosses Redis: a worker older than languages knows only the ops
    # "run" and "session_run", so another language must come under an op
    # it refuses, never under one it would run as Python.
    monitor = subprocess.Popen(["redis-cli", "-p", str(redis.port), "MONITOR"],
                               stdout=subprocess.PIPE, text=True)
    try:
        assert monitor.stdout.readline().strip() == "OK"
        r = s.request("POST", "/v1/runs", {"code": "console.log(6*7)", "language": "javascript"})
        assert r.code == 200, r.body
        assert r.json()["stdout"] == "42\n"
        sent = ""
        while '"XADD"' not in sent:
            sent = monitor.stdout.readline()
            assert sent, "no XADD seen"
    finally:
        monitor.terminate()  # by its pid: the process this test started
        monitor.wait(10)
    assert '\\"op\\":\\"run_language\\"' in sent.replace(" ", ""), sent
    assert '\\"language\\":\\"javascript\\"' in sent.replace(" ", ""), sent
    assert wait_for(lambda: any(": run: javascript, ok" in line for line in w.log))
    # A background run travels the same way.
    assert background_result(s, {"code": "echo $((6*7))", "language": "bash"})["stdout"] == "42\n"
    # And a session's calls, on the worker that holds it.
    sid = s.request("POST", "/v1/sessions").json()["id"]
    runs = f"/v1/sessions/{sid}/runs"
    assert s.request("POST", runs, {"code": "let n = 41", "language": "js"}).code == 200
    assert s.request("POST", runs, {"code": "n = 1"}).json()["status"] == "ok"
    r = s.request("POST", runs, {"code": "console.log(n + 1)", "language": "js"})
    assert r.json()["stdout"] == "42\n", r.body
    assert s.request("POST", runs, {"code": "print(n)"}).json()["stdout"] == "1\n"
    assert s.request("DELETE", f"/v1/sessions/{sid}").code == 204
