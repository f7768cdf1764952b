"""serve's access log: one JSON line per request and per recorded run, on
stderr unless --access-log says otherwise, naming the key by its name and
the route by its shape, never the key, the body or the output."""
import json

from conftest import wait_for

SECRET_CODE = "print('s3cr3t-' + 'output')"


def lines(text_lines):
    out = []
    for line in text_lines:
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


def requests(log):
    return [x for x in log if x["event"] == "request"]


def test_each_request_and_recorded_run_is_one_line_on_stderr(start):
    s = start("--timeout", "10")
    assert s.request("GET", "/v1/health", key=None).code == 200
    r = s.run(SECRET_CODE)
    run_id = r.json()["run_id"]
    assert s.request("GET", "/v1/tiers", key="aj_wrong").code == 401
    bg = s.request("POST", "/v1/runs", {"code": "print(1)", "background": True}).json()["id"]
    assert wait_for(lambda: s.request("GET", f"/v1/runs/{bg}").json()["state"] == "done")
    sid = s.request("POST", "/v1/sessions").json()["id"]
    assert s.request("POST", f"/v1/sessions/{sid}/runs", {"code": "x = 1"}).code == 200
    assert s.request("DELETE", f"/v1/sessions/{sid}").code == 204

    # A request's line is written when serve finishes with it, which can be
    # after the client has its answer: wait for the last request's own line
    # (the DELETE), not for a count that repeated polls can reach first.
    def logged():
        log = lines(s.stderr)
        return [x for x in log if x["event"] == "run" and x["run_id"] == bg] and \
            [x for x in requests(log) if x["method"] == "DELETE" and x["status"] == 204]
    assert wait_for(logged)
    log = lines(s.stderr)
    for x in log:
        assert isinstance(x["ts"], float)
    reqs = requests(log)
    health = [x for x in reqs if x["route"] == "/v1/health"][0]
    assert health["key"] is None and health["status"] == 200 and health["method"] == "GET"
    run = [x for x in reqs if x.get("run_id") == run_id][0]
    assert run["key"] == "default" and run["route"] == "/v1/runs" and run["status"] == 200
    assert run["tier"] == "process" and run["verdict"] == "ok" and run["ms"] >= 0
    refused = [x for x in reqs if x["status"] == 401][0]
    assert refused["key"] is None and refused["route"] == "/v1/tiers"
    started = [x for x in reqs if x.get("run_id") == bg][0]
    assert started["status"] == 202
    ended = [x for x in log if x["event"] == "run" and x["run_id"] == bg][0]
    assert ended == {**ended, "key": "default", "route": "/v1/runs", "tier": "process",
                     "verdict": "ok"}
    # Ids in paths are left out: the route's shape only.
    routes = {x["route"] for x in reqs}
    assert "/v1/runs/{id}" in routes and "/v1/sessions/{id}/runs" in routes
    assert "/v1/sessions/{id}" in routes and not any(sid in r for r in routes)
    # Never the key, the code or what it printed.
    text = "".join(s.stderr)
    assert s.key not in text and "s3cr3t" not in text


def test_to_a_file_or_off(start, tmp_path):
    path = tmp_path / "access.log"
    s = start("--timeout", "10", "--access-log", str(path))
    assert s.run("print(1)").code == 200
    assert wait_for(lambda: path.exists() and path.read_text().count("\n") >= 1)
    got = lines(path.read_text().splitlines())
    assert [x["route"] for x in got] == ["/v1/runs"]
    assert not lines(s.stderr)
    quiet = start("--timeout", "10", "--access-log", "off")
    assert quiet.run("print(1)").code == 200
    assert quiet.request("GET", "/v1/health", key=None).code == 200
    assert not lines(quiet.stderr)


def test_a_log_file_that_cannot_be_opened_stops_serve(start, tmp_path):
    import subprocess
    from conftest import AGENTJAIL
    r = subprocess.run([AGENTJAIL, "serve", "--listen", "127.0.0.1:0", "--access-log",
                        str(tmp_path / "no" / "such" / "dir" / "log")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--access-log" in r.stderr and "No such file" in r.stderr


def test_commands_and_e2b_routes_are_logged_by_shape(start):
    s = start("--timeout", "10")
    sid = s.request("POST", "/v1/sessions").json()["id"]
    assert s.request("POST", f"/v1/sessions/{sid}/exec", {"command": "true"}).code == 200
    pid = s.request("POST", f"/v1/sessions/{sid}/processes", {"command": "true"}).json()["pid"]
    assert s.request("GET", f"/v1/sessions/{sid}/processes/{pid}?wait=30").code == 200
    # The E2B-compatible API's control plane, its key in X-API-KEY.
    sbx = s.request("POST", "/sandboxes", {"templateID": "base"}, key=None,
                    headers={"X-API-KEY": s.key})
    assert sbx.code == 201
    e2b_id = sbx.json()["sandboxID"]
    x2b = {"X-API-KEY": s.key}
    snap = s.request("POST", f"/sandboxes/{e2b_id}/snapshots", {}, key=None, headers=x2b)
    assert snap.code == 201, snap.body
    snap_id = snap.json()["snapshotID"]
    assert s.request("GET", "/snapshots", key=None, headers=x2b).code == 200
    assert s.request("DELETE", f"/templates/{snap_id}", key=None, headers=x2b).code == 204
    assert s.request("DELETE", f"/sandboxes/{e2b_id}", key=None, headers=x2b).code == 204
    # Checkpoints, pause, resume and fork.
    ck = s.request("POST", f"/v1/sessions/{sid}/checkpoint").json()["id"]
    assert s.request("GET", "/v1/checkpoints").code == 200
    assert s.request("DELETE", f"/v1/checkpoints/{ck}").code == 204
    assert s.request("POST", f"/v1/sessions/{sid}/pause").code == 200
    assert s.request("POST", f"/v1/sessions/{sid}/resume").code == 200
    (copy,) = s.request("POST", f"/v1/sessions/{sid}/fork").json()["sessions"]
    assert s.request("DELETE", f"/v1/sessions/{copy}").code == 204
    assert s.request("DELETE", f"/v1/sessions/{sid}").code == 204

    def logged():
        return [x for x in requests(lines(s.stderr))
                if x["method"] == "DELETE" and x["route"] == "/v1/sessions/{id}"]
    assert wait_for(logged)
    routes = {x["route"] for x in requests(lines(s.stderr))}
    for shape in ("/v1/sessions/{id}/exec", "/v1/sessions/{id}/processes",
                  "/v1/sessions/{id}/processes/{pid}", "/sandboxes", "/sandboxes/{id}",
                  "/sandboxes/{id}/snapshots", "/snapshots", "/templates/{id}",
                  "/v1/sessions/{id}/checkpoint", "/v1/checkpoints", "/v1/checkpoints/{id}",
                  "/v1/sessions/{id}/pause", "/v1/sessions/{id}/resume",
                  "/v1/sessions/{id}/fork"):
        assert shape in routes, (shape, routes)
    assert "(unknown)" not in routes
    assert not any(x in r for r in routes for x in (sid, e2b_id, ck, snap_id, copy))
