"""Serve's checkpoints (docs/checkpoints.md#serve): POST .../checkpoint, a
session from one ("from_checkpoint"), list, get, delete; each key's own
(another key's id is a missing one), authenticated on disk, under a byte
quota and a TTL; and paused sessions kept over serve's restart."""
import os
import stat

from conftest import add_key, wait_for


def open_session(s, key="default", **body):
    r = s.request("POST", "/v1/sessions", body, key=key)
    assert r.code == 201, r.body
    return r.json()["id"]


def run(s, sid, code, key="default"):
    r = s.request("POST", f"/v1/sessions/{sid}/runs", {"code": code}, key=key)
    assert r.code == 200, r.body
    return r.json()


def files_of(root):
    return [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs]


def test_checkpoint_restore_list_and_delete_are_the_keys_own(start, tmp_path):
    keys = tmp_path / "keys.json"
    alice = add_key(keys, "alice")
    bob = add_key(keys, "bob")
    store = tmp_path / "ckpts"
    s = start("--checkpoint-dir", str(store), keys=str(keys))
    sid = open_session(s, key=alice)
    run(s, sid, "x = 41\ndef f(): return x + 1\nopen('kept.txt', 'w').write('kept')", key=alice)
    r = s.request("POST", f"/v1/sessions/{sid}/checkpoint", None, key=alice)
    assert r.code == 201, r.body
    rec = r.json()
    cid = rec["id"]
    assert rec["session"] == sid and rec["bytes"] > 0 and rec["files"] >= 1
    assert rec["expires"] > rec["created"] and "file_bytes" not in rec
    # The session goes on; what it does next is not in the checkpoint.
    run(s, sid, "x = 0\nimport os; os.remove('kept.txt')", key=alice)

    r = s.request("POST", "/v1/sessions", {"from_checkpoint": cid}, key=alice)
    assert r.code == 201, r.body
    assert r.json()["from_checkpoint"] == cid and r.json()["restored"]["bytes"] == rec["bytes"]
    copy = r.json()["id"]
    assert copy != sid
    out = run(s, copy, "print(f(), open('kept.txt').read())", key=alice)
    assert out["stdout"] == "42 kept\n", out

    listed = s.request("GET", "/v1/checkpoints", key=alice).json()
    assert [c["id"] for c in listed["checkpoints"]] == [cid] and listed["bytes"] > 0
    assert s.request("GET", f"/v1/checkpoints/{cid}", key=alice).json() == rec

    # Bob: the id answers exactly as one nobody has, on every route.
    missing = s.request("GET", "/v1/checkpoints/" + "0" * 32, key=alice)
    for r in (s.request("GET", f"/v1/checkpoints/{cid}", key=bob),
              s.request("DELETE", f"/v1/checkpoints/{cid}", key=bob),
              s.request("POST", "/v1/sessions", {"from_checkpoint": cid}, key=bob)):
        assert (r.code, r.json()) == (missing.code, missing.json()) == (
            404, {"error": {"code": "not_found", "message": "no such checkpoint"}})
    assert s.request("GET", "/v1/checkpoints", key=bob).json()["checkpoints"] == []
    for bad in ("../../key", "..", "ABC", "x" * 80):
        r = s.request("POST", "/v1/sessions", {"from_checkpoint": bad}, key=alice)
        assert r.code == 404, (bad, r.body)
    assert s.request("POST", "/v1/sessions", {"from_checkpoint": 7}, key=alice).code == 400
    for bad in ({"name": "../x"}, {"name": ""}, {"name": 3}, {"name": "x" * 65}, {"tag": "x"}):
        r = s.request("POST", f"/v1/sessions/{sid}/checkpoint", bad, key=alice)
        assert r.code == 400, (bad, r.body)
    r = s.request("POST", f"/v1/sessions/{sid}/checkpoint", {"name": "before-x.1"}, key=alice)
    assert r.code == 201 and r.json()["name"] == "before-x.1", r.body
    assert s.request("DELETE", f"/v1/checkpoints/{r.json()['id']}", key=alice).code == 204
    assert s.request("GET", f"/v1/sessions/{sid}/checkpoint", key=alice).code == 405
    assert s.request("PUT", "/v1/checkpoints", b"", key=alice, raw=True).code == 405

    # On disk: serve's alone to read.
    assert stat.S_IMODE(os.stat(store).st_mode) == 0o700
    for path in files_of(store):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path
    for d in os.listdir(store):
        if os.path.isdir(store / d):
            assert stat.S_IMODE(os.stat(store / d).st_mode) == 0o700

    assert s.request("DELETE", f"/v1/checkpoints/{cid}", key=alice).code == 204
    assert s.request("GET", f"/v1/checkpoints/{cid}", key=alice).code == 404
    r = s.request("POST", "/v1/sessions", {"from_checkpoint": cid}, key=alice)
    assert r.code == 404
    assert not [p for p in files_of(store) if cid in p]
    for x in (sid, copy):
        assert s.request("DELETE", f"/v1/sessions/{x}", key=alice).code == 204


