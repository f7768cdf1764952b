"""Per-key limits and back-pressure: runs per minute, runs at once, a
bounded queue that answers 429 with Retry-After, and keys that do not
share each other's budget."""
import threading

from conftest import wait_for, add_key



def test_runs_per_minute(start, tmp_path):
    keys = tmp_path / "keys.json"
    slow = add_key(keys, "slow", "--runs-per-minute", "3")
    other = add_key(keys, "other", "--metrics")
    s = start(keys=str(keys))
    for _ in range(3):
        assert s.run("print(1)", key=slow).code == 200
    r = s.run("print(1)", key=slow)
    assert r.code == 429
    assert r.json()["error"]["code"] == "rate_limited"
    # 3 a minute: the next token is 20 s away at most.
    assert 1 <= int(r.headers["Retry-After"]) <= 20
    # Another key's budget is its own.
    assert s.run("print(1)", key=other).code == 200
    m = s.metrics(key=other)
    assert m['agentjail_refused_total{reason="rate_limit"}'] == 1


def test_concurrency_per_key_queues_the_rest(start, tmp_path):
    keys = tmp_path / "keys.json"
    one = add_key(keys, "one", "--concurrency", "1")
    watcher = add_key(keys, "watcher", "--metrics")
    s = start("--concurrency", "4", keys=str(keys))
    results = []

    def call():
        results.append(s.run("import time; time.sleep(1.5); print('ran')", key=one))

    threads = [threading.Thread(target=call) for _ in range(2)]
    for t in threads:
        t.start()
    # With room for four runs, the key's own limit keeps one waiting.
    seen = wait_for(lambda: (lambda m: m["agentjail_runs_running"] == 1
                             and m["agentjail_queue_depth"] == 1)(s.metrics(key=watcher)))
    for t in threads:
        t.join()
    assert seen, "the second run of a concurrency-1 key did not wait its turn"
    assert [r.json()["stdout"] for r in results] == ["ran\n", "ran\n"]


def test_a_full_queue_answers_429_with_retry_after(start):
    s = start("--concurrency", "1", "--queue-size", "1")
    results = {}

    def call(name):
        results[name] = s.run("import time; time.sleep(2); print('%s')" % name)

    a = threading.Thread(target=call, args=("a",))
    a.start()
    assert wait_for(lambda: s.metrics()["agentjail_runs_running"] == 1)
    b = threading.Thread(target=call, args=("b",))
    b.start()
    assert wait_for(lambda: s.metrics()["agentjail_queue_depth"] == 1)
    r = s.run("print('c')")
    assert r.code == 429
    assert r.json()["error"]["code"] == "queue_full"
    assert int(r.headers["Retry-After"]) >= 1
    a.join()
    b.join()
    # The queued run was not dropped: it ran after the first.
    assert results["a"].json()["stdout"] == "a\n"
    assert results["b"].json()["stdout"] == "b\n"
    assert s.metrics()['agentjail_refused_total{reason="queue_full"}'] == 1


def test_a_run_that_waits_too_long_gets_503(start):
    s = start("--concurrency", "1", "--max-wait", "0.5")
    first = []
    t = threading.Thread(target=lambda: first.append(s.run("import time; time.sleep(3)")))
    t.start()
    assert wait_for(lambda: s.metrics()["agentjail_runs_running"] == 1)
    r = s.run("print(1)")
    assert r.code == 503 and r.json()["error"]["code"] == "queue_timeout"
    assert r.headers["Retry-After"]
    t.join()
    assert first[0].code == 200


def test_bad_keys_files_are_refused_at_start(tmp_path):
    import subprocess
    from conftest import AGENTJAIL
    cases = {
        "not json": "keys.json",
        '{"keys": [{"name": "a"}]}': "keys[0].sha256",
        '{"keys": [{"name": "a b", "sha256": "%s"}]}' % ("0" * 64): "may hold only",
        '{"keys": [{"name": "a", "sha256": "%s", "concurrency": 0}]}' % ("0" * 64):
            "keys[0].concurrency",
        '{"keys": [{"name": "a", "sha256": "%s", "extra": 1}]}' % ("0" * 64):
            "unknown field 'extra'",
        '{"keys": []}': "holds no key",
        '{"keys": [], "admin": true}': "unknown key 'admin'",
    }
    for text, expect in cases.items():
        f = tmp_path / "keys.json"
        f.write_text(text)
        r = subprocess.run([AGENTJAIL, "serve", "--listen", "127.0.0.1:0", "--keys", str(f)],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 2, text
        assert expect in r.stderr, (text, r.stderr)
