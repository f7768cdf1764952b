"""The E2B-compatible API as E2B's *Python* SDKs call it. Python's e2b and
e2b-code-interpreter cannot be installed here (no PyPI), so these are their
requests recorded from their source (e2b 2.45.1 and 2.5x, e2b-code-interpreter
2.9.1: sandbox_api.py, connectrpc's JSON codec, filesystem.py,
code_interpreter_sync.py), each with the answer they need: the statuses
their generated parsers accept (create: 201 only), the fields they require
(clientID, startedAt, ...), the Connect stream they read (a start event
first, an end-stream envelope last, the exact content type), NDJSON with no
blank line. What differs from the JavaScript SDKs (tests/e2b) is the point:
JSON with spaces, snake_case allow_internet_access, nulls for unset fields,
state as "running,paused", metadata encoded twice, Content-Encoding: identity."""
import base64
import gzip
import json
import struct
import urllib.parse
import urllib.request

from conftest import wait_for  # noqa: F401 (the fixtures' module)

API_HEADERS = {"lang": "python", "sdk_runtime": "python", "publisher": "e2b",
               "User-Agent": "e2b-python-sdk/2.45.1"}


def call(s, method, path, body=None, headers=None, raw=None):
    """One request as Python's httpx sends it: json.dumps's default
    separators (spaces), the SDK's headers."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(s.url + path, data=data, method=method,
                                 headers={**(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def control(s, method, path, body=None):
    h = {**API_HEADERS, "X-API-KEY": s.key}
    if body is not None:
        h["Content-Type"] = "application/json"
    return call(s, method, path, body, h)


def envd(sbx, extra=None):
    return {"E2b-Sandbox-Id": sbx["sandboxID"], "E2b-Sandbox-Port": "49983",
            "X-Access-Token": sbx["envdAccessToken"], **(extra or {})}


def unary(s, sbx, method, msg):
    """connectrpc's unary call with the SDK's JSON codec."""
    h = envd(sbx, {"Content-Type": "application/json", "Content-Encoding": "identity",
                   "Accept-Encoding": "identity", "Connect-Protocol-Version": "1",
                   "Connect-Timeout-Ms": "60000", "User-Agent": "connectrpc/0.11.0"})
    return call(s, "POST", method, msg, h)


def envelopes(body):
    """A Connect stream's envelopes: (flags, message)."""
    out, i = [], 0
    while i < len(body):
        flags, n = struct.unpack(">BI", body[i:i + 5])
        out.append((flags, json.loads(body[i + 5:i + 5 + n])))
        i += 5 + n
    assert i == len(body), "a cut envelope"
    return out


def stream(s, sbx, method, msg, timeout_ms="60000"):
    env = json.dumps(msg).encode()
    h = envd(sbx, {"Content-Type": "application/connect+json",
                   "Connect-Content-Encoding": "identity",
                   "Connect-Accept-Encoding": "identity", "Connect-Protocol-Version": "1",
                   "Connect-Timeout-Ms": timeout_ms, "Keepalive-Ping-Interval": "50"})
    return call(s, "POST", method, headers=h, raw=struct.pack(">BI", 0, len(env)) + env)


def create_2_45(s, **extra):
    """e2b 2.45.1's Sandbox.create: POST /sandboxes, every default sent."""
    body = {"templateID": "base", "timeout": 300, "secure": True,
            "allow_internet_access": True, "metadata": {"owner": "a b/c"}, "envVars": {},
            **extra}
    code, headers, data = control(s, "POST", "/sandboxes", body)
    assert code == 201, (code, data)  # the generated parser takes 201 only
    sbx = json.loads(data)
    for field in ("templateID", "sandboxID", "clientID", "envdVersion"):
        assert isinstance(sbx[field], str), field  # required: a KeyError otherwise
    # packaging's Version must parse it: plain X.Y.Z.
    assert all(p.isdigit() for p in sbx["envdVersion"].split("."))
    return sbx


