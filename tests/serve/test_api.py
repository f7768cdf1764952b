"""The JSON API's contract: routes, auth, runs, narrowed limits, bad input,
sessions and their files, tiers and metrics."""
import base64
import json
import os
import subprocess

from conftest import AGENTJAIL

CONTRACT_KEYS = ["tier", "status", "exit_code", "signal", "stdout", "stderr",
                 "stdout_truncated", "stderr_truncated", "wall_ms", "cpu_ms", "memory_kb",
                 "message"]


def test_health_needs_no_key(server):
    r = server.request("GET", "/v1/health", key=None)
    assert r.code == 200
    assert r.json()["status"] == "ok" and r.json()["tier"] == "process"


def test_missing_or_wrong_key_is_401_and_runs_nothing(server):
    before = server.metrics()
    for key in (None, "aj_" + "A" * 43, server.key[:-1], server.key + "x", ""):
        r = server.request("POST", "/v1/runs", {"code": "open('/tmp/x','w')"}, key=key)
        assert r.code == 401, key
        assert r.headers["WWW-Authenticate"].startswith("Bearer")
        assert r.json()["error"]["code"] == "unauthorized"
    r = server.request("GET", "/metrics", key=None)
    assert r.code == 401
    after = server.metrics()
    ok = 'agentjail_runs_total{tier="process",status="ok"}'
    assert after[ok] == before[ok]
    assert after["agentjail_auth_failures_total"] >= before["agentjail_auth_failures_total"] + 6
    # A scheme other than Bearer is no key either.
    r = server.request("GET", "/v1/tiers", key=None,
                       headers={"Authorization": "Basic " + base64.b64encode(b"a:b").decode()})
    assert r.code == 401


def test_run_answers_the_cli_contract(server):
    r = server.run("import sys; print(6*7); print('warn', file=sys.stderr)")
    assert r.code == 200
    assert r.headers["Content-Type"] == "application/json"
    assert r.headers["Cache-Control"] == "no-store"
    res = r.json()
    # The CLI's object, and the run's id (the one thing serve adds).
    assert list(res) == CONTRACT_KEYS + ["run_id"]
    assert res["status"] == "ok" and res["exit_code"] == 0
    assert res["stdout"] == "42\n" and res["stderr"] == "warn\n"
    assert res["tier"] == "process"
    # The same program through the CLI gives the same keys.
    cli = subprocess.run([AGENTJAIL, "run", "--json", "-"], input="print(1)",
                         capture_output=True, text=True)
    assert list(json.loads(cli.stdout)) == CONTRACT_KEYS


def test_a_failing_program_is_an_answer_not_an_http_error(server):
    r = server.run("raise SystemExit(3)")
    assert r.code == 200
    assert r.json()["status"] == "error" and r.json()["exit_code"] == 3
    r = server.run("1/0")
    assert r.code == 200 and "ZeroDivisionError" in r.json()["stderr"]


def test_limits_may_only_narrow(server):
    r = server.run("import time; time.sleep(3)", timeout_sec=0.5)
    assert r.code == 200 and r.json()["status"] == "timeout"
    r = server.run("x = bytearray(200 * 2**20)", memory_mb=64)
    assert r.json()["status"] == "memory", r.json()
    r = server.run("print(1)", timeout_sec=60)
    assert r.code == 400
    assert "limits.timeout_sec: 60 is more than this server allows (5)" in r.json()["error"]["message"]
    r = server.run("print(1)", memory_mb=100000)
    assert r.code == 400 and "limits.memory_mb" in r.json()["error"]["message"]
    r = server.run("print(1)", cores=4)
    assert r.code == 400 and "limits.cores: unknown" in r.json()["error"]["message"]
    r = server.run("print(1)", pids=0)
    assert r.code == 400 and "limits.pids" in r.json()["error"]["message"]
    r = server.run("print(1)", timeout_sec="1")
    assert r.code == 400


def test_bad_requests_name_the_problem(server):
    cases = [
        (b"not json", "bad_json"),
        (b"[1]", "bad_request"),
        (b"{}", "bad_request"),
        (b'{"code": 5}', "bad_request"),
        (b'{"code": "print(1)", "tier": "docker"}', "bad_request"),
        (b'{"code": "print(1)", "code": "print(2)"}', "bad_json"),
        (b'{"code": "print(1)\\u0000"}', "bad_request"),
    ]
    for body, code in cases:
        r = server.request("POST", "/v1/runs", body, raw=True,
                           headers={"Content-Type": "application/json"})
        assert r.code == 400, body
        assert r.json()["error"]["code"] == code, (body, r.json())
    r = server.request("POST", "/v1/runs", b'{"code": "print(1)\\u0000"}', raw=True)
    assert "NUL byte at offset 8" in r.json()["error"]["message"]
    r = server.request("POST", "/v1/runs", {"code": "print(1)", "tier": "docker"})
    assert "unknown field 'tier'" in r.json()["error"]["message"]


