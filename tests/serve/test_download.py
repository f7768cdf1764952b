"""A session file comes down streamed, a part at a time: serve's peak
memory (VmHWM) grows by far less than the file, which a whole-file reply
held about five times over (its base64 line, the parse, the bytes, the
answer)."""
import hashlib
import os

import pytest

from conftest import Stream

MIB = 1 << 20
SIZE_MB = 64
# docs/serve.md promises this bound: a download holds a part (1 MiB) about
# four times over, and the rest is allocator slack.
GROWTH_BOUND = 16 * MIB


def vm_hwm(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


@pytest.fixture
def big_file(start):
    # The sanitizer build keeps freed memory in quarantine (256 MiB by
    # default), which would count every part ever freed: none kept here.
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=0"
    s = start("--transfer-mb", str(SIZE_MB + 16), "--disk", str(SIZE_MB * 2),
              "--file-size", str(SIZE_MB * 2), "--memory", "1024",
              "--timeout", "60", env=env)
    r = s.request("POST", "/v1/sessions", {})
    assert r.code == 201, r.body
    sid = r.json()["id"]
    code = ("import hashlib, os\nh = hashlib.sha256()\n"
            "with open('big.bin', 'wb') as f:\n"
            f"    for _ in range({SIZE_MB}):\n"
            "        b = os.urandom(1 << 20)\n        h.update(b)\n        f.write(b)\n"
            "print(h.hexdigest())\n")
    r = s.request("POST", f"/v1/sessions/{sid}/runs", {"code": code})
    assert r.code == 200 and r.json()["status"] == "ok", r.json()["stderr"]
    yield s, sid, r.json()["stdout"].strip()
    s.request("DELETE", f"/v1/sessions/{sid}")


def test_a_large_file_streams_identical_in_bounded_memory(big_file):
    s, sid, digest = big_file
    before = vm_hwm(s.proc.pid)
    st = Stream(s, "GET", f"/v1/sessions/{sid}/files/big.bin", headers={"Accept": "*/*"})
    assert st.status == 200, st.body()
    assert st.headers["Content-Type"] == "application/octet-stream"
    h, n = hashlib.sha256(), 0
    while True:
        chunk = st.resp.read(MIB)
        if not chunk:
            break
        h.update(chunk)
        n += len(chunk)
    st.close()
    assert n == SIZE_MB * MIB and h.hexdigest() == digest
    growth = vm_hwm(s.proc.pid) - before
    print(f"serve VmHWM {before >> 20} MiB before, grew {growth / MIB:.1f} MiB")
    assert growth < GROWTH_BOUND, f"serve's peak memory grew {growth >> 20} MiB"


def test_a_small_file_and_errors_answer_as_before(big_file):
    s, sid, _ = big_file
    assert s.request("PUT", f"/v1/sessions/{sid}/files/small.txt", b"hi", raw=True).code == 201
    r = s.request("GET", f"/v1/sessions/{sid}/files/small.txt")
    assert r.code == 200 and r.body == b"hi" and r.headers["Content-Length"] == "2"
    r = s.request("GET", f"/v1/sessions/{sid}/files/missing.bin")
    assert r.code == 404 and "no such file" in r.json()["error"]["message"]
    # Over the cap: refused before a byte goes, as before.
    code = f"open('huge.bin', 'wb').truncate({SIZE_MB + 17} << 20)"
    assert s.request("POST", f"/v1/sessions/{sid}/runs", {"code": code}).json()["status"] == "ok"
    r = s.request("GET", f"/v1/sessions/{sid}/files/huge.bin")
    assert r.code == 413 and "allowed" in r.json()["error"]["message"]
