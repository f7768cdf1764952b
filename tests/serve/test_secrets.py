"""Secrets through agentjail serve (issue 39, docs/serve.md#secrets): a key's
secrets in the keys file, checked at load, naming the key; a request's own
in POST /v1/runs and /v1/sessions, joined with the key's and the server's
(a name twice is 400 naming it); a session shows names only and narrows
them by name; E2B's network.rules header transforms become secrets; with
--queue a request's secrets are refused (501: they would travel through
Redis). No value ever shows in an answer, serve's stderr or access log,
the runs it records or the files it writes at its stop.

The tests named needs_the_library narrow a session's secrets through
aj_session_secrets_keep (src/api, being written). Those named
needs_the_proxy drive a real injection through a
loopback HTTPS origin with a CA of the test's own: they need the egress
proxy's interceptor (src/egress), aj_session_secrets_keep (src/api) and
serve's --secrets and --egress-ca options (src/cli/options.c)."""
import json
import os
import ssl
import subprocess
import tempfile
import threading
import http.server

import pytest

from conftest import add_key, wait_for
from test_queue import Redis

VALUE = "ghp_SeCrEtVaLuE0123456789abcdefXYZ"
KEY_VALUE = "kv_AnOtHeRsEcReT98765zyxw"


def secret(name, value=VALUE, hosts=("api.example.com:443",), **kw):
    item = {"name": name, "value": value, "hosts": list(hosts),
            "header": "Authorization", "format": "Bearer {value}"}
    item.update(kw)
    return item


def keys_with_secrets(tmp_path, secrets, name="alice"):
    """A keys file of one key with the given secrets: (path, token)."""
    import pathlib
    path = pathlib.Path(tempfile.mkdtemp(dir=tmp_path)) / "keys.json"
    token = add_key(path, name, "--metrics")
    doc = json.loads(path.read_text())
    doc["keys"][0]["secrets"] = secrets
    path.write_text(json.dumps(doc))
    return str(path), key_token(token)


def key_token(out):
    for line in out.splitlines():
        if line.startswith("aj_") or line.startswith("e2b_"):
            return line.strip()
        if "=" in line and line.split("=", 1)[1].startswith("aj_"):
            return line.split("=", 1)[1].strip()
    return out.strip()


