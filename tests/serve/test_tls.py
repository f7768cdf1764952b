"""serve over TLS (--tls-cert, --tls-key): every route over HTTPS with a
certificate this test makes, kept-alive connections, a client that does
not trust the certificate refused, and wrong files refused at start in
words that name them."""
import http.client
import json
import os
import ssl
import subprocess
import urllib.error
import urllib.request

import pytest

from conftest import AGENTJAIL, STATE_DIR, UID_BASE, Server, wait_for


def make_cert(d, name="server"):
    """A self-signed certificate for 127.0.0.1 and its key, in d."""
    cert, key = os.path.join(d, f"{name}.pem"), os.path.join(d, f"{name}-key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "2", "-subj", "/CN=127.0.0.1", "-addext",
                    "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    return cert, key


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory):
    return make_cert(str(tmp_path_factory.mktemp("tls")))


def https(server, cafile):
    host, port = server.url.split("://", 1)[1].rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=cafile)
    return http.client.HTTPSConnection(host, int(port), context=ctx, timeout=60)


def call(conn, method, path, key, body=None, headers=None):
    hdrs = {"Authorization": f"Bearer {key}", **(headers or {})}
    data = None
    if body is not None:
        data = json.dumps(body)
        hdrs["Content-Type"] = "application/json"
    conn.request(method, path, data, hdrs)
    r = conn.getresponse()
    return r.status, r.read()


def test_every_route_over_https_on_one_kept_connection(start, tls_files):
    cert, key = tls_files
    s = start("--timeout", "10", "--tls-cert", cert, "--tls-key", key)
    assert s.url.startswith("https://127.0.0.1:")
    conn = https(s, cert)
    code, body = call(conn, "GET", "/v1/health", s.key)
    assert code == 200 and json.loads(body)["status"] == "ok"
    sock = conn.sock
    code, body = call(conn, "POST", "/v1/runs", s.key, {"code": "print(6 * 7)"})
    assert code == 200 and json.loads(body)["stdout"] == "42\n"
    code, body = call(conn, "POST", "/v1/sessions", s.key, {})
    sid = json.loads(body)["id"]
    code, body = call(conn, "POST", f"/v1/sessions/{sid}/exec", s.key, {"command": "echo tls"})
    assert code == 200 and json.loads(body)["stdout"] == "tls\n"
    code, _ = call(conn, "DELETE", f"/v1/sessions/{sid}", s.key)
    assert code == 204
    # MCP's endpoint is on the same listener.
    code, body = call(conn, "POST", "/mcp", s.key,
                      {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                  "clientInfo": {"name": "t", "version": "1"}}},
                      {"Accept": "application/json, text/event-stream"})
    assert code == 200 and b"agentjail" in body
    # Every request above went over the first connection: kept alive.
    assert conn.sock is sock
    conn.close()


def test_a_client_that_does_not_trust_the_certificate_is_refused(start, tls_files):
    cert, key = tls_files
    s = start("--timeout", "10", "--tls-cert", cert, "--tls-key", key)
    # The system's CAs only: the handshake fails on the client's side.
    with pytest.raises(urllib.error.URLError) as e:
        urllib.request.urlopen(s.url + "/v1/health", timeout=30)
    assert isinstance(e.value.reason, ssl.SSLCertVerificationError)
    # Another certificate as the CA: refused too.
    other, _ = make_cert(os.path.dirname(cert), "other")
    conn = https(s, other)
    with pytest.raises(ssl.SSLCertVerificationError):
        conn.request("GET", "/v1/health")
    conn.close()
    # Plain HTTP to the TLS listener gets no HTTP answer.
    host, port = s.url.split("://", 1)[1].rsplit(":", 1)
    plain = http.client.HTTPConnection(host, int(port), timeout=30)
    with pytest.raises((http.client.HTTPException, ConnectionError)):
        plain.request("GET", "/v1/health")
        plain.getresponse()
    plain.close()
    # The server goes on serving those that do trust it.
    conn = https(s, cert)
    assert call(conn, "GET", "/v1/health", s.key)[0] == 200
    conn.close()


def refused(*args):
    r = subprocess.run([AGENTJAIL, "serve", "--listen", "127.0.0.1:0", "--uid-base",
                        str(UID_BASE), "--state-dir", STATE_DIR, *args],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "AGENTJAIL_URL" not in r.stdout
    return r.stderr


def test_wrong_tls_files_are_refused_at_start_naming_them(tls_files, tmp_path):
    cert, key = tls_files
    assert "--tls-cert and --tls-key go together: --tls-key is missing" in refused(
        "--tls-cert", cert)
    assert "--tls-cert and --tls-key go together: --tls-cert is missing" in refused(
        "--tls-key", key)
    missing = str(tmp_path / "none.pem")
    assert f"--tls-cert: {missing}: No such file or directory" in refused(
        "--tls-cert", missing, "--tls-key", key)
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    assert f"--tls-cert: {junk} holds no PEM certificate" in refused(
        "--tls-cert", str(junk), "--tls-key", key)
    assert f"--tls-key: {junk} holds no unencrypted PEM private key" in refused(
        "--tls-cert", cert, "--tls-key", str(junk))
    _, other_key = make_cert(str(tmp_path), "other")
    assert f"--tls-key: {other_key} is not the key of the certificate in {cert}" in refused(
        "--tls-cert", cert, "--tls-key", other_key)
    # The key as the certificate and the reverse.
    assert f"--tls-cert: {key} holds no PEM certificate" in refused(
        "--tls-cert", key, "--tls-key", cert)


def test_plain_http_is_unchanged_without_tls(start):
    s = start("--timeout", "10")
    assert s.url.startswith("http://")
    assert s.request("GET", "/v1/health", key=None).code == 200


def test_the_banner_says_tls(tls_files):
    cert, key = tls_files
    s = Server("--timeout", "10", "--tls-cert", cert, "--tls-key", key)
    try:
        assert wait_for(lambda: any("(TLS)" in line for line in s.stderr))
    finally:
        assert s.stop() == 0