def test_control_plane_as_python_calls_it(start):
    s = start("--timeout", "10")
    sbx = create_2_45(s)
    sid = sbx["sandboxID"]
    code, _, data = control(s, "GET", f"/sandboxes/{sid}")
    info = json.loads(data)
    assert code == 200
    for field in ("startedAt", "endAt", "cpuCount", "memoryMB", "diskSizeMB", "state"):
        assert field in info, field
    assert info["state"] in ("running", "paused") and info["metadata"] == {"owner": "a b/c"}
    # paginator.py: metadata quoted, then urlencoded (twice on the wire), state
    # comma-joined, x-next-token read back.
    md = urllib.parse.urlencode({urllib.parse.quote("owner"): urllib.parse.quote("a b/c")})
    q = urllib.parse.urlencode({"metadata": md, "state": "running,paused", "limit": 1})
    code, headers, data = control(s, "GET", f"/v2/sandboxes?{q}")
    assert code == 200 and [x["sandboxID"] for x in json.loads(data)] == [sid]
    other = create_2_45(s, metadata={"owner": "x"})
    code, headers, data = control(s, "GET", "/v2/sandboxes?" + urllib.parse.urlencode(
        {"state": "running,paused", "limit": 1}))
    assert len(json.loads(data)) == 1
    token = {k.lower(): v for k, v in headers.items()}.get("x-next-token")
    assert token
    code, headers, data = control(s, "GET", "/v2/sandboxes?" + urllib.parse.urlencode(
        {"state": "running,paused", "limit": 1, "nextToken": token}))
    assert len(json.loads(data)) == 1
    assert "x-next-token" not in {k.lower() for k in headers}
    assert control(s, "POST", f"/sandboxes/{sid}/timeout", {"timeout": 120})[0] == 204
    code, _, data = control(s, "POST", f"/sandboxes/{sid}/connect", {"timeout": 60})
    assert code in (200, 201) and json.loads(data)["sandboxID"] == sid
    # Newer SDKs: /v2 create and connect, unset fields left out.
    code, _, data = control(s, "POST", "/v2/sandboxes", {"templateID": "base"})
    assert code == 201
    v2 = json.loads(data)["sandboxID"]
    code, _, _ = control(s, "POST", f"/v2/sandboxes/{v2}/connect", {})
    assert code in (200, 201)
    # Pause: 204, then 409 (E2B's "paused already"), its state "paused"; a
    # connect resumes it, and the old /resume route does the same.
    code, _, _ = control(s, "POST", f"/sandboxes/{sid}/pause", {"memory": True})
    assert code == 204
    code, _, data = control(s, "POST", f"/sandboxes/{sid}/pause", {})
    assert code == 409 and json.loads(data)["code"] == 409
    code, _, data = control(s, "GET", f"/v2/sandboxes?state=paused")
    assert [x["sandboxID"] for x in json.loads(data)] == [sid]
    code, _, data = control(s, "POST", f"/v2/sandboxes/{sid}/connect", {})
    assert code in (200, 201) and json.loads(data)["sandboxID"] == sid
    code, _, data = control(s, "GET", f"/sandboxes/{sid}")
    assert json.loads(data)["state"] == "running"
    code, _, _ = control(s, "POST", f"/sandboxes/{sid}/pause", {})
    code, _, data = control(s, "POST", f"/sandboxes/{sid}/resume", {})
    assert code in (200, 201) and json.loads(data)["sandboxID"] == sid
    # Fork: [{"sandbox": {...}}], each copy a sandbox of its own token.
    code, _, data = control(s, "POST", f"/sandboxes/{sid}/fork", {"count": 2})
    assert code == 201, data
    forks = [x["sandbox"] for x in json.loads(data)]
    assert len(forks) == 2 and len({f["sandboxID"] for f in forks} | {sid}) == 3
    assert len({f["envdAccessToken"] for f in forks}) == 2
    for f in forks:
        assert control(s, "DELETE", f"/sandboxes/{f['sandboxID']}")[0] == 204
    # Errors: {"code": int, "message"}, which handle_api_exception reads.
    code, _, data = control(s, "POST", f"/sandboxes/{sid}/metrics", {})
    assert code == 501 and "metrics" in json.loads(data)["message"]
    # A snapshot (Python's create_snapshot): {"snapshotID", "names"}, a
    # create from it, and DELETE /templates/ID (delete_snapshot).
    code, _, data = control(s, "POST", f"/sandboxes/{sid}/snapshots", {"name": "py-snap"})
    assert code == 201 and json.loads(data)["names"] == ["py-snap"], data
    snap = json.loads(data)["snapshotID"]
    code, _, data = control(s, "GET", f"/snapshots?sandboxID={sid}")
    assert code == 200 and json.loads(data) == [{"snapshotID": snap, "names": ["py-snap"]}]
    code, _, data = control(s, "POST", "/sandboxes", {"templateID": snap})
    assert code == 201, data
    assert control(s, "DELETE", f"/sandboxes/{json.loads(data)['sandboxID']}")[0] == 204
    assert control(s, "DELETE", f"/templates/{snap}")[0] == 204
    assert control(s, "DELETE", f"/templates/{snap}")[0] == 404
    for x in (sid, other["sandboxID"], v2):
        assert control(s, "DELETE", f"/sandboxes/{x}")[0] == 204
    code, _, data = control(s, "DELETE", f"/sandboxes/{sid}")
    assert code == 404 and json.loads(data) == {"code": 404, "message": json.loads(data)["message"]}
    # A key in another shape or none: 401 in E2B's words.
    code, _, data = call(s, "POST", "/sandboxes", {"templateID": "base"},
                         {"X-API-KEY": "e2b_" + "0" * 40, "Content-Type": "application/json"})
    assert code == 401 and json.loads(data)["code"] == 401


