"""SIGTERM: runs in progress and queued finish, new ones are refused with
503, and the server exits 0 with nothing left behind."""
import signal
import threading
import time
import urllib.error


def test_sigterm_finishes_runs_and_refuses_new_ones(start):
    s = start("--concurrency", "1")
    results = []

    def call(code):
        results.append(s.run(code))

    running = threading.Thread(target=call, args=("import time; time.sleep(2); print('done')",))
    running.start()
    deadline = time.monotonic() + 20
    while s.metrics()["agentjail_runs_running"] != 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    queued = threading.Thread(target=call, args=("print('queued too')",))
    queued.start()
    while s.metrics()["agentjail_queue_depth"] != 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    s.proc.send_signal(signal.SIGTERM)
    # Draining: health says so, and a new run is refused, not started.
    while time.monotonic() < deadline:
        try:
            h = s.request("GET", "/v1/health", key=None, timeout=5)
        except (urllib.error.URLError, ConnectionError):
            break
        if h.code == 503:
            assert h.json()["status"] == "draining"
            r = s.run("print('late')", )
            assert r.code == 503 and r.json()["error"]["code"] == "shutting_down"
            break
        time.sleep(0.02)
    running.join()
    queued.join()
    outs = sorted(r.json()["stdout"] for r in results)
    assert outs == ["done\n", "queued too\n"]
    assert s.proc.wait(timeout=30) == 0
    assert any("finishing the runs" in line for line in s.stderr)
