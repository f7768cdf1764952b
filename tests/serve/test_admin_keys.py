"""Admin keys (`agentjail keys add --admin`): the operator's view of every
key's open sessions, GET /v1/sessions?all=true (each row with the name of
the key that owns it, never its token), and DELETE /v1/sessions/ID of
another key's session, whose owner then finds it closed, told that an
operator closed it. Nothing more: an admin key's other calls on another
key's session answer 404 as for an id nobody has, and a key that is not
an admin is refused all=true and still gets 404 for another key's id."""
import json
import secrets
import subprocess

import pytest

import test_key_walk
from conftest import AGENTJAIL, Stream, add_key, wait_for
from test_key_walk import ROUTES, leaks, make_things
from test_sessions_list import listed, opened


def keys(*args):
    return subprocess.run([AGENTJAIL, "keys", *args], capture_output=True, text=True)


def every(s, key):
    r = s.request("GET", "/v1/sessions?all=true", key=key)
    assert r.code == 200, r.body
    return r.json()["sessions"]


@pytest.fixture
def three(start, tmp_path):
    """A server and its keys: a (admin), b and c; b and c hold a session
    each, b's opened first. (server, {name: token}, {name: session id})."""
    f = tmp_path / "keys.json"
    tok = {"a": add_key(f, "a", "--admin"), "b": add_key(f, "b"), "c": add_key(f, "c")}
    s = start("--timeout", "10", keys=str(f))
    ids = {"b": opened(s, tok["b"])["id"]}
    ids["c"] = opened(s, tok["c"])["id"]
    return s, tok, ids


def test_keys_add_admin_is_kept_and_listed(tmp_path):
    f = tmp_path / "keys.json"
    add_key(f, "ops", "--admin")
    add_key(f, "tenant")
    entries = {k["name"]: k for k in json.loads(f.read_text())["keys"]}
    assert entries["ops"]["admin"] is True
    assert "admin" not in entries["tenant"]  # as "metrics": written only when true
    lines = keys("list", "--file", str(f)).stdout.splitlines()
    head = lines[0].split()
    col = head.index("ADMIN")
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["ops"][col] == "yes" and rows["tenant"][col] == "no"
    assert head[-1] == "WEBHOOK"  # the last column stays where scripts read it
    assert "--admin" in keys("--help").stdout
    # Another key added after keeps ops's attribute (the file is rewritten).
    assert json.loads(f.read_text())["keys"][0]["admin"] is True