def test_commands_and_files_as_python_calls_them(start):
    s = start("--timeout", "10")
    sbx = create_2_45(s)
    # commands.run: Start with stdin false, its events read to the end-stream.
    code, headers, body = stream(s, sbx, "/process.Process/Start", {
        "process": {"cmd": "/bin/bash", "args": ["-l", "-c", "echo hi; exit 0"]},
        "stdin": False})
    assert code == 200
    assert {k.lower(): v for k, v in headers.items()}["content-type"] == "application/connect+json"
    evs = envelopes(body)
    assert evs[0][1]["event"]["start"]["pid"] > 0  # first, or the SDK raises
    out = b"".join(base64.b64decode(m["event"]["data"]["stdout"]) for f, m in evs
                   if "data" in m.get("event", {}))
    assert out == b"hi\n"
    end = [m["event"]["end"] for f, m in evs if "end" in m.get("event", {})][0]
    assert "exitCode" not in end and "error" not in end and end["exited"] is True
    assert evs[-1] == (2, {})  # the end-stream envelope, last
    # A failing command: exitCode and error.
    evs = envelopes(stream(s, sbx, "/process.Process/Start", {
        "process": {"cmd": "/bin/bash", "args": ["-l", "-c", "exit 4"]}, "stdin": False})[2])
    end = [m["event"]["end"] for f, m in evs if "end" in m.get("event", {})][0]
    assert end["exitCode"] == 4 and end["error"] == "exit status 4"
    # Unary calls: List, and SendSignal of a pid that is gone (NOT_FOUND: kill -> False).
    code, _, data = unary(s, sbx, "/process.Process/List", {})
    assert code == 200 and json.loads(data) == {"processes": []}
    code, _, data = unary(s, sbx, "/process.Process/SendSignal",
                          {"process": {"pid": 999999}, "signal": "SIGNAL_SIGKILL"})
    assert code == 404 and json.loads(data)["code"] == "not_found"
    # files.write (multipart: field "file", filename the whole path), read, ListDir.
    boundary = "bnd7"
    part = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"filename=\"/home/user/w.txt\"\r\nContent-Type: text/plain\r\n\r\n"
            f"written\r\n--{boundary}--\r\n").encode()
    code, _, data = call(s, "POST", "/files?path=%2Fhome%2Fuser%2Fw.txt", headers=envd(
        sbx, {"Content-Type": f"multipart/form-data; boundary={boundary}"}), raw=part)
    assert code == 200
    assert json.loads(data) == [{"path": "/home/user/w.txt", "name": "w.txt", "type": "file"}]
    code, _, data = call(s, "GET", "/files?path=%2Fhome%2Fuser%2Fw.txt", headers=envd(sbx))
    assert code == 200 and data == b"written"
    code, _, data = unary(s, sbx, "/filesystem.Filesystem/ListDir",
                          {"path": "/home/user", "depth": 1})
    entries = {e["name"]: e for e in json.loads(data)["entries"]}
    assert entries["w.txt"]["type"] == "FILE_TYPE_FILE"
    assert entries["w.txt"]["path"] == "/home/user/w.txt"
    assert int(entries["w.txt"]["size"]) == 7  # int64: a string in proto3 JSON
    code, _, data = unary(s, sbx, "/filesystem.Filesystem/Stat", {"path": "/home/user/none"})
    assert code == 404 and json.loads(data)["code"] == "not_found"
    # The sync watch_dir's polling calls: refused by name.
    code, _, data = unary(s, sbx, "/filesystem.Filesystem/CreateWatcher",
                          {"path": "/home/user"})
    assert code == 501 and "CreateWatcher" in json.loads(data)["message"]
    code, _, _ = call(s, "GET", "/health", headers=envd(sbx))
    assert 200 <= code < 300  # is_running()
    assert control(s, "DELETE", f"/sandboxes/{sbx['sandboxID']}")[0] == 204


