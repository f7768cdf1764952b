"""What agentjail.connect() adds beyond the parity suite: `import agentjail`
without the C library, the tool's words held to the library's (the Python
copy a remote-only install uses), typed errors with retry_after, a 503 that
ran nothing retried to a bound, and TLS refused unless its CA is given."""
import errno
import json
import os
import subprocess
import sys
import threading

import pytest

from conftest import ROOT, add_key, wait_for
from test_tls import make_cert

sys.path.insert(0, os.path.join(ROOT, "python"))
import agentjail  # noqa: E402
from agentjail import _text  # noqa: E402
from agentjail.remote_tools import _code_argument  # noqa: E402
from agentjail.result import Execution, Image, Status  # noqa: E402


def test_import_and_connect_need_no_c_library(start):
    s = start()
    prog = f"""
import sys
sys.path.insert(0, {os.path.join(ROOT, "python")!r})
import agentjail
assert "agentjail._native" not in sys.modules
sb = agentjail.connect()
ex = sb.run("print(6 * 7)")
assert "agentjail._native" not in sys.modules
print(ex.stdout.strip(), ex.text().splitlines()[0])
try:
    agentjail.Sandbox
except ImportError as e:
    print("local:", "libagentjail.so not found" in str(e))
"""
    env = dict(os.environ, AGENTJAIL_LIBRARY="/nonexistent/libagentjail.so.0",
               AGENTJAIL_URL=s.url, AGENTJAIL_KEY=s.key)
    out = subprocess.run([sys.executable, "-I", "-c", prog], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["42 status: ok (exit code 0)", "local: True"]


def test_connect_without_a_url_names_the_variable(monkeypatch):
    monkeypatch.delenv("AGENTJAIL_URL", raising=False)
    with pytest.raises(agentjail.ConfigError, match="AGENTJAIL_URL"):
        agentjail.connect()
    with pytest.raises(agentjail.ConfigError, match="not an http"):
        agentjail.connect("ftp://x")


def _ex(**kw):
    base = dict(status=Status.OK, exit_code=0, signal=None, stdout_bytes=b"", stderr_bytes=b"",
                stdout_truncated=False, stderr_truncated=False, wall_ms=1.0, cpu_ms=1.0,
                memory_kb=1, message=None, tier="process")
    base.update(kw)
    return Execution(**base)


CORPUS = [
    _ex(),
    _ex(stdout_bytes=b"42\n", stderr_bytes="ünïcode ✓\n".encode()),
    _ex(status=Status.ERROR, exit_code=3, stderr_bytes=b"Traceback\n"),
    _ex(status=Status.KILLED, exit_code=None, signal=9, message="cancelled by the caller"),
    _ex(status=Status.TIMEOUT, exit_code=None, message="wall clock 1 s reached",
        stdout_bytes=b"x" * 100, stdout_truncated=True, stderr_truncated=True),
    _ex(images=[Image("figure-1.png", "image/png", b"\x89PNG" + b"\0" * 60)],
        images_dropped=2),
    _ex(egress={"limit": "out_mb reached", "connections": [
        {"host": "a.example", "port": 443, "allowed": True, "reason": "rule"},
        {"host": "b.example", "port": 80, "allowed": False, "reason": "no rule allows it"},
        {"host": "c.example", "port": 443, "allowed": True, "failure": "refused",
         "reason": "connection refused"},
        {"host": "d.example", "port": 1, "allowed": False, "reason": "r"},
        {"host": "e.example", "port": 2, "allowed": False, "reason": "r"}]}),
]


@pytest.mark.parametrize("ex", CORPUS, ids=range(len(CORPUS)))
def test_the_python_words_are_the_librarys(ex):
    # Execution.text() is the C library's where it loads (this suite's
    # case); _text.result_text is what a remote-only install uses.
    assert _text.result_text(ex) == ex.text()


@pytest.mark.parametrize("args", ['{"code": "print(1)"}', '{"code": 7}', '[1]', '{"x": 1}',
                                  '{"code": "a", "more": 1}', 'not json'])
def test_the_remote_tool_reads_arguments_as_the_library_does(args):
    from agentjail._native import ffi, lib
    code, why = _code_argument(args.encode())
    c_code = ffi.new("char **")
    c_len = ffi.new("size_t *")
    err = ffi.new("struct aj_error *")
    if lib.aj_tool_arguments(args.encode(), len(args), c_code, c_len, err):
        message = ffi.string(err.message).decode()
        assert code is None
        if args != "not json":  # the JSON parsers' own words differ
            assert f"Invalid arguments for run_python: {why}" == message
        else:
            assert message.startswith("Invalid arguments for run_python: not a JSON object")
    else:
        assert code == ffi.unpack(c_code[0], c_len[0]).decode()
        lib.aj_free(c_code[0])


def test_a_rate_limit_is_typed_with_retry_after(start, tmp_path):
    keys = tmp_path / "keys.json"
    slow = add_key(keys, "slow", "--runs-per-minute", "1")
    s = start(keys=str(keys))
    sb = agentjail.connect(s.url, slow)
    assert sb.run("print(1)").ok
    with pytest.raises(agentjail.RateLimited) as e:
        sb.run("print(1)")
    assert e.value.status == 429 and e.value.code == "rate_limited"
    assert 1 <= e.value.retry_after <= 60
    with pytest.raises(agentjail.ServeError) as e:
        agentjail.connect(s.url, "wrong").run("print(1)")
    assert e.value.status == 401 and isinstance(e.value, agentjail.errors.Unauthorized)


def test_a_503_that_ran_nothing_is_retried_to_a_bound(start, tmp_path):
    keys = tmp_path / "keys.json"
    key = add_key(keys, "k")
    watcher = add_key(keys, "watcher", "--metrics")
    s = start("--concurrency", "1", "--max-wait", "0.2", keys=str(keys))
    sb = agentjail.connect(s.url, key, retries=2)
    held = sb.submit("import time; time.sleep(30)")
    assert wait_for(lambda: s.metrics(key=watcher)["agentjail_runs_running"] == 1)
    with pytest.raises(agentjail.errors.Unavailable) as e:
        sb.run("print(1)")
    assert e.value.code == "queue_timeout"
    # The first try and two more, each refused: nothing ran.
    assert s.metrics(key=watcher)['agentjail_refused_total{reason="queue_wait"}'] == 3
    held.cancel()
    assert held.wait(timeout=60).status == "killed"


def test_a_session_limit_is_the_local_type(start, tmp_path):
    keys = tmp_path / "keys.json"
    key = add_key(keys, "k", "--sessions", "1")
    s = start(keys=str(keys))
    sb = agentjail.connect(s.url, key)
    with sb.session():
        with pytest.raises(agentjail.SessionLimitReached) as e:
            sb.session()
        assert e.value.status == 429


def test_checkpoints_kept_on_serve(start, tmp_path):
    """RemoteSession.checkpoint keeps the state on serve; RemoteSandbox
    restores it, lists and deletes the key's; refusals are the library's
    errnos (ENOENT, EDQUOT, EBADMSG as CheckpointRefused)."""
    store = tmp_path / "ckpts"
    s = start("--checkpoint-dir", str(store), "--checkpoint-quota-mb", "1")
    sb = agentjail.connect(s.url, s.key)
    with sb.session() as se:
        se.run("import os\nx = 41\nblob = os.urandom(600 * 1024)")
        c = se.checkpoint(name="start")
        assert isinstance(c, agentjail.StoredCheckpoint)
        assert (c.session, c.name, c.left_out) == (se.id, "start", 0) and c.expires > c.created
        with pytest.raises(agentjail.CheckpointError) as e:
            se.checkpoint()  # two of 600 KiB do not fit in 1 MiB
        assert e.value.errno == errno.EDQUOT and isinstance(e.value, agentjail.ServeError)
    assert [x.id for x in sb.checkpoints()] == [c.id]
    with sb.restore(c.id, limits={"memory_mb": 128}) as again:
        assert again.run("print(x + 1)").stdout == "42\n"
    with pytest.raises(agentjail.CheckpointError) as e:
        sb.restore("0" * 32)
    assert e.value.errno == errno.ENOENT
    (path,) = [os.path.join(d, f) for d, _, fs in os.walk(store) for f in fs
               if f == f"c-{c.id}.ckpt"]
    with open(path, "r+b") as f:
        f.seek(100)
        b = f.read(1)
        f.seek(100)
        f.write(bytes([b[0] ^ 0x40]))
    with pytest.raises(agentjail.CheckpointRefused) as e:
        sb.restore(c.id)
    assert e.value.errno == errno.EBADMSG and e.value.status == 422
    assert sb.delete_checkpoint(c.id) is True
    assert sb.delete_checkpoint(c.id) is False
    assert sb.checkpoints() == []


def test_tls_is_refused_unless_the_ca_is_given(start, tmp_path):
    cert, keyfile = make_cert(str(tmp_path))
    s = start("--tls-cert", cert, "--tls-key", keyfile)
    assert s.url.startswith("https://")
    with pytest.raises(agentjail.ServeError) as e:
        agentjail.connect(s.url, s.key).run("print(1)")
    assert e.value.status == 0 and "not trusted" in str(e.value) and "ca=" in str(e.value)
    sb = agentjail.connect(s.url, s.key, ca=cert)
    assert sb.run("print(1)").stdout == "1\n"
    with sb.session() as se:
        se.put_file("a", b"x")
        assert se.get_file("a") == b"x"


def test_a_session_deleted_elsewhere_reads_closed(start):
    s = start()
    sb = agentjail.connect(s.url, s.key)
    se = sb.session()
    assert s.request("DELETE", f"/v1/sessions/{se.id}").code == 204
    with pytest.raises(agentjail.SessionClosed) as e:
        se.run("1")
    assert isinstance(e.value, agentjail.ServeError) and e.value.status == 404
    assert se.closed_reason == "no such session"


def test_a_lost_run_says_whether_a_retry_is_safe():
    from agentjail._http import error_for
    body = json.dumps({"error": {"code": "run_lost", "message": "worker w1 lost"},
                       "run_id": "r", "lost": True, "may_have_started": True,
                       "retry_safe": False}).encode()
    e = error_for(502, body)
    assert isinstance(e, agentjail.RunLost) and not e.retry_safe and e.may_have_started
    assert errno.ENOENT  # the module is the tests' too


def test_concurrent_calls_share_the_connections(start):
    s = start("--concurrency", "4")
    sb = agentjail.connect(s.url, s.key)
    outs = []
    threads = [threading.Thread(target=lambda i=i: outs.append(sb.run(f"print({i})").stdout))
               for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outs) == [f"{i}\n" for i in range(8)]
    assert len(sb._client._t._idle) <= 8
