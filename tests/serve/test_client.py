"""agentjail.ServeClient against a real serve: callbacks as the output
comes, stream(), background runs through a handle reopened in another
process, resuming after a dropped connection, cancelling."""
import json
import os
import socket
import subprocess
import sys
import threading

import pytest

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "python"))
import agentjail  # noqa: E402
from agentjail import OutputEvent, RemoteRunHandle, ServeClient, ServeError, Status  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "python", "tests"))
from gate import GATE  # noqa: E402


@pytest.fixture
def gated(start, tmp_path):
    """(client, open_gate): a serve whose runs see tmp_path at /mnt/gate."""
    tmp_path.chmod(0o755)
    s = start("--timeout", "30", "--cpu", "10", "--ro-bind", f"{tmp_path}:/mnt/gate")
    return ServeClient(s.url, s.key), lambda: (tmp_path / "go").touch()


def test_run_calls_back_before_the_run_ends(gated):
    client, open_gate = gated
    out, err = [], []

    def on_stdout(text):
        if not out:
            open_gate()  # the program waits for this: its first output came first
        out.append(text)
    ex = client.run(GATE + "print('first', flush=True)\nprint(gate())\n"
                    "print('é', file=sys.stderr)\n", on_stdout=on_stdout, on_stderr=err.append)
    assert ex.status is Status.OK
    assert "".join(out) == ex.stdout == "first\nsaw the gate\n"
    assert "".join(err) == ex.stderr == "é\n"
    # Without a callback: serve's plain answer.
    assert client.run("print(6 * 7)").stdout == "42\n"


def test_stream_then_the_execution_and_early_close_cancels(gated):
    client, open_gate = gated
    items = []
    with client.stream(GATE + "print('first', flush=True)\nprint(gate())\n") as events:
        for ev in events:
            if not items:
                open_gate()
            items.append(ev)
    assert items[-1].ok and all(isinstance(e, OutputEvent) for e in items[:-1])
    ids = [e.id for e in items[:-1]]
    assert ids == sorted(ids) and ids[0] == 1
    assert "".join(e.text for e in items[:-1]) == "first\nsaw the gate\n"

    events = client.stream("import time\nprint('go', flush=True)\ntime.sleep(60)\n")
    assert next(events).text.startswith("go")
    run_id = events.run_id
    events.close()
    h = RemoteRunHandle(client, run_id)
    ex = h.wait(timeout=60)
    assert ex.status is Status.KILLED
    # The fixture checks that no process of the run is left.


REOPEN = r'''
import json, sys
sys.path.insert(0, sys.argv[1])
from agentjail import RemoteRunHandle, ServeClient
client = ServeClient(sys.argv[2], sys.argv[3])
h = RemoteRunHandle.open(client, sys.argv[4])
ex = h.wait(timeout=60)
events = list(h.events(from_id=1))
print(json.dumps({"stdout": ex.stdout, "rest": "".join(e.text for e in events[:-1]),
                  "last": events[-1].stdout}))
'''