def test_run_code_as_python_calls_it(start):
    s = start("--timeout", "10")
    sbx = create_2_45(s, templateID="code-interpreter-v1")
    # code_interpreter_sync.py: every key sent, unset ones null; on contexts
    # the traffic token alone (create gave one), which they need: a
    # restart forgets state. Without it the sandbox answers as unknown.
    h = {"Content-Type": "application/json", "E2b-Sandbox-Id": sbx["sandboxID"],
         "E2b-Sandbox-Port": "49999", "User-Agent": "python-httpx/0.28.1"}
    assert call(s, "POST", "/contexts", {"language": "python"}, h)[0] == 404
    assert call(s, "POST", "/contexts/python/restart", None, h)[0] == 404
    h["E2B-Traffic-Access-Token"] = sbx["trafficAccessToken"]
    code, _, data = call(s, "POST", "/contexts", {"language": "python"}, h)
    assert code == 200 and json.loads(data)["language"] == "python"
    ctx = json.loads(data)["id"]
    assert ctx != "python" and ctx in [c["id"] for c in json.loads(
        call(s, "GET", "/contexts", None, h)[2])]
    code, _, data = call(s, "POST", f"/contexts/{ctx}/restart", None, h)
    assert code == 204, data
    del h["E2B-Traffic-Access-Token"]
    h["X-Access-Token"] = sbx["envdAccessToken"]
    code, _, data = call(s, "POST", "/execute", {"code": "v = 6 * 7\nprint(v)",
                                                 "context_id": None, "language": None,
                                                 "env_vars": None}, h)
    assert code == 200
    lines = data.decode().split("\n")
    assert lines[-1] == "" and all(lines[:-1])  # each line JSON, no blank one
    msgs = [json.loads(x) for x in lines[:-1]]
    assert "".join(m["text"] for m in msgs if m["type"] == "stdout") == "42\n"
    code, _, data = call(s, "POST", "/execute", {"code": "1/0", "context_id": None,
                                                 "language": None, "env_vars": None}, h)
    errors = [json.loads(x) for x in data.decode().splitlines() if '"error"' in x]
    assert errors and errors[-1]["name"] == "ZeroDivisionError"
    assert control(s, "DELETE", f"/sandboxes/{sbx['sandboxID']}")[0] == 204


