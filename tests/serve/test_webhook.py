"""Completion webhooks of background runs: a key's webhook secret (made,
shown once, rotated), the allow-list (400 bad_webhook, nothing sent), and
the signed POST at a run's end to receivers this test starts on loopback."""
import hashlib
import hmac
import http.server
import json
import re
import socket
import subprocess
import threading
import time

import pytest

from conftest import AGENTJAIL, UID_BASE, STATE_DIR, add_key, wait_for


def keys(*args):
    return subprocess.run([AGENTJAIL, "keys", *args], capture_output=True, text=True)


def file_secret(path, name):
    return next(k for k in json.loads(path.read_text())["keys"]
                if k["name"] == name).get("webhook_secret")


def test_keys_add_makes_a_webhook_secret_shown_once_and_rotated(tmp_path):
    f = tmp_path / "keys.json"
    r = keys("add", "--file", str(f), "alice")
    assert r.returncode == 0
    # stdout is the key alone, as the scripts that read it expect.
    assert r.stdout.strip().startswith("aj_") and len(r.stdout.split()) == 1
    secret = file_secret(f, "alice")
    assert secret.startswith("ajwh_") and len(secret) == 48
    assert f"webhook secret (for the receivers of its runs' webhooks): {secret}" in r.stderr
    assert keys("add", "--file", str(f), "bob").returncode == 0
    assert file_secret(f, "bob") != secret
    r = keys("webhook-secret", "--file", str(f), "alice")
    assert r.returncode == 0
    new = r.stdout.strip()
    assert new.startswith("ajwh_") and new != secret and file_secret(f, "alice") == new
    assert "alice" in keys("list", "--file", str(f)).stdout
    r = keys("webhook-secret", "--file", str(f), "carol")
    assert r.returncode == 1 and "no key named 'carol'" in r.stderr


def old_keys_file(tmp_path):
    """A keys file written before webhooks: its key has no secret."""
    f = tmp_path / "keys.json"
    token = add_key(f, "old")
    data = json.loads(f.read_text())
    del data["keys"][0]["webhook_secret"]
    f.write_text(json.dumps(data))
    f.chmod(0o600)
    return f, token