def test_routes_and_methods(server):
    r = server.request("PUT", "/v1/runs", {})
    assert r.code == 405 and r.headers["Allow"] == "GET, POST"
    r = server.request("DELETE", "/v1/health")
    assert r.code == 405 and r.headers["Allow"] == "GET"
    assert server.request("GET", "/v1/nope").code == 404
    assert server.request("GET", "/").code == 404
    assert server.request("POST", "/v1/sessions/0123/nope", {}).code == 404


def test_body_over_the_cap_is_413(start):
    s = start("--max-body-kb", "4")
    r = s.request("POST", "/v1/runs", {"code": "#" * 8000})
    assert r.code == 413 and r.json()["error"]["code"] == "too_large"
    r = s.run("print('small')")
    assert r.code == 200 and r.json()["stdout"] == "small\n"


def test_tiers_say_what_check_says(server):
    r = server.request("GET", "/v1/tiers")
    assert r.code == 200
    body = r.json()
    assert body["serving"] == "process"
    assert [t["tier"] for t in body["tiers"]] == ["process", "container", "microvm", "docker", "gvisor"]
    process = body["tiers"][0]
    assert process["available"] is True and process["reason"] is None
    for t in body["tiers"]:
        assert t["available"] or t["reason"]
    assert body["limits"]["timeout_sec"] == 5


def test_metrics_count_runs_and_answers(server):
    before = server.metrics()
    server.run("print(1)")
    server.run("raise SystemExit(1)")
    after = server.metrics()
    ok = 'agentjail_runs_total{tier="process",status="ok"}'
    err = 'agentjail_runs_total{tier="process",status="error"}'
    assert after[ok] == before[ok] + 1
    assert after[err] == before.get(err, 0) + 1
    assert after["agentjail_run_seconds_count"] == before["agentjail_run_seconds_count"] + 2
    assert after['agentjail_run_seconds_bucket{le="+Inf"}'] == after["agentjail_run_seconds_count"]
    assert after["agentjail_queue_depth"] == 0 and after["agentjail_runs_running"] == 0
    text = server.request("GET", "/metrics").body.decode()
    assert "# TYPE agentjail_run_seconds histogram" in text
    assert server.request("GET", "/metrics").headers["Content-Type"].startswith("text/plain")


def test_the_servers_secrets_do_not_reach_a_run(start):
    env = dict(os.environ, OPENAI_API_KEY="sk-serve-secret-123")
    s = start(env=env)
    r = s.run("import os; print(sorted(os.environ)); print(open('/proc/1/environ').read()"
              " if os.path.exists('/proc/1/environ') else '')")
    assert "sk-serve-secret-123" not in r.body.decode()
    assert "OPENAI_API_KEY" not in r.body.decode()
    r = s.run("import socket; socket.create_connection(('127.0.0.1', %d), 1)"
              % int(s.url.rsplit(":", 1)[1]))
    assert r.json()["status"] == "error"
    assert "Error" in r.json()["stderr"]


def test_a_silent_client_is_cut_off(start):
    import socket
    import time
    s = start("--idle-timeout", "1")
    port = int(s.url.rsplit(":", 1)[1])
    c = socket.create_connection(("127.0.0.1", port), 5)
    c.sendall(b"POST /v1/runs HTTP/1.1\r\nHost: x\r\n")  # and then nothing
    c.settimeout(20)
    t0 = time.monotonic()
    try:
        data = c.recv(1024)
    except ConnectionResetError:
        data = b""
    # Closed by the server (no answer, or a 408), long before our own 20 s.
    assert data == b"" or data.startswith(b"HTTP/1.1 408")
    assert time.monotonic() - t0 < 19
    c.close()
    assert s.run("print('others are served')").json()["stdout"] == "others are served\n"


def test_warm_mode_serves_runs(start):
    """serve --warm: runs are forks of a zygote (their command line says
    so), each with its own files, and narrowed limits get a zygote of their
    own."""
    s = start("--warm", "--preload", "json", "--timeout", "5")
    code = ("import os, sys\n"
            "print(b'agentjail zygote' in open('/proc/self/cmdline', 'rb').read(),\n"
            "      'json' in sys.modules, os.path.exists('/tmp/left'))\n"
            "open('/tmp/left', 'w').write('x')\n")
    for _ in range(3):
        r = s.run(code)
        assert r.code == 200, r.body
        assert r.json()["status"] == "ok", r.json()
        assert r.json()["stdout"] == "True True False\n"
    r = s.run(code, timeout_sec=2)
    assert r.code == 200, r.body
    assert r.json()["stdout"] == "True True False\n"
    assert s.stop() == 0