def test_a_sandbox_whose_session_ended_is_gone(start):
    s = start("--timeout", "10")
    sbx = create_2_45(s)
    sid = sbx["sandboxID"]
    # Its session closed by agentjail's own API (as idleness or its lifetime
    # would close it): the E2B API lists it no more, and knows it no more.
    assert s.request("DELETE", f"/v1/sessions/{sid}").code == 204
    code, _, data = control(s, "GET", "/v2/sandboxes?state=running,paused")
    assert code == 200 and json.loads(data) == []
    assert control(s, "GET", f"/sandboxes/{sid}")[0] == 404
    code, _, data = unary(s, sbx, "/process.Process/List", {})
    assert code == 404 and json.loads(data)["code"] == "not_found"


def test_a_path_too_long_is_refused_never_cut(start):
    s = start("--timeout", "10")
    sbx = create_2_45(s)
    long = "/home/user/" + "d/" * 2100 + "f.txt"  # past 4096 bytes
    q = urllib.parse.urlencode({"path": long})
    code, _, data = call(s, "POST", f"/files?{q}", headers=envd(
        sbx, {"Content-Type": "application/octet-stream"}), raw=b"x")
    assert code == 400 and "longer than 4096 bytes" in json.loads(data)["message"]
    code, _, data = call(s, "GET", f"/files?{q}", headers=envd(sbx))
    assert code == 400
    code, _, data = unary(s, sbx, "/filesystem.Filesystem/Stat", {"path": long})
    assert code == 400 and json.loads(data)["code"] == "invalid_argument"
    code, _, body = stream(s, sbx, "/process.Process/Start", {
        "process": {"cmd": "/bin/true", "cwd": long}, "stdin": False})
    assert envelopes(body)[-1][1]["error"]["code"] == "invalid_argument"
    assert control(s, "DELETE", f"/sandboxes/{sbx['sandboxID']}")[0] == 204


def test_a_gzip_upload_is_inflated_within_the_transfer_limit(start):
    # Python's files.write(..., gzip=True): the body gzip-compressed, said by
    # Content-Encoding. A bomb (a small body that inflates past the
    # session's transfer limit) is refused before it is held whole; a body
    # that is not gzip is refused naming why; nothing is written by either.
    s = start("--timeout", "10", "--transfer-mb", "1")
    sbx = create_2_45(s)
    h = envd(sbx, {"Content-Type": "application/octet-stream", "Content-Encoding": "gzip"})
    q = urllib.parse.urlencode({"path": "/home/user/z.txt"})
    code, _, data = call(s, "POST", f"/files?{q}", headers=h, raw=gzip.compress(b"zipped" * 1000))
    assert code == 200, data
    assert json.loads(data)[0]["path"] == "/home/user/z.txt"
    code, _, data = call(s, "GET", f"/files?{q}", headers=envd(sbx, {"Accept-Encoding": "gzip"}))
    assert code == 200 and data == b"zipped" * 1000
    bomb = gzip.compress(b"\0" * (8 << 20))
    assert len(bomb) < 64 << 10
    q2 = urllib.parse.urlencode({"path": "/home/user/bomb"})
    code, _, data = call(s, "POST", f"/files?{q2}", headers=h, raw=bomb)
    assert code == 413 and "inflates past" in json.loads(data)["message"], data
    code, _, data = call(s, "POST", f"/files?{q2}", headers=h, raw=b"not gzip at all")
    assert code == 400 and "not gzip" in json.loads(data)["message"], data
    code, _, data = call(s, "POST", f"/files?{q2}", headers=h, raw=gzip.compress(b"abc")[:-6])
    assert code == 400 and "ends before" in json.loads(data)["message"], data
    assert call(s, "GET", f"/files?{q2}", headers=envd(sbx))[0] == 404
    code, _, data = call(s, "POST", f"/files?{q2}", raw=b"x", headers=envd(
        sbx, {"Content-Type": "application/octet-stream", "Content-Encoding": "br"}))
    assert code == 415 and "br" in json.loads(data)["message"]
    assert control(s, "DELETE", f"/sandboxes/{sbx['sandboxID']}")[0] == 204
