"""Refusals a client reads whatever it was doing: a body over its route's
cap, or a request without a key, refused while the client is still
sending (urllib sends the whole body before it reads; curl reads as it
sends), and code over the 4 MiB a program may be, which is a 413 counted
as a refusal, never a run."""
import select
import socket
import subprocess

from conftest import wait_for

MIB = 1 << 20
# Well over any socket buffer on loopback (tcp_rmem starts at 128 KiB and a
# server that does not read never grows it), so the client is mid-upload
# when the refusal goes out.
BIG = 16 * MIB


def open_session(s):
    r = s.request("POST", "/v1/sessions")
    assert r.code == 201, r.body
    return r.json()["id"]


def curl(s, method, path, body_file, *args, key="default"):
    """curl as a user runs it: its exit code, the status it read, its stderr
    and the body it read."""
    k = s.key if key == "default" else key
    out = subprocess.run(
        ["curl", "-sS", "-X", method, "--data-binary", f"@{body_file}", "-o", "-",
         "-w", "\n%{http_code}", "-H", f"Authorization: Bearer {k}",
         "-H", "Content-Type: application/octet-stream", *args, s.url + path],
        capture_output=True, timeout=120)
    body, _, code = out.stdout.rpartition(b"\n")
    return out.returncode, int(code or 0), out.stderr.decode(), body


def too_large(r, cap):
    assert r.code == 413, (r.code, r.body[:200])
    err = r.json()["error"]
    assert err["code"] == "too_large"
    assert str(cap) in err["message"], err["message"]


def test_a_transfer_over_the_cap_is_413(start):
    """urllib sends all of the body before it reads a byte: the refusal,
    sent when the headers came, must still be there when it looks."""
    s = start("--transfer-mb", "1")
    sid = open_session(s)
    for _ in range(3):
        too_large(s.request("PUT", f"/v1/sessions/{sid}/files/big", b"x" * BIG, raw=True), MIB)
    r = s.request("PUT", f"/v1/sessions/{sid}/files/ok", b"x" * 1000, raw=True)
    assert r.code == 201
    m = s.metrics()
    assert m['agentjail_http_responses_total{code="413"}'] == 3


def test_curl_reads_the_413_mid_upload(start, tmp_path):
    s = start("--transfer-mb", "1")
    sid = open_session(s)
    big = tmp_path / "big"
    big.write_bytes(b"x" * BIG)
    path = f"/v1/sessions/{sid}/files/big"
    # "Expect:" off: curl sends the body at once and is mid-upload when the
    # refusal comes; with it (curl's default over 1 MiB) it waits for the
    # server's word first; chunked: the size is known only once the cap is
    # crossed, and the body is read to its end under the drain's bound.
    for extra in (["-H", "Expect:"], [], ["-H", "Transfer-Encoding: chunked", "-H", "Expect:"]):
        rc, code, err, body = curl(s, "PUT", path, big, *extra)
        assert rc == 0, (extra, err)
        assert code == 413, (extra, body[:200])
        assert b'"too_large"' in body and b"1048576" in body, body
    assert s.request("GET", f"/v1/sessions/{sid}/files/big").code == 404


def test_a_run_body_over_the_cap_is_413_mid_upload(start, tmp_path):
    s = start("--max-body-kb", "1024")
    body = b'{"code": "' + b"#" * BIG + b'"}'
    r = s.request("POST", "/v1/runs", body, raw=True, headers={"Content-Type": "application/json"})
    too_large(r, MIB)
    f = tmp_path / "run.json"
    f.write_bytes(body)
    rc, code, err, out = curl(s, "POST", "/v1/runs", f, "-H", "Expect:")
    assert rc == 0 and code == 413, (err, out[:200])
    assert s.run("print('small')").json()["stdout"] == "small\n"


def test_a_big_body_without_a_key_reads_its_401(start):
    s = start()
    r = s.request("POST", "/v1/runs", b"x" * BIG, raw=True, key="aj_" + "A" * 43)
    assert r.code == 401 and r.json()["error"]["code"] == "unauthorized"


def test_a_refused_client_that_keeps_sending_is_cut_off(start):
    """The drain after a refusal is bounded: a client that announces a
    gigabyte and streams it reads its 413, and is then cut off long before
    the gigabyte is through."""
    s = start("--transfer-mb", "1")
    sid = open_session(s)
    port = int(s.url.rsplit(":", 1)[1])
    c = socket.create_connection(("127.0.0.1", port), 30)
    announced = 1 << 30
    c.sendall(f"PUT /v1/sessions/{sid}/files/big HTTP/1.1\r\nHost: x\r\n"
              f"Authorization: Bearer {s.key}\r\nContent-Length: {announced}\r\n\r\n".encode())
    c.setblocking(False)
    got, sent, eof, cut = b"", 0, False, False
    chunk = b"\0" * 65536
    while sent < announced:
        r, w, _ = select.select([] if eof else [c], [c], [], 60)
        assert r or w, "the server neither answered nor took more for 60 s"
        if r:
            try:
                d = c.recv(65536)
            except ConnectionResetError:
                cut = True
                break
            got += d
            eof = not d
        if w:
            try:
                sent += c.send(chunk)
            except (BrokenPipeError, ConnectionResetError):
                cut = True
                break
    c.close()
    assert got.startswith(b"HTTP/1.1 413"), got[:200]
    assert cut and sent < announced // 4, sent


def test_a_refused_client_that_goes_quiet_is_cut_off(start):
    """The drain's other bound is time: a client that announced a body,
    read its refusal and then neither sends nor closes is closed on."""
    s = start("--transfer-mb", "1", "--idle-timeout", "1")
    sid = open_session(s)
    port = int(s.url.rsplit(":", 1)[1])
    c = socket.create_connection(("127.0.0.1", port), 30)
    c.sendall(f"PUT /v1/sessions/{sid}/files/big HTTP/1.1\r\nHost: x\r\n"
              f"Authorization: Bearer {s.key}\r\nContent-Length: {BIG}\r\n\r\n".encode())
    got = b""
    while True:
        d = c.recv(65536)
        if not d:
            break
        got += d
    assert got.startswith(b"HTTP/1.1 413"), got[:200]

    def closed():
        try:
            c.send(b"x")
            return False
        except (BrokenPipeError, ConnectionResetError):
            return True
    assert wait_for(closed, timeout=60)
    c.close()


def metric(m, name):
    return m.get(name, 0.0)


REFUSED = 'agentjail_refused_total{reason="too_large"}'
SANDBOX_ERRORS = 'agentjail_runs_total{tier="process",status="sandbox_error"}'


def test_code_over_4_mib_is_413_and_a_refusal(start):
    s = start("--max-body-kb", "16384")
    code = "#" * ((4 << 20) + 1)
    before = s.metrics()
    r = s.run(code)
    too_large(r, 4 << 20)
    assert "code" in r.json()["error"]["message"]
    sid = open_session(s)
    r = s.request("POST", f"/v1/sessions/{sid}/runs", {"code": code})
    too_large(r, 4 << 20)
    after = s.metrics()
    assert metric(after, REFUSED) == metric(before, REFUSED) + 2
    assert metric(after, SANDBOX_ERRORS) == metric(before, SANDBOX_ERRORS)
    # The cap is inclusive: exactly 4 MiB of code runs.
    r = s.run("#" * (4 << 20))
    assert r.code == 200 and r.json()["status"] == "ok", r.body[:300]
    assert metric(s.metrics(), REFUSED) == metric(before, REFUSED) + 2
