"""The runs budget is one rule (src/serve/runs/budget.h) kept by both run
stores: serve's memory (local) and Redis beside the queue (remote), where it
runs inside a Lua script. One table of steps goes through each, and each
must keep and refuse alike: a key's ended records go oldest first, only when
a new record needs the room; its runs still going are never cut; and a key
whose live runs hold the budget is refused in the same words."""
import pytest

from conftest import wait_for, add_key
from test_queue import redis, workers  # noqa: F401  (fixtures)

# Each stream capped at 64 KiB: a live run reserves 4 x 64 KiB (its events
# and the result's copy of them) plus a record's cost, so four live runs
# pass a budget of 1 MiB and three do not.
LIMITS = ("--timeout", "60", "--cpu", "60", "--output", "64")
PRINTS = "import sys\nsys.stdout.write('x' * 40000)\n"
WAITS = "import time\ntime.sleep(50)\n"
RUNS = 16  # each ended record holds ~80 KB: the last ones need the first ones' room


@pytest.fixture(params=["local", "remote"])
def store(request, start, tmp_path):
    path = tmp_path / "keys.json"
    key = add_key(path, "alice")
    if request.param == "local":
        s = start(*LIMITS, "--runs-budget-mb", "1", keys=str(path))
    else:
        r = request.getfixturevalue("redis")
        request.getfixturevalue("workers")("w-budget", *LIMITS, "--concurrency", "2")
        s = start("--queue", r.url, *LIMITS, "--runs-budget-mb", "1", keys=str(path))
    return s, key


def state(s, key, run_id):
    r = s.request("GET", f"/v1/runs/{run_id}", key=key)
    return r.json()["state"] if r.code == 200 else None


def test_ended_records_go_oldest_first(store):
    s, key = store
    ids = []
    for _ in range(RUNS):
        r = s.request("POST", "/v1/runs", {"code": PRINTS, "background": True}, key=key)
        assert r.code == 202, r.body
        ids.append(r.json()["id"])
        assert wait_for(lambda: state(s, key, ids[-1]) in ("done", None), timeout=90)
        kept = [state(s, key, i) is not None for i in ids]
        # What is kept is always the newest records: none is dropped
        # while an older one stays.
        assert kept == sorted(kept), kept
        assert kept[-1]
    # The budget made room: the first records went for the last ones.
    assert not kept[0] and sum(kept) >= 3


def test_live_runs_are_never_cut_and_the_refusal_reads_alike(store):
    s, key = store
    live = []
    for _ in range(3):
        r = s.request("POST", "/v1/runs", {"code": WAITS, "background": True}, key=key)
        assert r.code == 202, r.body
        live.append(r.json()["id"])
    r = s.request("POST", "/v1/runs", {"code": "print(1)", "background": True}, key=key)
    assert r.code == 429 and r.json()["error"]["code"] == "runs_budget"
    assert r.json()["error"]["message"] == (
        "key 'alice' holds its runs budget (1 MiB) in runs still going; retry when one ends")
    # None of the live ones was cut to make room.
    assert all(state(s, key, i) in ("queued", "running") for i in live)
    for i in live:
        assert s.request("DELETE", f"/v1/runs/{i}", key=key).code == 202
    assert wait_for(lambda: all(state(s, key, i) == "done" for i in live), timeout=90)
    # Ended, their holds are their actual bytes: room again.
    assert s.request("POST", "/v1/runs", {"code": "print(1)", "background": True},
                     key=key).code == 202
