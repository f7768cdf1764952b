"""Completion webhooks of background runs: a key's webhook secret (made,
shown once, rotated), the allow-list (400 bad_webhook, nothing sent), and
the signed POST at a run's end to receivers this test starts on loopback."""
import json
import subprocess

import pytest

from conftest import AGENTJAIL, UID_BASE, STATE_DIR, add_key


def keys(*args):
    return subprocess.run([AGENTJAIL, "keys", *args], capture_output=True, text=True)


def file_secret(path, name):
    return next(k for k in json.loads(path.read_text())["keys"]
                if k["name"] == name).get("webhook_secret")


def test_keys_add_makes_a_webhook_secret_shown_once_and_rotated(tmp_path):
    f = tmp_path / "keys.json"
    r = keys("add", "--file", str(f), "alice")
    assert r.returncode == 0
    # stdout is the key alone, as the scripts that read it expect.
    assert r.stdout.strip().startswith("aj_") and len(r.stdout.split()) == 1
    secret = file_secret(f, "alice")
    assert secret.startswith("ajwh_") and len(secret) == 48
    assert f"webhook secret (for the receivers of its runs' webhooks): {secret}" in r.stderr
    assert keys("add", "--file", str(f), "bob").returncode == 0
    assert file_secret(f, "bob") != secret
    r = keys("webhook-secret", "--file", str(f), "alice")
    assert r.returncode == 0
    new = r.stdout.strip()
    assert new.startswith("ajwh_") and new != secret and file_secret(f, "alice") == new
    assert "alice" in keys("list", "--file", str(f)).stdout
    r = keys("webhook-secret", "--file", str(f), "carol")
    assert r.returncode == 1 and "no key named 'carol'" in r.stderr


def old_keys_file(tmp_path):
    """A keys file written before webhooks: its key has no secret."""
    f = tmp_path / "keys.json"
    token = add_key(f, "old")
    data = json.loads(f.read_text())
    del data["keys"][0]["webhook_secret"]
    f.write_text(json.dumps(data))
    f.chmod(0o600)
    return f, token


def test_an_older_keys_file_still_loads(tmp_path, start):
    f, token = old_keys_file(tmp_path)
    lines = keys("list", "--file", str(f)).stdout.splitlines()
    assert lines[0].split()[-1] == "WEBHOOK" and lines[1].split()[-1] == "none"
    s = start(keys=str(f))
    assert s.run("print(1)", key=token).code == 200
    # A bad secret in the file names the entry.
    data = json.loads(f.read_text())
    data["keys"][0]["webhook_secret"] = "short"
    f.write_text(json.dumps(data))
    r = subprocess.run([AGENTJAIL, "serve", "--keys", str(f), "--listen", "127.0.0.1:0"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "keys[0].webhook_secret" in r.stderr


@pytest.mark.parametrize("prefix, why", [
    ("https://user:pw@hooks.example.com/", "user name or password"),
    ("https://hooks.example.com/?q=1", "no ?query"),
    ("https://hooks.example.com/#x", "fragment"),
])
def test_serve_refuses_a_bad_allow_prefix(prefix, why):
    r = subprocess.run([AGENTJAIL, "serve", "--listen", "127.0.0.1:0", "--webhook-allow",
                        prefix], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and why in r.stderr and "--webhook-allow" in r.stderr


def test_without_a_keys_file_the_key_has_a_webhook_secret():
    p = subprocess.Popen([AGENTJAIL, "serve", "--listen", "127.0.0.1:0", "--uid-base",
                          str(UID_BASE), "--state-dir", STATE_DIR],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        seen = {}
        while "AGENTJAIL_URL" not in seen:
            line = p.stdout.readline()
            assert line, "serve ended before it listened"
            k, _, v = line.strip().partition("=")
            seen[k] = v
        assert seen["AGENTJAIL_KEY"].startswith("aj_")
        assert seen["AGENTJAIL_WEBHOOK_SECRET"].startswith("ajwh_")
    finally:
        p.terminate()
        p.wait(timeout=60)