def test_a_changed_checkpoint_is_refused_and_opens_nothing(start, tmp_path):
    store = tmp_path / "ckpts"
    s = start("--checkpoint-dir", str(store))
    sid = open_session(s)
    run(s, sid, "secret = 'x' * 1000")
    cid = s.request("POST", f"/v1/sessions/{sid}/checkpoint", None).json()["id"]
    (path,) = [p for p in files_of(store) if p.endswith(f"c-{cid}.ckpt")]
    with open(path, "r+b") as f:
        f.seek(os.path.getsize(path) // 2)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 1]))
    before = s.metrics().get("agentjail_sessions_open")
    r = s.request("POST", "/v1/sessions", {"from_checkpoint": cid})
    assert r.code == 422 and r.json()["error"]["code"] == "checkpoint_refused", r.body
    assert "changed" in r.json()["error"]["message"] or "tag" in r.json()["error"]["message"]
    assert s.metrics().get("agentjail_sessions_open") == before
    # Truncated: the same refusal.
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) - 7)
    r = s.request("POST", "/v1/sessions", {"from_checkpoint": cid})
    assert r.code == 422, r.body
    assert s.request("DELETE", f"/v1/sessions/{sid}").code == 204


def test_a_keys_checkpoints_stay_within_its_quota(start, tmp_path):
    s = start("--checkpoint-dir", str(tmp_path / "c"), "--checkpoint-quota-mb", "1")
    sid = open_session(s)
    # About 600 KiB of state that does not compress: one fits, two do not.
    run(s, sid, "import os\nblob = os.urandom(600 * 1024)")
    first = s.request("POST", f"/v1/sessions/{sid}/checkpoint", None)
    assert first.code == 201, first.body
    r = s.request("POST", f"/v1/sessions/{sid}/checkpoint", None)
    assert r.code == 507 and r.json()["error"]["code"] == "checkpoint_quota", r.body
    assert "quota of 1 MiB" in r.json()["error"]["message"]
    listed = s.request("GET", "/v1/checkpoints").json()
    assert len(listed["checkpoints"]) == 1 and listed["quota"] == 1 << 20
    assert s.request("DELETE", f"/v1/checkpoints/{first.json()['id']}").code == 204
    assert s.request("POST", f"/v1/sessions/{sid}/checkpoint", None).code == 201
    assert s.request("DELETE", f"/v1/sessions/{sid}").code == 204


def test_a_checkpoint_expires_after_its_ttl(start, tmp_path):
    store = tmp_path / "c"
    s = start("--checkpoint-dir", str(store), "--checkpoint-ttl", "1")
    sid = open_session(s)
    run(s, sid, "x = 1")
    cid = s.request("POST", f"/v1/sessions/{sid}/checkpoint", None).json()["id"]
    assert wait_for(lambda: s.request("GET", f"/v1/checkpoints/{cid}").code == 404, 60)
    assert s.request("POST", "/v1/sessions", {"from_checkpoint": cid}).code == 404
    assert s.request("GET", "/v1/checkpoints").json()["checkpoints"] == []
    assert not [p for p in files_of(store) if cid in p]  # swept from the disk
    assert s.request("DELETE", f"/v1/sessions/{sid}").code == 204


def test_paused_sessions_and_checkpoints_outlive_a_restart(start, tmp_path):
    """SIGTERM keeps each paused session (its key's, its id) and every
    checkpoint; the next serve on the same directory opens a paused one
    again at its key's first call, under the limits in force then."""
    keys = tmp_path / "keys.json"
    alice = add_key(keys, "alice")
    bob = add_key(keys, "bob")
    store = str(tmp_path / "ckpts")
    a = start("--checkpoint-dir", store, "--timeout", "20", keys=str(keys))
    paused = open_session(a, key=alice, limits={"timeout_sec": 15})
    run(a, paused, "import json\nstate = {'n': 41}\nopen('f.txt', 'w').write('file')",
        key=alice)
    assert a.request("POST", f"/v1/sessions/{paused}/pause", None, key=alice).code == 200
    live = open_session(a, key=alice)
    run(a, live, "y = 1", key=alice)
    cid = a.request("POST", f"/v1/sessions/{live}/checkpoint", None, key=alice).json()["id"]
    assert a.stop() == 0

    b = start("--checkpoint-dir", store, "--timeout", "10", keys=str(keys))
    assert b.request("GET", f"/v1/sessions/{paused}/files", key=bob).code == 404
    out = run(b, paused, "state['n'] += 1\nprint(state['n'], open('f.txt').read())", key=alice)
    assert out["stdout"] == "42 file\n", out
    # The body's own timeout (15 s) is wider than this server's now: today's
    # holds, and a call may not ask for more.
    r = b.request("POST", f"/v1/sessions/{paused}/runs",
                  {"code": "1", "limits": {"timeout_sec": 12}}, key=alice)
    assert r.code == 400 and "12 is more than" in r.json()["error"]["message"], r.body
    assert "(10)" in r.json()["error"]["message"], r.body
    # A session that was not paused did not outlive the stop.
    assert b.request("POST", f"/v1/sessions/{live}/runs", {"code": "1"},
                     key=alice).code == 404
    r = b.request("POST", "/v1/sessions", {"from_checkpoint": cid}, key=alice)
    assert r.code == 201, r.body
    assert run(b, r.json()["id"], "print(y)", key=alice)["stdout"] == "1\n"
    # Opened again once: its kept copy is gone from the store.
    assert not [p for p in files_of(store) if f"p-{paused}" in p]
    for x in (paused, r.json()["id"]):
        assert b.request("DELETE", f"/v1/sessions/{x}", key=alice).code == 204


