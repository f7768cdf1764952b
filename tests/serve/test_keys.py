"""agentjail keys: a key is shown once and kept only as its hash."""
import hashlib
import json
import os
import stat
import subprocess

from conftest import AGENTJAIL, add_key


def keys(*args):
    return subprocess.run([AGENTJAIL, "keys", *args], capture_output=True, text=True)


def test_add_list_remove(tmp_path):
    f = tmp_path / "keys.json"
    token = add_key(f, "alice", "--concurrency", "2", "--runs-per-minute", "30",
                    "--sessions", "1")
    assert token.startswith("aj_") and len(token) == 46
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o600
    text = f.read_text()
    assert token not in text and token[3:] not in text
    entry = json.loads(text)["keys"][0]
    secret = entry.pop("webhook_secret")
    assert secret.startswith("ajwh_") and len(secret) == 48
    assert entry == {"name": "alice", "sha256": hashlib.sha256(token.encode()).hexdigest(),
                     "concurrency": 2, "runs_per_minute": 30, "sessions": 1}
    other = add_key(f, "bob")
    assert other != token
    out = keys("list", "--file", str(f)).stdout
    assert "alice" in out and "bob" in out and token not in out
    r = keys("add", "--file", str(f), "alice")
    assert r.returncode == 1 and "already holds a key named 'alice'" in r.stderr
    r = keys("add", "--file", str(f), "no/slash")
    assert r.returncode == 2 and "may hold only" in r.stderr
    r = keys("add", "--file", str(f), "carol", "--concurrency", "0")
    assert r.returncode == 2 and "--concurrency" in r.stderr
    assert keys("remove", "--file", str(f), "alice").returncode == 0
    assert [k["name"] for k in json.loads(f.read_text())["keys"]] == ["bob"]
    r = keys("remove", "--file", str(f), "alice")
    assert r.returncode == 1 and "no key named 'alice'" in r.stderr
    r = keys("list", "--file", str(tmp_path / "missing.json"))
    assert r.returncode == 1 and "no such file" in r.stderr
    r = keys("add", "alice")
    assert r.returncode == 2 and "--file" in r.stderr


def test_a_removed_key_is_refused_after_restart(start, tmp_path):
    f = tmp_path / "keys.json"
    alice = add_key(f, "alice")
    bob = add_key(f, "bob")
    s = start(keys=str(f))
    assert s.run("print(1)", key=alice).code == 200
    s.stop()
    keys("remove", "--file", str(f), "alice")
    s = start(keys=str(f))
    assert s.run("print(1)", key=alice).code == 401
    assert s.run("print(1)", key=bob).code == 200


def test_without_a_keys_file_one_key_is_made(start):
    s = start()
    t = start()
    assert s.key and t.key and s.key != t.key
    assert s.run("print(1)").code == 200
    assert s.run("print(1)", key=t.key).code == 401


def test_a_key_in_e2b_shape_works_as_any_key(start, tmp_path):
    f = tmp_path / "keys.json"
    token = add_key(f, "e2b-user", "--e2b")
    # E2B's shape: e2b_ and the 256 bits as lowercase hex; kept as a hash.
    assert token.startswith("e2b_") and len(token) == 68
    assert all(c in "0123456789abcdef" for c in token[4:])
    assert token not in f.read_text() and token[4:] not in f.read_text()
    assert json.loads(f.read_text())["keys"][0]["sha256"] == \
        hashlib.sha256(token.encode()).hexdigest()
    assert add_key(f, "other", "--e2b") != token
    s = start(keys=str(f))
    assert s.run("print(1)", key=token).code == 200
    assert s.run("print(1)", key=token[:-1] + ("0" if token[-1] != "0" else "1")).code == 401
