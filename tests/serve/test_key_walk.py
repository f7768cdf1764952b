"""Keys: another key's run, session, events or files answer exactly as an
unknown id does. Key A makes a session (with a file), a recorded run, a
session call recorded under a run id and a run still going; key B then
walks every route of serve's API on A's ids, and each answer must be byte
for byte the answer to the same route on an id nobody has (status, body
with the id swapped, and the headers a client reads), and leave A's things
as they were. For the local backend and for the queue's."""
import secrets

import pytest

from conftest import Stream, add_key, wait_for
from test_queue import redis, serve, workers  # noqa: F401 (fixtures)

# (method, path, body, headers); {session}, {run}, {call} and {going} are
# A's ids: a session, a recorded run that ended, a recorded session call,
# a background run still going and a checkpoint.
ROUTES = [
    ("GET", "/v1/runs/{run}", None, {}),
    ("DELETE", "/v1/runs/{run}", None, {}),
    ("GET", "/v1/runs/{going}", None, {}),
    ("DELETE", "/v1/runs/{going}", None, {}),
    ("GET", "/v1/runs/{call}", None, {}),
    ("DELETE", "/v1/runs/{call}", None, {}),
    ("GET", "/v1/runs/{run}/events", None, {"Accept": "application/json"}),
    ("GET", "/v1/runs/{run}/events", None, {"Accept": "text/event-stream"}),
    ("GET", "/v1/runs/{run}/events?after=1", None, {"Accept": "application/json"}),
    ("GET", "/v1/runs/{run}/events?after=999", None, {"Accept": "application/json"}),
    ("GET", "/v1/runs/{run}/events", None, {"Last-Event-ID": "999"}),
    ("GET", "/v1/runs/{going}/events", None, {"Accept": "text/event-stream"}),
    ("GET", "/v1/runs/{call}/events", None, {"Accept": "application/json"}),
    ("GET", "/v1/runs?before={run}", None, {}),
    ("GET", "/v1/runs?before={run}&limit=1", None, {}),
    ("PATCH", "/v1/runs/{run}", None, {}),
    ("POST", "/v1/runs/{run}/events", None, {}),
    ("GET", "/v1/runs/{run}/other", None, {}),
    ("POST", "/v1/sessions/{session}/runs", {"code": "print(2)"}, {}),
    ("POST", "/v1/sessions/{session}/runs", {"code": "print(2)"},
     {"Accept": "text/event-stream"}),
    ("POST", "/v1/sessions/{session}/runs", {"bogus": 1}, {}),
    ("POST", "/v1/sessions/{session}/runs", {"code": "print(2)", "limits": {"timeout_sec": -1}},
     {}),
    ("GET", "/v1/sessions/{session}/runs", None, {}),
    ("POST", "/v1/sessions/{session}/egress", {"allow_hosts": []}, {}),
    ("POST", "/v1/sessions/{session}/egress", {"bogus": 1}, {}),
    ("PUT", "/v1/sessions/{session}/files/b.txt", b"from B", {}),
    ("GET", "/v1/sessions/{session}/files/a.txt", None, {}),
    ("GET", "/v1/sessions/{session}/files/missing.txt", None, {}),
    ("GET", "/v1/sessions/{session}/files/../etc/passwd", None, {}),
    ("GET", "/v1/sessions/{session}/files", None, {}),
    ("GET", "/v1/sessions/{session}/files?dir=.", None, {}),
    ("GET", "/v1/sessions/{session}/files?dir=nowhere", None, {}),
    ("POST", "/v1/sessions/{session}/files/a.txt", None, {}),
    ("DELETE", "/v1/sessions/{session}/files/a.txt", None, {}),
    ("GET", "/v1/sessions/{session}", None, {}),
    ("POST", "/v1/sessions/{session}", None, {}),
    ("GET", "/v1/sessions/{session}/nothing", None, {}),
    ("POST", "/v1/sessions/{session}/pause", None, {}),
    ("POST", "/v1/sessions/{session}/resume", None, {}),
    ("POST", "/v1/sessions/{session}/fork", {"count": 1}, {}),
    ("POST", "/v1/sessions/{session}/checkpoint", None, {}),
    ("GET", "/v1/checkpoints/{ckpt}", None, {}),
    ("DELETE", "/v1/checkpoints/{ckpt}", None, {}),
    ("POST", "/v1/checkpoints/{ckpt}", None, {}),
    ("DELETE", "/v1/sessions/{session}", None, {}),
]

# What a client reads of an answer besides its status and body.
HEADERS = ("Content-Type", "Allow", "Retry-After", "X-Run-Id", "Location", "WWW-Authenticate")


