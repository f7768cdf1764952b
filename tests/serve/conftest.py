"""agentjail serve under test: the sanitizer build (build/test/agentjail,
which execs build/test/agentjail-serve beside it), started on a free
loopback port, talked to over plain HTTP with urllib.

Runs get uids from AJ_SERVE_UID_BASE (2150000000 unless set) so a process
of that range after a test is a run left behind; the autouse fixture
checks there is none."""
import base64
import json
import os
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
AGENTJAIL = os.environ.get("AJ_CLI", os.path.join(ROOT, "build", "test", "agentjail"))
UID_BASE = int(os.environ.get("AJ_SERVE_UID_BASE", "2150000000"))
STATE_DIR = f"/run/agentjail-serve-test-{UID_BASE}"
SLOTS = 64
# The servers started during the running test, whose stderr its report
# shows if it fails (a server's own words are what says why).
_started = []


def sandbox_pids(base=UID_BASE, slots=SLOTS):
    """The pids of processes whose uid is in base .. base + slots."""
    pids = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("Uid:"):
                        uid = int(line.split()[1])
                        if base <= uid < base + slots:
                            pids.append(int(p))
                        break
        except OSError:
            pass
    return pids


def left_behind(base=UID_BASE, slots=SLOTS):
    """The pids still in base .. base + slots once they had up to 30 s to
    go: a deadline only a process really left behind outlasts on a busy
    machine."""
    deadline = time.monotonic() + 30
    while sandbox_pids(base, slots) and time.monotonic() < deadline:
        time.sleep(0.05)
    return sandbox_pids(base, slots)


@pytest.fixture(autouse=True)
def nothing_left_behind():
    yield
    assert left_behind() == [], "a run's process outlived its request"


class Response:
    def __init__(self, code, headers, body):
        self.code, self.headers, self.body = code, headers, body

    def json(self):
        return json.loads(self.body)


class Server:
    """One agentjail serve process."""

    def __init__(self, *args, keys=None, env=None):
        cmd = [AGENTJAIL, "serve", "--listen", "127.0.0.1:0", "--uid-base", str(UID_BASE),
               "--state-dir", STATE_DIR, *args]
        # Checkpoints, and sessions paused at its stop, in a directory of
        # this server's own unless the test names one (a restart's).
        self.own_checkpoints = None
        if "--checkpoint-dir" not in args:
            import tempfile
            self.own_checkpoints = tempfile.mkdtemp(prefix="aj-serve-ckpt-")
            cmd += ["--checkpoint-dir", self.own_checkpoints]
        if keys:
            cmd += ["--keys", keys]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=env, text=True)
        self.key = None
        self.url = None
        while self.url is None:
            line = self.proc.stdout.readline()
            if not line:
                err = self.proc.stderr.read()
                raise RuntimeError(f"serve did not start: {err}")
            if line.startswith("AGENTJAIL_KEY="):
                self.key = line.strip().split("=", 1)[1]
            elif line.startswith("AGENTJAIL_URL="):
                self.url = line.strip().split("=", 1)[1]
        self.stderr = []
        self.stopped = False
        _started.append(self)
        # Keep draining stderr so the server never blocks writing it.
        self._t = threading.Thread(target=self._drain, daemon=True)
        self._t.start()

    def _drain(self):
        for line in self.proc.stderr:
            self.stderr.append(line)

    def request(self, method, path, body=None, key="default", headers=None, raw=False,
                timeout=60):
        data = None
        hdrs = dict(headers or {})
        if body is not None:
            data = body if raw else json.dumps(body).encode()
            hdrs.setdefault("Content-Type", "application/octet-stream" if raw
                            else "application/json")
        k = self.key if key == "default" else key
        if k:
            hdrs["Authorization"] = f"Bearer {k}"
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=hdrs)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return Response(r.status, r.headers, r.read())
        except urllib.error.HTTPError as e:
            return Response(e.code, e.headers, e.read())

    def run(self, code, key="default", **limits):
        body = {"code": code}
        if limits:
            body["limits"] = limits
        return self.request("POST", "/v1/runs", body, key=key)

    def metrics(self, key="default"):
        text = self.request("GET", "/metrics", key=key).body.decode()
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out

    def died(self):
        """Why the server ended on its own (a crash, a sanitizer's report),
        or None while it runs or when a test ended it: SIGTERM's exit is
        0, a test's SIGKILL -9."""
        code = self.proc.poll()
        if code is None or self.stopped or code in (0, -signal.SIGKILL, -signal.SIGTERM):
            return None
        return f"serve exited {code} on its own:\n" + "".join(self.stderr[-80:])

    def stop(self, timeout=60):
        self.stopped = True
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        finally:
            if self.own_checkpoints and self.proc.poll() is not None:
                import shutil
                shutil.rmtree(self.own_checkpoints, ignore_errors=True)