def test_a_kept_paused_session_can_be_deleted_unopened(start, tmp_path):
    store = str(tmp_path / "ckpts")
    keys = tmp_path / "keys.json"
    alice = add_key(keys, "alice")
    a = start("--checkpoint-dir", store, keys=str(keys))
    sid = open_session(a, key=alice)
    run(a, sid, "x = 1", key=alice)
    assert a.request("POST", f"/v1/sessions/{sid}/pause", None, key=alice).code == 200
    assert a.stop() == 0
    assert [p for p in files_of(store) if f"p-{sid}" in p]
    b = start("--checkpoint-dir", store, keys=str(keys))
    assert b.request("DELETE", f"/v1/sessions/{sid}", key=alice).code == 204
    assert not [p for p in files_of(store) if f"p-{sid}" in p]
    assert b.request("DELETE", f"/v1/sessions/{sid}", key=alice).code == 404


def test_a_kept_session_keeps_only_the_rules_still_in_force(start, tmp_path):
    """Egress after a restart is today's: a rule the session had that the
    deployer has since dropped is gone (asking for it back is refused, as
    any widening is); one it narrowed away stays away."""
    store = str(tmp_path / "ckpts")
    keys = tmp_path / "keys.json"
    alice = add_key(keys, "alice")
    a = start("--checkpoint-dir", store, "--allow-cidr", "10.1.0.0/16:80",
              "--allow-cidr", "10.2.0.0/16:80", "--allow-cidr", "10.3.0.0/16:80",
              keys=str(keys))
    sid = open_session(a, key=alice, allow_hosts=[],
                       allow_cidrs=["10.1.0.0/16:80", "10.2.0.0/16:80", "10.3.0.0/16:80"])
    r = a.request("POST", f"/v1/sessions/{sid}/egress",
                  {"allow_cidrs": ["10.1.0.0/16:80", "10.2.0.0/16:80"]}, key=alice)
    assert r.code == 200, r.body
    run(a, sid, "x = 1", key=alice)
    assert a.request("POST", f"/v1/sessions/{sid}/pause", None, key=alice).code == 200
    assert a.stop() == 0
    # 10.2 is no longer the deployer's; 10.3 is, but the session dropped it.
    b = start("--checkpoint-dir", store, "--allow-cidr", "10.1.0.0/16:80",
              "--allow-cidr", "10.3.0.0/16:80", keys=str(keys))
    assert run(b, sid, "print(x)", key=alice)["stdout"] == "1\n"
    for gone in ("10.2.0.0/16:80", "10.3.0.0/16:80"):
        r = b.request("POST", f"/v1/sessions/{sid}/egress",
                      {"allow_cidrs": ["10.1.0.0/16:80", gone]}, key=alice)
        assert r.code == 400 and gone in r.json()["error"]["message"], r.body
    r = b.request("POST", f"/v1/sessions/{sid}/egress", {"allow_cidrs": ["10.1.0.0/16:80"]},
                  key=alice)
    assert r.code == 200, r.body
    assert b.request("DELETE", f"/v1/sessions/{sid}", key=alice).code == 204


def test_a_start_sweeps_what_an_earlier_serve_left(start, tmp_path):
    """A part written by a serve that died, and a checkpoint expired while
    no serve ran, are gone once the next serve has started, before any
    request of their key's."""
    import json
    store = tmp_path / "ckpts"
    keys = tmp_path / "keys.json"
    alice = add_key(keys, "alice")
    a = start("--checkpoint-dir", str(store), keys=str(keys))
    sid = open_session(a, key=alice)
    run(a, sid, "x = 1", key=alice)
    old = a.request("POST", f"/v1/sessions/{sid}/checkpoint", None, key=alice).json()["id"]
    kept = a.request("POST", f"/v1/sessions/{sid}/checkpoint", None, key=alice).json()["id"]
    assert a.request("DELETE", f"/v1/sessions/{sid}", key=alice).code == 204
    assert a.stop() == 0
    (rec,) = [p for p in files_of(store) if p.endswith(f"c-{old}.json")]
    with open(rec) as f:
        r = json.load(f)
    r["expires"] = r["created"] - 1
    with open(rec, "w") as f:
        json.dump(r, f)
    orphan = os.path.join(os.path.dirname(rec), "c-" + "ab" * 16 + ".part.Xy12Zq")
    with open(orphan, "wb") as f:
        f.write(b"half a checkpoint")
    start("--checkpoint-dir", str(store), keys=str(keys))
    left = sorted(os.path.basename(p) for p in files_of(store) if "/k-" in p)
    assert left == [f"c-{kept}.ckpt", f"c-{kept}.json"], left