def start_refused(args):
    from conftest import AGENTJAIL
    p = subprocess.run([AGENTJAIL, "serve", "--listen", "127.0.0.1:0", *args],
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout + p.stderr


RULES = ("--allow-host", "api.example.com:443", "--allow-host", "api.other.org:443")


def no_value_in(*texts):
    for t in texts:
        if isinstance(t, bytes):
            t = t.decode(errors="replace")
        assert VALUE not in t and KEY_VALUE not in t


def files_under(d):
    out = []
    for root, _, names in os.walk(d):
        for n in names:
            with open(os.path.join(root, n), "rb") as f:
                out.append(f.read())
    return out


# ---- the keys file ----

def test_key_secrets_are_checked_at_load_naming_the_key(tmp_path):
    bad = [secret("GH", hosts=[])]  # no hosts: the core's check refuses
    path, _ = keys_with_secrets(tmp_path, bad)
    rc, out = start_refused(["--keys", path, *RULES])
    assert rc != 0
    assert "alice" in out and "secrets" in out and "hosts" in out
    no_value_in(out)

    # Well formed, but no egress rule to send it on: refused at start.
    path, _ = keys_with_secrets(tmp_path, [secret("GH")])
    rc, out = start_refused(["--keys", path])
    assert rc != 0 and "alice" in out and "egress" in out
    no_value_in(out)

    # A name the key and the server's would both give is told at start
    # too; that needs --secrets (the CLI's option): below, with the proxy.


def test_keys_add_keeps_another_keys_secrets(tmp_path):
    path, _ = keys_with_secrets(tmp_path, [secret("GH", value=KEY_VALUE)])
    add_key(path, "bob")
    doc = json.loads(open(path).read())
    alice = [k for k in doc["keys"] if k["name"] == "alice"][0]
    assert alice["secrets"][0]["value"] == KEY_VALUE
    assert os.stat(path).st_mode & 0o077 == 0


def test_a_malformed_keys_file_never_quotes_its_text(tmp_path):
    path = tmp_path / "keys.json"
    path.write_text('{"keys": [{"name": "alice", "secrets": [{"value": %s}]}]}' % VALUE)
    rc, out = start_refused(["--keys", str(path)])
    assert rc != 0
    no_value_in(out)


# ---- a request's secrets ----

@pytest.fixture
def served(start, tmp_path):
    """A server with egress rules and a key holding secret KEYGH; its log
    to a file of the test's."""
    log = tmp_path / "access.log"
    path = tmp_path / "keys.json"
    out = add_key(path, "alice", "--metrics")
    doc = json.loads(path.read_text())
    doc["keys"][0]["secrets"] = [secret("KEYGH", value=KEY_VALUE)]
    path.write_text(json.dumps(doc))
    s = start("--timeout", "5", *RULES, "--access-log", str(log), keys=str(path))
    s.key = key_token(out)
    s.log = log
    return s


def test_malformed_request_secrets_are_400_naming_the_field(served):
    s = served
    cases = [
        {"secrets": {"name": "GH"}},                                  # not an array
        {"secrets": [secret("GH", hosts=[])]},                        # no hosts
        {"secrets": [secret("gh")]},                                  # a bad name
        {"secrets": [dict(secret("GH"), header="Bad Header")]},       # a bad header
        {"secrets": [dict(secret("GH"), surprise=True)]},             # an unknown field
        {"secrets": [secret("GH", value=VALUE + "\r\nX: y")]},        # a CR/LF in the value
    ]
    for body in cases:
        for route, extra in (("/v1/runs", {"code": "print(1)"}), ("/v1/sessions", {})):
            r = s.request("POST", route, {**extra, **body})
            assert r.code == 400, (route, body, r.body)
            err = r.json()["error"]
            assert err["code"] == "bad_secrets"
            assert err["message"].startswith("secrets")
            no_value_in(r.body)
    # A body that is not JSON at all: the place is said, never the text.
    r = s.request("POST", "/v1/runs",
                  b'{"code": "print(1)", "secrets": [{"value": %s}]}' % VALUE.encode(),
                  raw=True, headers={"Content-Type": "application/json"})
    assert r.code == 400 and r.json()["error"]["code"] == "bad_json"
    no_value_in(r.body)


def test_a_name_given_twice_is_refused_naming_it(served):
    s = served
    r = s.request("POST", "/v1/sessions", {"secrets": [secret("KEYGH")]})
    assert r.code == 400
    msg = r.json()["error"]["message"]
    assert "KEYGH" in msg and "key's" in msg and "request's" in msg
    no_value_in(r.body)
    r = s.request("POST", "/v1/runs", {"code": "print(1)", "secrets": [secret("KEYGH")]})
    assert r.code == 400 and "KEYGH" in r.json()["error"]["message"]
    no_value_in(r.body)


def test_a_session_shows_names_only(served):
    s = served
    r = s.request("POST", "/v1/sessions", {"secrets": [secret("GH")]})
    assert r.code == 201, r.body
    body = r.json()
    assert sorted(body["secrets"]) == ["GH", "KEYGH"]
    no_value_in(r.body)
    # The program sees neither the value nor the variable's value.
    r = s.request("POST", f"/v1/sessions/{body['id']}/runs",
                  {"code": "import os\nprint(sorted(os.environ.items()))"})
    assert r.code == 200
    no_value_in(r.body)
    assert s.request("DELETE", f"/v1/sessions/{body['id']}").code in (200, 204)

    # Without any of its own: the key's alone.
    r = s.request("POST", "/v1/sessions", {})
    assert r.code == 201 and r.json()["secrets"] == ["KEYGH"]
    s.request("DELETE", f"/v1/sessions/{r.json()['id']}")


def test_a_run_with_secrets_leaves_no_value_behind(served):
    s = served
    r = s.request("POST", "/v1/runs", {"code": "print('plain')", "secrets": [secret("GH")]})
    assert r.code == 200 and r.json()["stdout"] == "plain\n"
    no_value_in(r.body)
    # A recorded (background) run: its record, its events, the list.
    r = s.request("POST", "/v1/runs", {"code": "print('bg')", "background": True,
                                       "secrets": [secret("GH")]})
    assert r.code == 202, r.body
    rid = r.json()["id"]
    assert wait_for(lambda: s.request("GET", f"/v1/runs/{rid}").json()["state"] == "done")
    for path in (f"/v1/runs/{rid}", f"/v1/runs/{rid}/events", "/v1/runs"):
        no_value_in(s.request("GET", path).body)
    no_value_in(s.request("GET", "/metrics").body)
    # A paused session kept over the stop: the files serve wrote.
    r = s.request("POST", "/v1/sessions", {"secrets": [secret("GH")]})
    sid = r.json()["id"]
    s.request("POST", f"/v1/sessions/{sid}/runs", {"code": "x = 1"})
    s.request("POST", f"/v1/sessions/{sid}/pause")
    ck = s.own_checkpoints
    s.own_checkpoints = None  # read before the fixture removes it
    assert s.stop() == 0
    try:
        for data in files_under(ck):
            no_value_in(data)
    finally:
        import shutil
        shutil.rmtree(ck, ignore_errors=True)
    no_value_in("".join(s.stderr), s.log.read_text())


def test_needs_the_library_egress_narrowing_takes_secret_names(served):
    s = served
    r = s.request("POST", "/v1/sessions", {"secrets": [secret("GH")]})
    sid = r.json()["id"]
    # Not a list of names: 400 naming the field, before anything changes.
    r = s.request("POST", f"/v1/sessions/{sid}/egress", {"secrets": "GH"})
    assert r.code == 400 and r.json()["error"]["code"] == "bad_secrets"
    # Keeping GH alone (needs the library's aj_session_secrets_keep).
    r = s.request("POST", f"/v1/sessions/{sid}/egress", {"secrets": ["GH"]})
    assert r.code == 200, r.body
    assert r.json()["secrets"] == ["GH"]
    # A name the session lacks (KEYGH, dropped): 400 naming it.
    r = s.request("POST", f"/v1/sessions/{sid}/egress", {"secrets": ["KEYGH"]})
    assert r.code == 400 and "KEYGH" in r.json()["error"]["message"]
    no_value_in(r.body)
    s.request("DELETE", f"/v1/sessions/{sid}")


# ---- E2B's network.rules ----

def test_e2b_header_transforms_become_secrets(served):
    s = served
    base = {"templateID": "base", "timeout": 60}
    net = {"allowOut": ["api.example.com"],
           "rules": {"api.example.com": [
               {"transform": {"headers": {"Authorization": "Bearer " + VALUE}}}]}}
    r = s.request("POST", "/sandboxes", {**base, "network": net},
                  headers={"X-API-Key": s.key})
    assert r.code == 201, r.body
    no_value_in(r.body)
    sid = r.json()["sandboxID"]
    info = s.request("GET", f"/sandboxes/{sid}", headers={"X-API-Key": s.key})
    no_value_in(info.body)
    s.request("DELETE", f"/sandboxes/{sid}", headers={"X-API-Key": s.key})

    # A host no egress rule names: refused, named, never widened.
    r = s.request("POST", "/sandboxes", {**base, "network": {
        "rules": {"evil.example.net": [{"transform": {"headers": {"X": VALUE}}}]}}},
        headers={"X-API-Key": s.key})
    assert r.code == 400 and b"evil.example.net" in r.body
    no_value_in(r.body)
    # E2B's ${e2b.secrets.NAME} names one of the key's or the server's
    # secrets: a name neither has is refused, naming it.
    r = s.request("POST", "/sandboxes", {**base, "network": {
        "rules": {"api.example.com": [{"transform": {"headers": {
            "Authorization": "Bearer ${e2b.secrets.openai-api-key}"}}}]}}},
        headers={"X-API-Key": s.key})
    assert r.code == 400 and b"no secret named openai-api-key" in r.body
    # The key's KEYGH, on a host it is for: its value goes in ({value}).
    ref = {"Authorization": "token ${e2b.secrets.KEYGH}"}
    r = s.request("POST", "/sandboxes", {**base, "network": {
        "rules": {"api.example.com": [{"transform": {"headers": ref}}]}}},
        headers={"X-API-Key": s.key})
    assert r.code == 201, r.body
    no_value_in(r.body)
    s.request("DELETE", f"/sandboxes/{r.json()['sandboxID']}", headers={"X-API-Key": s.key})
    # On a host it is not for: refused, never sent there.
    r = s.request("POST", "/sandboxes", {**base, "network": {
        "rules": {"api.other.org": [{"transform": {"headers": ref}}]}}},
        headers={"X-API-Key": s.key})
    assert r.code == 400 and b"secret KEYGH is not for api.other.org" in r.body, r.body
    no_value_in(r.body)
    # E2B's identity tokens live in its cloud.
    r = s.request("POST", "/sandboxes", {**base, "network": {
        "rules": {"api.example.com": [{"transform": {"headers": {
            "Authorization": "Bearer ${e2b.identity.tokens.x}"}}}]}}},
        headers={"X-API-Key": s.key})
    assert r.code == 400 and b"identity" in r.body
    r = s.request("POST", "/sandboxes", {**base, "network": {
        "egressProxy": {"address": "proxy.example.com:1080"}}}, headers={"X-API-Key": s.key})
    assert r.code == 400 and b"network.egressProxy" in r.body


# ---- --queue ----

@pytest.fixture
def redis():
    r = Redis()
    yield r
    r.stop()


def test_with_a_queue_secrets_are_refused(start, redis, tmp_path):
    s = start("--queue", redis.url, "--timeout", "5", *RULES)
    for route, extra in (("/v1/runs", {"code": "print(1)"}), ("/v1/sessions", {})):
        r = s.request("POST", route, {**extra, "secrets": [secret("GH")]})
        assert r.code == 501, r.body
        assert b"Redis" in r.body
        no_value_in(r.body)
    # A keys file with secrets: serve does not start, naming the key.
    path, _ = keys_with_secrets(tmp_path, [secret("GH", value=KEY_VALUE)])
    rc, out = start_refused(["--keys", path, "--queue", redis.url, *RULES])
    assert rc != 0 and "alice" in out and "--queue" in out
    no_value_in(out)


# ---- end to end, through the proxy (needs the proxy, the library and the CLI) ----

def make_ca(d):
    """A CA and a certificate for localhost signed by it: (ca.pem, cert, key)."""
    run = lambda *a: subprocess.run(a, check=True, capture_output=True, cwd=d)
    run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
        "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=aj test CA")
    run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", "srv.key", "-out", "srv.csr", "-subj", "/CN=localhost")
    with open(os.path.join(d, "ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost\n")
    run("openssl", "x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "srv.pem", "-days", "2", "-extfile", "ext")
    return tuple(os.path.join(d, n) for n in ("ca.pem", "srv.pem", "srv.key"))


class Origin:
    """A loopback HTTPS origin: answers 200 "authorized" when the request
    carries Authorization: Bearer VALUE, 401 otherwise, echoing the header
    it got (the proxy must mask the value in what the program reads)."""

    def __init__(self, cert, key):
        seen = self.seen = []

        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                auth = self.headers.get("Authorization", "")
                seen.append(auth)
                ok = auth == "Bearer " + VALUE
                body = (("authorized " if ok else "refused ") + auth).encode()
                self.send_response(200 if ok else 401)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.t = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.t.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def origin():
    d = tempfile.mkdtemp(prefix="aj-secrets-ca-")
    ca, cert, key = make_ca(d)
    o = Origin(cert, key)
    o.ca = ca
    yield o
    o.stop()


def fetch_https(port):
    return ("import urllib.request, urllib.error\n"
            "try:\n"
            f"    r = urllib.request.urlopen('https://localhost:{port}/repos/acme/x', timeout=10)\n"
            "    print(r.status, r.read().decode())\n"
            "except urllib.error.HTTPError as e:\n"
            "    print(e.code, e.read().decode())\n"
            "except Exception as e:\n"
            "    print('failed', type(e).__name__)\n")


def proxy_args(origin):
    return ("--allow-host", f"localhost:{origin.port}",
            "--allow-cidr", f"127.0.0.1/32:{origin.port}", "--egress-ca", origin.ca,
            # The program trusts the origin's CA too: without a secret its
            # tunnel is end to end, and it verifies the origin itself.
            "--trust-ca", origin.ca)


def test_needs_the_proxy_a_request_secret_is_injected(start, origin, tmp_path):
    s = start("--timeout", "20", *proxy_args(origin), "--access-log",
              str(tmp_path / "access.log"))
    gh = secret("GH", hosts=[f"localhost:{origin.port}"])
    r = s.request("POST", "/v1/runs", {"code": fetch_https(origin.port), "secrets": [gh]})
    assert r.code == 200, r.body
    body = r.json()
    assert body["stdout"].startswith("200 authorized"), body
    no_value_in(r.body)  # the echo masked by the proxy
    assert origin.seen[-1] == "Bearer " + VALUE
    assert body["egress"]["injections"] == {"GH": 1}
    assert any(c.get("secrets") == ["GH"] for c in body["egress"]["connections"])
    m = s.metrics()
    assert m['agentjail_egress_injections_total{secret="GH"}'] == 1
    # Without the secret the origin refuses: nothing is put in by default.
    r = s.request("POST", "/v1/runs", {"code": fetch_https(origin.port)})
    assert r.json()["stdout"].startswith("401")
    s.stop()
    no_value_in("".join(s.stderr), (tmp_path / "access.log").read_text())


def test_needs_the_proxy_a_secret_never_widens_egress(start, origin):
    # The secret names the origin, but the request dropped the rules
    # that admit it: no connection, no injection.
    s = start("--timeout", "20", *proxy_args(origin))
    gh = secret("GH", hosts=[f"localhost:{origin.port}"])
    # The address rule stays, so the run has egress; the name the secret
    # is for is no longer listed, and the proxy refuses it.
    r = s.request("POST", "/v1/runs", {"code": fetch_https(origin.port), "secrets": [gh],
                                       "allow_hosts": []})
    assert r.code == 200, r.body
    assert r.json()["stdout"].startswith("failed"), r.json()
    assert not origin.seen


def test_needs_the_proxy_server_key_and_request_secrets_join(start, origin, tmp_path):
    srv = tmp_path / "secrets.json"
    srv.write_text(json.dumps([secret("SRV", value=VALUE,
                                      hosts=[f"localhost:{origin.port}"])]))
    srv.chmod(0o600)  # the CLI refuses a secrets file others can read
    path = tmp_path / "keys.json"
    out = add_key(path, "alice", "--metrics")
    doc = json.loads(path.read_text())
    doc["keys"][0]["secrets"] = [secret("SRV", value=KEY_VALUE,
                                        hosts=[f"localhost:{origin.port}"])]
    path.write_text(json.dumps(doc))
    # The key's SRV clashes with the server's: serve does not start.
    rc, msg = start_refused(["--keys", str(path), "--secrets", str(srv), *proxy_args(origin)])
    assert rc != 0 and "alice" in msg and "SRV" in msg
    no_value_in(msg)
    doc["keys"][0]["secrets"][0]["name"] = "KEYS"
    path.write_text(json.dumps(doc))
    s = start("--timeout", "20", "--secrets", str(srv), *proxy_args(origin), keys=str(path))
    s.key = key_token(out)
    # A placeholder secret (no header): the program writes AJ_SECRET_REQ.
    r = s.request("POST", "/v1/sessions", {"secrets": [{
        "name": "REQ", "value": VALUE, "hosts": [f"localhost:{origin.port}"],
        "placeholder": True}]})
    assert r.code == 201, r.body
    assert sorted(r.json()["secrets"]) == ["KEYS", "REQ", "SRV"]
    sid = r.json()["id"]
    r = s.request("POST", f"/v1/sessions/{sid}/egress", {"secrets": ["SRV"]})
    assert r.code == 200 and r.json()["secrets"] == ["SRV"]
    r = s.request("POST", f"/v1/sessions/{sid}/runs", {"code": fetch_https(origin.port)})
    assert r.json()["stdout"].startswith("200 authorized"), r.body
    no_value_in(r.body)
    s.request("DELETE", f"/v1/sessions/{sid}")