@pytest.fixture
def start():
    servers = []

    def _start(*args, **kw):
        s = Server(*args, **kw)
        servers.append(s)
        return s

    yield _start
    dead = [why for why in (s.died() for s in servers) if why]
    for s in servers:
        if s.proc.poll() is None:
            s.stop()
    assert not dead, "\n".join(dead)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test's report carries the stderr of the servers it started
    (the tail of each): a crash or a refusal logged there says why."""
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for i, s in enumerate(_started):
            state = "running" if s.proc.poll() is None else f"exited {s.proc.returncode}"
            report.sections.append((f"serve {i} ({state}) stderr",
                                    "".join(s.stderr[-60:])))
    if call.when == "teardown":
        _started.clear()


@pytest.fixture(scope="module")
def server():
    s = Server("--timeout", "5", "--cpu", "3", "--concurrency", "4")
    yield s
    assert s.stop() == 0


def wait_for(pred, timeout=20):
    """Polls pred until it holds (True) or timeout seconds pass (False):
    a state to reach, never a duration to assert."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return False


def add_key(path, name, *args):
    out = subprocess.run([AGENTJAIL, "keys", "add", "--file", str(path), name, *args],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


class Event:
    """One Server-Sent Event: its id (int), event name and data (JSON)."""

    def __init__(self, id, event, data):
        self.id, self.event, self.data = id, event, data

    def bytes(self):
        """A stdout/stderr event's bytes, as the program wrote them."""
        if "text" in self.data:
            return self.data["text"].encode()
        return base64.b64decode(self.data["base64"])


class Stream:
    """An answer read as it comes (http.client), for routes that stream
    Server-Sent Events; .events() yields them until the server ends."""

    def __init__(self, server, method, path, body=None, key="default", headers=None,
                 timeout=60):
        import http.client
        import urllib.parse
        u = urllib.parse.urlsplit(server.url)
        self.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
        hdrs = {"Accept": "text/event-stream", **(headers or {})}
        k = server.key if key == "default" else key
        if k:
            hdrs["Authorization"] = f"Bearer {k}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            hdrs["Content-Type"] = "application/json"
        self.conn.request(method, path, body=data, headers=hdrs)
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        self.headers = self.resp.headers
        self.retry = None
        self.comments = []

    def body(self):
        return self.resp.read()

    def events(self):
        fields = {}
        while True:
            line = self.resp.readline()
            if not line:
                return
            line = line.decode().rstrip("\n")
            if line == "":
                if "data" in fields:
                    # A run's ids are numbers; a background command's
                    # are its place, "OUT-ERR".
                    i = fields["id"]
                    yield Event(int(i) if i.isdigit() else i, fields.get("event", "message"),
                                json.loads(fields["data"]))
                fields = {}
            elif line.startswith(":"):
                self.comments.append(line)
            else:
                name, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if name == "retry":
                    self.retry = int(value)
                else:
                    fields[name] = value

    def close(self):
        self.conn.close()