def test_an_older_keys_file_still_loads(tmp_path, start):
    f, token = old_keys_file(tmp_path)
    lines = keys("list", "--file", str(f)).stdout.splitlines()
    assert lines[0].split()[-1] == "WEBHOOK" and lines[1].split()[-1] == "none"
    s = start(keys=str(f))
    assert s.run("print(1)", key=token).code == 200
    # A bad secret in the file names the entry.
    data = json.loads(f.read_text())
    data["keys"][0]["webhook_secret"] = "short"
    f.write_text(json.dumps(data))
    r = subprocess.run([AGENTJAIL, "serve", "--keys", str(f), "--listen", "127.0.0.1:0"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "keys[0].webhook_secret" in r.stderr


@pytest.mark.parametrize("prefix, why", [
    ("https://user:pw@hooks.example.com/", "user name or password"),
    ("https://hooks.example.com/?q=1", "no ?query"),
    ("https://hooks.example.com/#x", "fragment"),
])
def test_serve_refuses_a_bad_allow_prefix(prefix, why):
    r = subprocess.run([AGENTJAIL, "serve", "--listen", "127.0.0.1:0", "--webhook-allow",
                        prefix], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and why in r.stderr and "--webhook-allow" in r.stderr


def test_serve_refuses_a_prefix_bound_to_no_key(tmp_path):
    # A typo in NAME would allow nothing, silently: serve names it and stops.
    f = tmp_path / "keys.json"
    add_key(f, "alice")
    r = subprocess.run([AGENTJAIL, "serve", "--listen", "127.0.0.1:0", "--keys", str(f),
                        "--webhook-allow", "alcie=http://127.0.0.1:9/"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "bound to 'alcie', which no key" in r.stderr, r.stderr


def test_without_a_keys_file_the_key_has_a_webhook_secret():
    p = subprocess.Popen([AGENTJAIL, "serve", "--listen", "127.0.0.1:0", "--uid-base",
                          str(UID_BASE), "--state-dir", STATE_DIR],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        seen = {}
        while "AGENTJAIL_URL" not in seen:
            line = p.stdout.readline()
            assert line, "serve ended before it listened"
            k, _, v = line.strip().partition("=")
            seen[k] = v
        assert seen["AGENTJAIL_KEY"].startswith("aj_")
        assert seen["AGENTJAIL_WEBHOOK_SECRET"].startswith("ajwh_")
    finally:
        p.terminate()
        p.wait(timeout=60)


# ---- deliveries ----

class Receiver:
    """An HTTP server on loopback that records every POST and answers
    each with the next of codes (the last repeats); 3xx with location."""

    def __init__(self, codes=(200,), location=None, port=0):
        self.codes, self.location, self.got = list(codes), location, []
        self.cv = threading.Condition()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with outer.cv:
                    i = len(outer.got)
                    outer.got.append((dict(self.headers), body))
                    outer.cv.notify_all()
                code = outer.codes[min(i, len(outer.codes) - 1)]
                self.send_response(code)
                if outer.location:
                    self.send_header("Location", outer.location)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def wait(self, n, timeout=60):
        with self.cv:
            return self.cv.wait_for(lambda: len(self.got) >= n, timeout)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def receivers():
    made = []

    def make(*a, **kw):
        r = Receiver(*a, **kw)
        made.append(r)
        return r

    yield make
    for r in made:
        r.close()


def verify(headers, body, secret, max_age=300):
    """What a receiver does (docs/serve.md, Webhooks)."""
    ts = headers["X-Agentjail-Timestamp"]
    if abs(time.time() - int(ts)) > max_age:
        return False
    mac = hmac.new(secret.encode(), ts.encode() + b"." + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(headers["X-Agentjail-Signature"], "sha256=" + mac)


def keyed_server(start, tmp_path, *allow):
    f = tmp_path / "keys.json"
    token = add_key(f, "alice", "--metrics")
    args = ["--timeout", "10"]
    for a in allow:
        args += ["--webhook-allow", a]
    return start(*args, keys=str(f)), token, file_secret(f, "alice")


def background(s, token, webhook, code="print('done here')"):
    return s.request("POST", "/v1/runs", {"code": code, "background": True,
                                          "webhook": webhook}, key=token)


def test_a_background_run_posts_its_signed_record_after_two_503s(start, tmp_path, receivers):
    rcv = receivers(codes=(503, 503, 200))
    s, token, secret = keyed_server(start, tmp_path, rcv.url + "/hooks")
    r = background(s, token, rcv.url + "/hooks/agentjail?x=1")
    assert r.code == 202, r.body
    run_id = r.json()["id"]
    assert rcv.wait(3)
    for headers, body in rcv.got:
        assert headers["X-Agentjail-Run-Id"] == run_id
        assert headers["Content-Type"] == "application/json"
        assert verify(headers, body, secret)
        assert not verify(headers, body, "ajwh_" + "x" * 43)
        record = json.loads(body)
        assert record["id"] == run_id and record["state"] == "done"
        assert record["result"]["stdout"] == "done here\n"
    # A body changed on the way no longer verifies.
    headers, body = rcv.got[-1]
    assert not verify(headers, body.replace(b"done here", b"DONE HERE"), secret)
    # Delivered on the third: each attempt was logged, and no fourth comes
    # (the log says delivered before the server stops).
    assert wait_for(lambda: any("attempt 3 of 6: HTTP 200: delivered" in l for l in s.stderr))
    assert any("attempt 1 of 6: HTTP 503: next in 1 s" in l for l in s.stderr)
    assert len(rcv.got) == 3
    # /metrics counts each attempt by its outcome.
    m = s.metrics(key=token)
    assert m['agentjail_webhook_attempts_total{outcome="delivered"}'] == 1
    assert m['agentjail_webhook_attempts_total{outcome="failed"}'] == 2
    assert m['agentjail_webhook_attempts_total{outcome="given_up"}'] == 0
    # Stopped cleanly: the test build's LeakSanitizer would make it exit 23.
    assert s.stop() == 0


def test_a_receiver_not_listening_at_first_gets_the_retry(start, tmp_path):
    # A port free a moment ago: nothing listens there for the first
    # attempt, and the receiver starts on it only once that attempt is
    # logged as refused.
    probe = Receiver()
    port = probe.port
    probe.close()
    # (Another process could take the port meanwhile; then Receiver(port=)
    # below fails with EADDRINUSE, a fact of the machine, not of serve.)
    s, token, secret = keyed_server(start, tmp_path, f"http://127.0.0.1:{port}/")
    r = background(s, token, f"http://127.0.0.1:{port}/hook")
    assert r.code == 202
    assert wait_for(lambda: any("attempt 1 of 6" in l and "next in 1 s" in l
                                for l in s.stderr))
    rcv = Receiver(port=port)
    try:
        assert rcv.wait(1)
        assert verify(*rcv.got[0], secret)
        # Whichever later attempt finds it listening delivers (a slow
        # machine may start the receiver after the second attempt).
        assert wait_for(lambda: any(re.search(r"attempt [2-6] of 6: HTTP 200: delivered", l)
                                    for l in s.stderr), timeout=60)
    finally:
        rcv.close()


def test_a_url_outside_the_allow_list_is_400_and_nothing_is_sent(start, tmp_path, receivers):
    rcv = receivers()
    s, token, _ = keyed_server(start, tmp_path, rcv.url + "/hooks")
    other = receivers()
    for url, why in [(other.url + "/hooks", "not under"),
                     (rcv.url + "/hooks2", "not under"),
                     (rcv.url + "/hooks/../admin", "not under"),
                     (f"http://user:pw@127.0.0.1:{rcv.port}/hooks", "user name or password"),
                     (f"http://127.0.0.1:{rcv.port}@127.0.0.1:{other.port}/hooks",
                      "user name or password"),
                     (rcv.url + "/hooks#frag", "fragment"),
                     ("file:///etc/passwd", "only http")]:
        r = background(s, token, url)
        assert r.code == 400, (url, r.body)
        err = r.json()["error"]
        assert err["code"] == "bad_webhook" and why in err["message"], (url, err)
    # A run that went ahead shows nothing else was sent meanwhile.
    r = background(s, token, rcv.url + "/hooks/ok")
    assert r.code == 202 and rcv.wait(1)
    assert len(rcv.got) == 1 and other.got == []
    assert json.loads(rcv.got[0][1])["id"] == r.json()["id"]


def test_a_key_without_a_secret_or_a_server_without_an_allow_list_refuses(start, tmp_path,
                                                                           receivers):
    rcv = receivers()
    f, token = old_keys_file(tmp_path)
    s = start("--webhook-allow", rcv.url + "/", keys=str(f))
    r = background(s, token, rcv.url + "/hook")
    assert r.code == 400 and r.json()["error"]["code"] == "bad_webhook"
    assert "agentjail keys webhook-secret old" in r.json()["error"]["message"]
    t = start()
    r = background(t, t.key, rcv.url + "/hook")
    assert r.code == 400 and "takes no webhooks" in r.json()["error"]["message"]
    assert rcv.got == []


def test_a_redirect_is_not_followed(start, tmp_path, receivers):
    target = receivers()
    rcv = receivers(codes=(302, 200), location=target.url + "/elsewhere")
    s, token, _ = keyed_server(start, tmp_path, rcv.url + "/")
    assert background(s, token, rcv.url + "/hook").code == 202
    # The second attempt comes once the first one's answer was read whole:
    # had the redirect been followed, the target would have it by then.
    assert rcv.wait(2)
    assert target.got == []
    assert any("HTTP 302 (a redirect, not followed)" in l for l in s.stderr)


# ---- one key's receiver against another's ----

class Sink:
    """A receiver that takes connections (the kernel's backlog) and never
    reads nor answers: each POST to it waits for serve's timeout."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(512)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def close(self):
        self.sock.close()


def submit(s, token, webhook):
    """A background run, retried while serve's queue is full: its id."""
    got = []

    def once():
        r = background(s, token, webhook, code="pass")
        if r.code == 202:
            got.append(r.json()["id"])
            return True
        assert r.code in (429, 503), r.body
        return False

    assert wait_for(once, timeout=120)
    return got[0]


def test_one_keys_hung_receiver_does_not_silence_another_keys(start, tmp_path, receivers):
    sink = Sink()
    try:
        rcv = receivers()
        f = tmp_path / "keys.json"
        alice, bob = add_key(f, "alice"), add_key(f, "bob")
        s = start("--timeout", "10", "--queue-size", "256",
                  "--webhook-allow", f"alice={sink.url}/",
                  "--webhook-allow", f"bob={rcv.url}/", keys=str(f))
        # A prefix bound to a key is that key's alone.
        r = background(s, bob, sink.url + "/hook")
        # Another key's prefix answers as none at all.
        assert r.code == 400 and "not under any URL" in r.body.decode(), r.body
        r = background(s, alice, rcv.url + "/hook")
        assert r.code == 400 and "not under any URL" in r.body.decode(), r.body
        # More of alice's webhooks than her share, to a receiver that never
        # answers, around bob's one.
        for _ in range(8):
            submit(s, alice, sink.url + "/hook")
        bob_run = submit(s, bob, rcv.url + "/hook")
        for _ in range(70):
            submit(s, alice, sink.url + "/hook")
        assert rcv.wait(1, timeout=120)
        assert json.loads(rcv.got[0][1])["id"] == bob_run
        assert not any(bob_run in l and "dropped" in l for l in s.stderr)
        assert wait_for(lambda: any("more than 64 deliveries of key 'alice' pending" in l
                                    for l in s.stderr), timeout=120)
    finally:
        sink.close()