def test_a_keys_file_with_admin_not_a_boolean_is_refused(tmp_path):
    f = tmp_path / "keys.json"
    add_key(f, "ops")
    doc = json.loads(f.read_text())
    doc["keys"][0]["admin"] = "yes"
    f.write_text(json.dumps(doc))
    r = subprocess.run([AGENTJAIL, "serve", "--keys", str(f), "--listen", "127.0.0.1:0"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "keys[0].admin: true or false" in r.stderr, r.stderr


def test_an_admin_key_lists_every_keys_open_sessions(three):
    s, tok, ids = three
    rows = every(s, tok["a"])
    assert [(x["id"], x["key"]) for x in rows] == [(ids["c"], "c"), (ids["b"], "b")]
    assert rows[0]["created"] >= rows[1]["created"]
    # The same rows their owners see, with "key" beside.
    for name in ("b", "c"):
        (own,) = listed(s, tok[name])
        row = next(x for x in rows if x["id"] == ids[name])
        assert {k: v for k, v in row.items() if k not in ("key", "last_used")} == \
            {k: v for k, v in own.items() if k != "last_used"}
    body = s.request("GET", "/v1/sessions?all=true", key=tok["a"]).body.decode()
    for t in tok.values():
        assert t not in body and t[3:] not in body
    # Its own list is its own: none.
    assert listed(s, tok["a"]) == []
    assert s.request("GET", "/v1/sessions?all=false", key=tok["a"]).json()["sessions"] == []
    # Its own sessions are among every key's, named as its.
    mine = opened(s, tok["a"])["id"]
    assert [(x["id"], x["key"]) for x in every(s, tok["a"])][0] == (mine, "a")
    assert s.request("DELETE", f"/v1/sessions/{mine}", key=tok["a"]).code == 204
    for name in ("b", "c"):
        assert s.request("DELETE", f"/v1/sessions/{ids[name]}", key=tok[name]).code == 204
    assert every(s, tok["a"]) == []


def test_another_key_may_not_list_every_keys_sessions(three):
    s, tok, ids = three
    r = s.request("GET", "/v1/sessions?all=true", key=tok["b"])
    assert r.code == 403, r.body
    err = r.json()["error"]
    assert err["code"] == "forbidden" and "keys add --admin" in err["message"]
    assert ids["c"] not in r.body.decode()
    # all=false is the plain list.
    r = s.request("GET", "/v1/sessions?all=false", key=tok["b"])
    assert r.code == 200 and [x["id"] for x in r.json()["sessions"]] == [ids["b"]]
    for key in (tok["a"], tok["b"]):
        r = s.request("GET", "/v1/sessions?all=maybe", key=key)
        assert r.code == 400, r.body
        assert r.json()["error"]["code"] == "bad_request"
        assert "all" in r.json()["error"]["message"]
    for name in ("b", "c"):
        assert s.request("DELETE", f"/v1/sessions/{ids[name]}", key=tok[name]).code == 204


def test_an_admin_key_closes_another_keys_session(three):
    s, tok, ids = three
    assert s.request("DELETE", f"/v1/sessions/{ids['b']}", key=tok["a"]).code == 204
    # Its owner finds it closed, and why.
    r = s.request("POST", f"/v1/sessions/{ids['b']}/runs", {"code": "print(1)"}, key=tok["b"])
    assert r.code == 410, r.body
    err = r.json()["error"]
    assert err["code"] == "session_closed" and "an operator closed it" in err["message"], err
    assert listed(s, tok["b"]) == []
    assert [x["id"] for x in every(s, tok["a"])] == [ids["c"]]
    # Closed, not open: not counted against b's sessions, and no longer
    # the admin's to close; its owner may still delete it.
    assert s.request("DELETE", f"/v1/sessions/{ids['b']}", key=tok["a"]).code == 404
    assert s.request("DELETE", f"/v1/sessions/{ids['b']}", key=tok["b"]).code == 204
    # The access log's line of the close names the key that acted.
    assert wait_for(lambda: any(
        (lambda o: o.get("key") == "a" and o.get("method") == "DELETE" and
         o.get("route") == "/v1/sessions/{id}" and o.get("status") == 204)(json.loads(line))
        for line in list(s.stderr) if line.startswith("{")))
    assert s.request("DELETE", f"/v1/sessions/{ids['c']}", key=tok["c"]).code == 204


def test_a_key_not_admin_still_cannot_close_another_keys_session(three):
    s, tok, ids = three
    unknown = secrets.token_hex(16)
    theirs = s.request("DELETE", f"/v1/sessions/{ids['c']}", key=tok["b"])
    nobodys = s.request("DELETE", f"/v1/sessions/{unknown}", key=tok["b"])
    assert theirs.code == 404 and theirs.body == nobodys.body
    r = s.request("POST", f"/v1/sessions/{ids['c']}/runs", {"code": "print(6*7)"}, key=tok["c"])
    assert r.code == 200 and r.json()["stdout"] == "42\n", r.body
    # An admin key's run on another key's session: 404, as for nobody's.
    theirs = s.request("POST", f"/v1/sessions/{ids['c']}/runs", {"code": "print(1)"},
                       key=tok["a"])
    nobodys = s.request("POST", f"/v1/sessions/{unknown}/runs", {"code": "print(1)"},
                        key=tok["a"])
    assert theirs.code == 404 and theirs.body == nobodys.body
    for name in ("b", "c"):
        assert s.request("DELETE", f"/v1/sessions/{ids[name]}", key=tok[name]).code == 204


def test_an_admin_keys_other_calls_on_another_keys_things_answer_as_unknown(
        start, tmp_path, monkeypatch):
    """The key walk with an admin key walking: every route but the close
    answers as for an id nobody has (only listing and closing are an
    admin's)."""
    f = tmp_path / "keys.json"
    alice, ops = add_key(f, "alice"), add_key(f, "ops", "--admin")
    s = start("--timeout", "90", "--cpu", "90", keys=str(f))
    mine = make_things(s, alice)
    going = f"/v1/runs/{mine['going']}"
    monkeypatch.setattr(test_key_walk, "ROUTES",
                        [r for r in ROUTES if r[:2] != ("DELETE", "/v1/sessions/{session}")])
    try:
        assert leaks(s, ops, mine) == []
        r = s.request("GET", f"/v1/sessions/{mine['session']}/files/a.txt", key=alice)
        assert r.code == 200 and r.body == b"from A"
        assert s.request("GET", going, key=alice).json()["state"] != "done"
    finally:
        s.request("DELETE", going, key=alice)
        assert wait_for(lambda: s.request("GET", going, key=alice).json()["state"] == "done",
                        timeout=60)
        s.request("DELETE", f"/v1/sessions/{mine['session']}", key=alice)


def test_the_one_key_serve_makes_is_an_admin(start):
    s = start("--timeout", "5")
    sid = opened(s)["id"]
    assert [(x["id"], x["key"]) for x in every(s, s.key)] == [(sid, "default")]
    assert s.request("DELETE", f"/v1/sessions/{sid}").code == 204


def test_with_a_queue_every_keys_list_is_not_offered_either(start, tmp_path):
    from test_queue import Redis
    redis = Redis()
    try:
        f = tmp_path / "keys.json"
        ops, tenant = add_key(f, "ops", "--admin"), add_key(f, "tenant")
        s = start("--queue", redis.url, "--timeout", "5", keys=str(f))
        for key in (ops, tenant):
            r = s.request("GET", "/v1/sessions?all=true", key=key)
            assert r.code == 501 and r.json()["error"]["code"] == "not_offered", r.body
    finally:
        redis.stop()


def test_an_admin_key_closes_a_session_in_a_call_or_paused(three):
    """A call under way ends first, then the sandbox (the owner's call
    keeps its answer); a paused session's kept state goes with it."""
    s, tok, ids = three
    st = Stream(s, "POST", f"/v1/sessions/{ids['b']}/runs",
                {"code": "import time; print('started', flush=True); time.sleep(2); "
                         "print('done')"}, key=tok["b"])
    assert st.status == 200
    seen = st.events()
    for e in seen:
        if e.event == "stdout" and b"started" in e.bytes():
            break
    # The call is under way: the close waits for it, then ends the sandbox.
    assert s.request("DELETE", f"/v1/sessions/{ids['b']}", key=tok["a"]).code == 204
    result = [e for e in seen if e.event == "result"]
    st.close()
    assert result and result[0].data["stdout"].endswith("done\n"), result
    r = s.request("POST", f"/v1/sessions/{ids['b']}/runs", {"code": "print(1)"}, key=tok["b"])
    assert r.code == 410 and "an operator closed it" in r.json()["error"]["message"], r.body

    r = s.request("POST", f"/v1/sessions/{ids['c']}/pause", key=tok["c"])
    assert r.code == 200, r.body
    assert [x["paused"] for x in every(s, tok["a"])] == [True]
    assert s.request("DELETE", f"/v1/sessions/{ids['c']}", key=tok["a"]).code == 204
    r = s.request("POST", f"/v1/sessions/{ids['c']}/resume", key=tok["c"])
    assert r.code == 410 and "an operator closed it" in r.json()["error"]["message"], r.body
    assert every(s, tok["a"]) == []
    for name in ("b", "c"):
        assert s.request("DELETE", f"/v1/sessions/{ids[name]}", key=tok[name]).code == 204