def test_submit_and_reopen_in_another_process(gated):
    client, open_gate = gated
    h = client.submit(GATE + "print('first', flush=True)\nprint(gate())\n")
    assert len(h.id) == 32 and h.state() in ("queued", "running")
    first = next(h.events())
    assert first.id == 1 and first.text.startswith("first")
    assert h.state() == "running"  # at its gate
    open_gate()
    r = subprocess.run([sys.executable, "-c", REOPEN, os.path.join(ROOT, "python"),
                        client.url, client.key, h.id], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["stdout"] == out["last"] == "first\nsaw the gate\n"
    assert first.text + out["rest"] == out["stdout"]
    assert h.wait().ok and h.done()
    runs, _ = client.runs()
    assert h.id in [r["id"] for r in runs]
    with pytest.raises(ServeError) as e:
        RemoteRunHandle.open(client, "0" * 32)
    assert e.value.status == 404 and e.value.code == "no_such_run"
    with pytest.raises(ServeError) as e:
        RemoteRunHandle.open(ServeClient(client.url, "aj_not_a_key"), h.id)
    assert e.value.status == 401

    h = client.submit("import time\nprint('go', flush=True)\ntime.sleep(60)\n")
    ev0 = next(h.events())
    # When it is not the output, all the result says of how the run ended.
    assert isinstance(ev0, OutputEvent) and ev0.text.startswith("go"), (
        repr(ev0), *(getattr(ev0, a, None) for a in
                      ("message", "signal", "stdout", "stderr", "wall_ms", "cpu_ms")))
    assert h.cancel() in ("running", "queued")
    assert h.wait(timeout=60).status is Status.KILLED


class CuttingProxy:
    """A loopback TCP proxy to serve that cuts the first `cuts` answers
    carrying an event stream after `after` bytes: a connection that drops
    mid-run."""

    def __init__(self, target, cuts=2, after=300):
        host, port = target.rsplit(":", 1)
        self.target = (host.split("//")[-1], int(port))
        self.cuts, self.after = cuts, after
        self.cut = 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            u = socket.create_connection(self.target)
            threading.Thread(target=self._pump, args=(c, u, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(u, c, True), daemon=True).start()

    def _pump(self, src, dst, answer):
        sent, cutting = 0, False
        try:
            while True:
                b = src.recv(4096)
                if not b:
                    break
                if answer and not cutting and b"text/event-stream" in b and self.cut < self.cuts:
                    cutting = True
                    self.cut += 1
                if cutting and sent + len(b) >= self.after:
                    dst.sendall(b[: max(self.after - sent, 0)])
                    break
                dst.sendall(b)
                sent += len(b)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self):
        self.sock.close()


def test_a_dropped_stream_resumes_without_gap_or_duplicate(start):
    s = start("--timeout", "30", "--cpu", "10")
    proxy = CuttingProxy(s.url, cuts=2, after=400)
    try:
        client = ServeClient(proxy.url, s.key)
        program = ("import sys, time\nfor i in range(60):\n"
                   "    sys.stdout.write(f'line {i} ' + 'é' * (i % 5) + '\\n'); sys.stdout.flush()\n"
                   "    time.sleep(0.01)\n")
        items = list(client.stream(program))
        assert proxy.cut == 2  # the POST's answer and one reopened stream were cut
        ex = items[-1]
        want = "".join(f"line {i} " + "é" * (i % 5) + "\n" for i in range(60))
        assert ex.stdout == want
        assert "".join(e.text for e in items[:-1]) == want
        ids = [e.id for e in items[:-1]]
        assert len(ids) == len(set(ids)) and ids == sorted(ids)
    finally:
        proxy.close()


def test_run_failures_name_the_problem():
    with pytest.raises(ValueError, match="not an http"):
        ServeClient("127.0.0.1:8080")
    # A port nobody listens on: a connection error, said as one.
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    with pytest.raises(ServeError) as e:
        ServeClient(f"http://127.0.0.1:{port}", "k").run("print(1)")
    assert e.value.status == 0 and e.value.code == "connection"
    assert agentjail.ServeError is ServeError


def test_env_per_run_on_every_way_in(start):
    s = start("--timeout", "10")
    client = ServeClient(s.url, s.key)
    show = "import os\nprint(os.environ.get('GREETING'))\n"
    assert client.run(show, env={"GREETING": "plain"}).stdout == "plain\n"
    out = []
    assert client.run(show, env={"GREETING": "streamed"}, on_stdout=out.append).ok
    assert "".join(out) == "streamed\n"
    assert client.submit(show, env={"GREETING": "background"}).wait().stdout == "background\n"
    assert client.run(show).stdout == "None\n"
    with pytest.raises(ServeError) as e:
        client.run(show, env={"LD_PRELOAD": "/workspace/x.so"})
    assert e.value.status == 400 and e.value.code == "bad_env"
    assert "LD_PRELOAD may not be set" in str(e.value)
