"""GET /v1/sessions: the calling key's open sessions, newest first, each
as POST /v1/sessions answered it (the same builder) with when it was
opened and last used, whether it is paused, its egress rules and its
secrets' names (never a value). Another key's sessions never appear; a
closed one leaves the list. With --queue: 501, naming why."""
import pytest

from conftest import add_key, wait_for
from test_queue import Redis
from test_secrets import KEY_VALUE, RULES, VALUE, key_token, no_value_in, secret

import json


def opened(s, key="default", **body):
    r = s.request("POST", "/v1/sessions", body or None, key=key)
    assert r.code == 201, r.body
    return r.json()


def listed(s, key="default"):
    r = s.request("GET", "/v1/sessions", key=key)
    assert r.code == 200, r.body
    assert r.headers["Content-Type"].startswith("application/json")
    return r.json()["sessions"]


def test_a_key_lists_only_its_own_sessions_newest_first(start, tmp_path):
    keys = tmp_path / "keys.json"
    alice = add_key(keys, "alice", "--sessions", "3")
    bob = add_key(keys, "bob")
    s = start("--timeout", "5", keys=str(keys))
    assert listed(s, alice) == [] and listed(s, bob) == []
    first = opened(s, alice, limits={"timeout_sec": 2})
    theirs = opened(s, bob)
    second = opened(s, alice)

    mine = listed(s, alice)
    assert [x["id"] for x in mine] == [second["id"], first["id"]]
    assert mine[0]["created"] >= mine[1]["created"]
    for row, answer in zip(mine, (second, first)):
        # Every field POST /v1/sessions answered, as it answered it.
        for field, value in answer.items():
            assert row[field] == value, (field, row, answer)
        assert row["limits"] == answer["limits"]
        assert isinstance(row["created"], (int, float)) and row["created"] > 1.6e9
        assert row["last_used"] >= row["created"]
        assert row["paused"] is False
        assert row["allow_hosts"] == [] and row["allow_cidrs"] == []
        assert row["secrets"] == []
    assert mine[1]["limits"]["timeout_sec"] == 2

    others = listed(s, bob)
    assert [x["id"] for x in others] == [theirs["id"]]
    assert first["id"] not in json.dumps(others) and second["id"] not in json.dumps(others)

    # A call is a use: its session's last_used moves, never before it.
    before = listed(s, alice)[1]["last_used"]
    r = s.request("POST", f"/v1/sessions/{first['id']}/runs", {"code": "x = 1"}, key=alice)
    assert r.code == 200 and r.json()["status"] == "ok", r.body
    assert listed(s, alice)[1]["last_used"] >= before

    # Without a key: 401, as every route but health; another method: 405.
    assert s.request("GET", "/v1/sessions", key=None).code == 401
    r = s.request("PUT", "/v1/sessions", {}, key=alice)
    assert r.code == 405 and "GET" in r.headers["Allow"] and "POST" in r.headers["Allow"]
    for x in (first, second):
        assert s.request("DELETE", f"/v1/sessions/{x['id']}", key=alice).code == 204
    assert s.request("DELETE", f"/v1/sessions/{theirs['id']}", key=bob).code == 204


def test_a_closed_session_leaves_the_list(start, tmp_path):
    keys = tmp_path / "keys.json"
    alice = add_key(keys, "alice", "--sessions", "2")
    s = start("--timeout", "5", keys=str(keys))
    a, b = opened(s, alice)["id"], opened(s, alice)["id"]
    assert {x["id"] for x in listed(s, alice)} == {a, b}
    assert s.request("DELETE", f"/v1/sessions/{a}", key=alice).code == 204
    assert [x["id"] for x in listed(s, alice)] == [b]
    assert s.request("DELETE", f"/v1/sessions/{b}", key=alice).code == 204
    assert listed(s, alice) == []


def test_a_session_its_idle_timeout_closed_is_not_listed(start):
    s = start("--session-idle", "1")
    sid = opened(s)["id"]
    assert [x["id"] for x in listed(s)] == [sid]
    # The library's reaper closes it once idle past 1 s: no longer open.
    assert wait_for(lambda: listed(s) == [], timeout=30)
    r = s.request("POST", f"/v1/sessions/{sid}/runs", {"code": "print(1)"})
    assert r.code == 410


def test_a_paused_session_is_listed_paused(start):
    s = start("--timeout", "5")
    sid = opened(s)["id"]
    assert s.request("POST", f"/v1/sessions/{sid}/runs", {"code": "x = 1"}).code == 200
    r = s.request("POST", f"/v1/sessions/{sid}/pause")
    assert r.code == 200 and r.json()["paused"] is True, r.body
    (row,) = listed(s)
    assert row["id"] == sid and row["paused"] is True
    assert s.request("POST", f"/v1/sessions/{sid}/resume").code == 200
    assert listed(s)[0]["paused"] is False
    assert s.request("DELETE", f"/v1/sessions/{sid}").code == 204


@pytest.fixture
def served(start, tmp_path):
    """A server with two egress rules and a key holding secret KEYGH."""
    path = tmp_path / "keys.json"
    out = add_key(path, "alice")
    doc = json.loads(path.read_text())
    doc["keys"][0]["secrets"] = [secret("KEYGH", value=KEY_VALUE)]
    path.write_text(json.dumps(doc))
    s = start("--timeout", "5", *RULES, keys=str(path))
    s.key = key_token(out)
    return s


def test_rules_and_secret_names_never_a_value(served):
    s = served
    r = s.request("POST", "/v1/sessions", {"secrets": [secret("GH")],
                                           "allow_hosts": ["api.example.com:443"]})
    assert r.code == 201, r.body
    sid = r.json()["id"]
    r = s.request("GET", "/v1/sessions")
    assert r.code == 200, r.body
    no_value_in(r.body)
    (row,) = r.json()["sessions"]
    assert sorted(row["secrets"]) == ["GH", "KEYGH"]
    assert row["allow_hosts"] == ["api.example.com:443"] and row["allow_cidrs"] == []

    # What POST .../egress keeps is what the list says it has.
    r = s.request("POST", f"/v1/sessions/{sid}/egress", {"secrets": ["GH"]})
    assert r.code == 200, r.body
    (row,) = listed(s)
    assert row["secrets"] == ["GH"]
    assert row["allow_hosts"] == ["api.example.com:443"]
    r = s.request("POST", f"/v1/sessions/{sid}/egress", {"allow_hosts": []})
    assert r.code == 200, r.body
    (row,) = listed(s)
    assert row["allow_hosts"] == [] and row["secrets"] == ["GH"]

    # Without rules named, the session has the server's: all of them.
    other = opened(s)["id"]
    rows = listed(s)
    assert [x["id"] for x in rows] == [other, sid]
    assert rows[0]["allow_hosts"] == ["api.example.com:443", "api.other.org:443"]
    assert rows[0]["secrets"] == ["KEYGH"]
    no_value_in(s.request("GET", "/v1/sessions").body)
    assert VALUE not in json.dumps(rows)
    for x in (sid, other):
        assert s.request("DELETE", f"/v1/sessions/{x}").code == 204


@pytest.fixture
def redis():
    r = Redis()
    yield r
    r.stop()


def test_with_a_queue_the_list_is_not_offered(start, redis):
    s = start("--queue", redis.url, "--timeout", "5")
    r = s.request("GET", "/v1/sessions")
    assert r.code == 501, r.body
    err = r.json()["error"]
    assert err["code"] == "not_offered"
    assert "--queue" in err["message"] and "Redis" in err["message"]