def answer(s, key, method, path, body, headers, swap=None):
    raw = isinstance(body, bytes)
    r = s.request(method, path, body, key=key, headers=headers, raw=raw, timeout=30)
    text = r.body
    for mine, unknown in (swap or {}).items():
        text = text.replace(mine.encode(), unknown.encode())
    hdrs = {h: r.headers.get(h) for h in HEADERS}
    for h in ("X-Run-Id", "Location"):
        for mine, unknown in (swap or {}).items():
            if hdrs[h]:
                hdrs[h] = hdrs[h].replace(mine, unknown)
    return r.code, text, hdrs


def make_things(s, alice):
    """A's session (holding a.txt), an ended recorded run, a recorded
    session call, a run still going and a checkpoint: {name: id}."""
    r = s.request("POST", "/v1/sessions", {}, key=alice)
    assert r.code == 201, r.body
    session = r.json()["id"]
    assert s.request("PUT", f"/v1/sessions/{session}/files/a.txt", b"from A", key=alice,
                     raw=True).code == 201
    r = s.request("POST", "/v1/runs", {"code": "print(1)", "background": True}, key=alice)
    assert r.code == 202, r.body
    run = r.json()["id"]
    assert wait_for(lambda: s.request("GET", f"/v1/runs/{run}", key=alice).json()["state"]
                    == "done", timeout=60)
    st = Stream(s, "POST", f"/v1/sessions/{session}/runs", {"code": "print(3)"}, key=alice)
    assert st.status == 200
    call = st.headers["X-Run-Id"]
    list(st.events())
    st.close()
    r = s.request("POST", "/v1/runs",
                  {"code": "import time; time.sleep(60)", "background": True}, key=alice)
    assert r.code == 202, r.body
    going = r.json()["id"]
    r = s.request("POST", f"/v1/sessions/{session}/checkpoint", None, key=alice)
    # With a queue none is kept (501): an id of the shape walks the routes.
    assert r.code in (201, 501), r.body
    ckpt = r.json()["id"] if r.code == 201 else secrets.token_hex(16)
    return {"session": session, "run": run, "call": call, "going": going, "ckpt": ckpt}


def leaks(s, bob, mine):
    """The routes whose answer to B on A's ids differs from the answer to
    B on ids nobody has."""
    unknown = {name: secrets.token_hex(len(v) // 2) for name, v in mine.items()}
    swap = {mine[n]: unknown[n] for n in mine}
    found = []
    for method, path, body, headers in ROUTES:
        theirs = answer(s, bob, method, path.format(**mine), body, headers, swap)
        nobodys = answer(s, bob, method, path.format(**unknown), body, headers)
        if theirs != nobodys:
            found.append((method, path, headers, theirs, nobodys))
    return found


def walk(s, alice, bob):
    mine = make_things(s, alice)
    going = f"/v1/runs/{mine['going']}"
    try:
        assert leaks(s, bob, mine) == []
        # And B changed nothing of A's.
        r = s.request("GET", f"/v1/sessions/{mine['session']}/files/a.txt", key=alice)
        assert r.code == 200 and r.body == b"from A"
        r = s.request("GET", f"/v1/sessions/{mine['session']}/files/b.txt", key=alice)
        assert r.code == 404
        assert s.request("GET", going, key=alice).json()["state"] != "done"
        r = s.request("GET", f"/v1/checkpoints/{mine['ckpt']}", key=alice)
        assert r.code in (200, 501), r.body
        assert s.request("DELETE", going, key=alice).code == 202
        assert s.request("DELETE", f"/v1/sessions/{mine['session']}", key=alice).code == 204
    finally:
        s.request("DELETE", going, key=alice)
        assert wait_for(lambda: s.request("GET", going, key=alice).json()["state"] == "done",
                        timeout=60)


@pytest.fixture
def two_keys(tmp_path):
    f = tmp_path / "keys.json"
    return str(f), add_key(f, "alice"), add_key(f, "bob")


def test_another_keys_ids_answer_as_unknown_ones(start, two_keys):
    f, alice, bob = two_keys
    s = start("--timeout", "90", "--cpu", "90", keys=f)
    walk(s, alice, bob)


def test_another_keys_ids_answer_as_unknown_ones_on_the_queue(start, redis, workers,  # noqa: F811
                                                              two_keys):
    f, alice, bob = two_keys
    workers("w-walk", "--timeout", "90", "--cpu", "90")
    s = serve(start, redis, "--timeout", "90", "--cpu", "90", keys=f)
    walk(s, alice, bob)
