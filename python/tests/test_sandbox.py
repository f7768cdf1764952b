"""Sandbox.run through the binding: every field of Execution, every status,
the typed errors, and the library's own renderings of a result."""
import json
import os
import signal
import subprocess

import pytest

import agentjail
from agentjail import (ConfigError, InvalidCode, SandboxClosed, SandboxError,
                       SandboxUnavailable, Status)
from conftest import tier_options


def test_every_field_of_a_clean_run(sb):
    ex = sb.run("import sys\nprint('out')\nprint('err', file=sys.stderr)\n")
    assert ex.status is Status.OK and ex.status == "ok" and ex.ok
    assert ex.exit_code == 0 and ex.signal is None
    assert ex.stdout == "out\n" and ex.stdout_bytes == b"out\n"
    assert ex.stderr == "err\n" and ex.stderr_bytes == b"err\n"
    assert ex.stdout_truncated is False and ex.stderr_truncated is False
    assert ex.wall_ms > 0 and ex.cpu_ms >= 0 and ex.memory_kb > 0
    assert ex.message is None
    assert ex.tier == "process"
    assert ex.images == [] and ex.images_dropped == 0


def test_error_exit_code_and_exception(sb):
    ex = sb.run("import sys\nsys.exit(3)\n")
    assert (ex.status, ex.exit_code, ex.ok) == (Status.ERROR, 3, False)
    ex = sb.run("1 / 0\n")
    assert ex.status is Status.ERROR and ex.exit_code == 1
    assert "ZeroDivisionError" in ex.stderr


def test_cpu_timeout(sandbox_for):
    ex = sandbox_for("process", cpu_sec=1).run("while True:\n    pass\n")
    assert ex.status is Status.TIMEOUT and ex.exit_code is None
    assert "CPU" in ex.message or "wall-clock" in ex.message


def test_wall_clock_timeout(sandbox_for):
    ex = sandbox_for("process", timeout=1).run("import time\ntime.sleep(30)\n")
    assert ex.status is Status.TIMEOUT
    assert "wall-clock limit of 1 s" in ex.message


def test_the_calls_own_timeout(sb):
    ex = sb.run("import time\ntime.sleep(30)\n", timeout=0.5)
    assert ex.status is Status.TIMEOUT
    assert "call's timeout of 0.5 s" in ex.message
    # A deadline past the sandbox's own changes nothing; a bad one is refused.
    assert sb.run("print(1)", timeout=999).ok
    for bad in (0, -1, "1", True):
        with pytest.raises(ValueError):
            sb.run("print(1)", timeout=bad)


def test_memory_limit(sb):
    ex = sb.run("b = bytearray(512 * 1024 * 1024)\nprint('allocated')\n")
    assert ex.status is Status.MEMORY
    assert "allocated" not in ex.stdout and "memory" in ex.message


def test_output_limit(sandbox_for):
    ex = sandbox_for("process", output_kb=16).run("print('x' * 100000)\n")
    assert ex.status is Status.OUTPUT_LIMIT and ex.stdout_truncated
    assert len(ex.stdout_bytes) <= 16 * 1024
    assert "16 KiB" in ex.message


def test_killed_by_a_signal(sb):
    ex = sb.run("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    assert ex.status is Status.KILLED
    assert ex.signal == signal.SIGSEGV and ex.exit_code is None


def test_a_failed_sandbox_raises_with_the_result(sandbox_for):
    # Slot locks in a directory that cannot be made: the sandbox, not the
    # code, fails, at run time.
    sb = sandbox_for("process", state_dir="/proc/no-such-dir")
    with pytest.raises(SandboxError) as e:
        sb.run("print(1)")
    assert e.value.execution.status is Status.SANDBOX_ERROR
    assert e.value.execution.message == "uid slots: mkdir /proc/no-such-dir: ENOENT"
    assert str(e.value) == e.value.execution.message


def test_an_interpreter_that_is_not_there_is_refused_at_open():
    with pytest.raises(SandboxUnavailable, match="python: /nonexistent/python3: ENOENT"):
        agentjail.Sandbox(tier="process", python="/nonexistent/python3")


def test_refused_code(sb):
    with pytest.raises(InvalidCode, match="NUL byte at offset 5"):
        sb.run("print\0(1)")
    with pytest.raises(InvalidCode, match="more than"):
        sb.run(b"#" * (5 << 20))
    with pytest.raises(InvalidCode, match="UTF-8"):
        sb.run("print('\udc80')")
    with pytest.raises(TypeError):
        sb.run(42)
    assert sb.run(b"print('bytes ok')").stdout == "bytes ok\n"


def test_invalid_utf8_output_is_kept_raw(sb):
    ex = sb.run("import sys\nsys.stdout.buffer.write(b'a\\xffb')\n")
    assert ex.stdout_bytes == b"a\xffb"
    assert ex.stdout == "a\ufffdb"


def test_text_and_json_are_the_librarys(sb):
    ex = sb.run("import sys\nprint('hi')\nsys.exit(2)\n")
    text = ex.text()
    assert text.startswith("status: error (exit code 2)\n--- stdout ---\nhi\n")
    assert "--- stderr ---\n(empty)" in text
    j = json.loads(ex.to_json())
    assert j["status"] == "error" and j["exit_code"] == 2 and j["stdout"] == "hi\n"
    assert j["tier"] == "process" and j["signal"] is None


@pytest.mark.parametrize("kw, words", [
    (dict(memory_mb=0), "memory"),
    (dict(timeout=0), "timeout: 0 is out of range"),
    (dict(pids=10**10), "pids"),
    (dict(timeout=True), "timeout"),
    (dict(memory_mb=1.5), "memory_mb"),
    (dict(image="a\0b"), "NUL"),
    (dict(timeout=float("nan")), "finite"),
])
def test_bad_limits_are_named(kw, words):
    with pytest.raises(ConfigError, match=words):
        agentjail.Sandbox(tier="process", **kw)


def test_bad_tier_and_unknown_option():
    with pytest.raises(ConfigError, match="not one of process, container"):
        agentjail.Sandbox(tier="vm")
    with pytest.raises(TypeError, match="memory"):
        agentjail.Sandbox(tier="process", memory=256)
    with pytest.raises(TypeError):
        agentjail.ProcessSandbox(tier="docker")


@pytest.mark.parametrize("tier", ["microvm", "docker", "gvisor"])
def test_warm_is_refused_where_the_tier_has_none(tier):
    with pytest.raises(ConfigError) as e:
        agentjail.Sandbox(tier=tier, warm=True)
    assert str(e.value) == (f"warm: the {tier} tier has no warm mode "
                            "(the process and container tiers have)")


@pytest.mark.parametrize("kw, message", [
    (dict(warm=True, preload="num py"), "preload: 'num py' is not a module name"),
    (dict(warm=True, preload=["numpy", "os;import sys"]),
     "preload: 'os;import sys' is not a module name"),
    (dict(warm=True, preload=("numpy", "")),
     "preload: 'numpy,' has an empty module name (a stray comma)"),
    (dict(preload="numpy"), "preload: needs warm mode (--warm)"),
    (dict(warm=True, preload=["numpy", 3]), "preload: every module name must be a string"),
    (dict(warm=True, preload=3), "preload: must be a string or a list of strings, not int"),
    (dict(warm=1), "warm: must be True or False, not int"),
])
def test_warm_preload_is_checked_by_the_library(kw, message):
    with pytest.raises(ConfigError) as e:
        agentjail.Sandbox(tier="process", **kw)
    assert str(e.value) == message


def test_warm_options_are_kept():
    from agentjail.config import Config
    c = Config("container", dict(warm=True, preload=["numpy", "os.path"]))
    assert c.value("warm") is True
    assert c.value("preload") == "numpy,os.path"
    c = Config("process", {})
    assert c.value("warm") is False and c.value("preload") is None


def test_ro_bind_shows_a_host_path_read_only(tmp_path):
    # tmp_path is under /tmp, which no tier shows: only the bind does.
    (tmp_path / "data.txt").write_text("from the host\n")
    tmp_path.chmod(0o755)
    (tmp_path / "data.txt").chmod(0o644)
    with agentjail.Sandbox(**tier_options("process", ro_bind=[f"{tmp_path}:/mnt/in"])) as s:
        r = s.run("print(open('/mnt/in/data.txt').read(), end='')\n"
                  "open('/mnt/in/new', 'w')\n")
    assert r.stdout == "from the host\n"
    assert r.exit_code == 1 and "Read-only file system" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.txt"]


def test_trust_ca_is_checked_by_the_library_and_trusted(tmp_path):
    """trust_ca: a file that is not PEM certificates is refused in the
    library's words; one that is joins the sandbox's CA bundle (one more
    CA than the view's own)."""
    key = tmp_path / "key.pem"
    key.write_text("-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n")
    with pytest.raises(ConfigError) as e:
        agentjail.Sandbox(tier="process", trust_ca=str(key))
    assert str(e.value) == (f"trust_ca: {key} line 1: holds a 'PRIVATE KEY' block; only "
                            "CERTIFICATE blocks may be trusted (a private key must never "
                            "reach a sandbox)")
    with pytest.raises(ConfigError, match="No such file"):
        agentjail.Sandbox(tier="process", trust_ca=str(tmp_path / "none.pem"))
    ca = tmp_path / "ca.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", str(tmp_path / "k"),
                    "-out", str(ca), "-days", "1", "-subj", "/CN=agentjail py test CA"],
                   check=True, capture_output=True)
    count = ("import ssl\n"
             "print(ssl.create_default_context().cert_store_stats()['x509'])\n")
    with agentjail.Sandbox(**tier_options("process")) as s:
        own = int(s.run(count).stdout)
    with agentjail.Sandbox(**tier_options("process", trust_ca=str(ca))) as s:
        assert int(s.run(count).stdout) == own + 1


@pytest.mark.parametrize("kw, message", [
    (dict(ro_bind="data"), "ro_bind: 'data': HOST is not an absolute path"),
    (dict(ro_bind=["/srv", "/srv:/tmp/x"]),
     "ro_bind: '/srv:/tmp/x': SANDBOX is under /tmp, which each run makes for itself "
     "(choose a path such as /mnt/NAME)"),
    (dict(ro_bind=["/srv", 3]), "ro_bind: every path must be a string, not int"),
    (dict(ro_bind=3), "ro_bind: must be a string or a list of strings, not int"),
])
def test_ro_bind_is_checked_by_the_library(kw, message):
    with pytest.raises(ConfigError) as e:
        agentjail.Sandbox(tier="process", **kw)
    assert str(e.value) == message


def test_ro_bind_is_refused_on_microvm():
    with pytest.raises(ConfigError) as e:
        agentjail.Sandbox(tier="microvm", ro_bind="/srv")
    assert str(e.value).startswith("ro_bind: the microvm tier shows no host path")
    from agentjail.config import Config
    assert Config("process", dict(ro_bind="/srv")).value("ro_bind") == ["/srv"]


def test_unavailable_tier_says_why_as_check_does():
    opts = tier_options("container", image="/nonexistent/image")
    with pytest.raises(SandboxUnavailable) as e:
        agentjail.Sandbox(tier="container", **opts)
    assert e.value.tier == "container"
    assert "image" in e.value.reason
    assert e.value.reason == agentjail.check("container", **opts)["container"]
    assert agentjail.check("process")["process"] is None


def test_aliases():
    for cls, tier in [(agentjail.ProcessSandbox, "process"),
                      (agentjail.ContainerSandbox, "container")]:
        with cls(**tier_options(tier)) as s:
            assert s.tier == tier
            assert s.run("print(7)").stdout == "7\n"


def test_closed_sandbox_refuses_runs(sandbox_for):
    sb = sandbox_for("process")
    with sb:
        assert sb.run("print(1)").ok
    assert sb.closed
    sb.close()  # idempotent
    with pytest.raises(SandboxClosed):
        sb.run("print(1)")


def test_limits_reach_the_program(sandbox_for):
    sb = sandbox_for("process", memory_mb=128, pids=32, file_size_mb=2)
    assert sb.limit("memory_mb") == 128 and sb.timeout == 10
    ex = sb.run("import resource\n"
                "print(resource.getrlimit(resource.RLIMIT_FSIZE)[0] // 1048576)\n")
    assert ex.stdout == "2\n"


def test_environment_is_clean(sb):
    os.environ["AJ_PYTEST_SECRET"] = "s3cr3t-token"
    try:
        ex = sb.run("import os\nprint(sorted(os.environ))\n")
    finally:
        del os.environ["AJ_PYTEST_SECRET"]
    assert "AJ_PYTEST_SECRET" not in ex.stdout


@pytest.mark.parametrize("tier", ["process", "container"])
def test_warm_runs_with_preloaded_modules(sandbox_for, tier):
    """Warm mode through the binding: numpy preloaded in the zygote, each
    run its own draws, and an import that fails refuses the open."""
    extra = dict(image="test-ds") if tier == "container" else {}
    sb = sandbox_for(tier, warm=True, preload=["numpy"], **extra)
    code = ("import sys, numpy\n"
            "print('numpy' in sys.modules, numpy.random.random())\n")
    first, second = sb.run(code), sb.run(code)
    assert first.ok and second.ok, (first.stderr, second.stderr)
    assert first.stdout.startswith("True ") and second.stdout.startswith("True ")
    assert first.stdout != second.stdout
    with pytest.raises(agentjail.SandboxUnavailable) as e:
        sandbox_for(tier, warm=True, preload="agentjail_no_such_module", **extra)
    assert "import agentjail_no_such_module: ModuleNotFoundError" in str(e.value)


def test_env_reaches_runs_and_sessions_and_weakening_names_are_refused(sandbox_for):
    """env= (the CLI's --env): the code sees the deployer's variables beside
    the sandbox's own; a session adds its own over them; a name that would
    weaken the sandbox is a ConfigError naming why, before anything opens."""
    sb = sandbox_for("process", env={"AJ_VAR": "one two", "TZ": "UTC"})
    show = "import os; print(os.environ.get('AJ_VAR'), os.environ.get('TZ'), " \
           "os.environ.get('MORE'), os.environ['HOME'])"
    assert sb.run(show).stdout == "one two UTC None /tmp/work\n"
    assert sb.limit("env") == {"AJ_VAR": "one two", "TZ": "UTC"}
    with sb.session(env={"MORE": "m", "TZ": "Europe/Paris"}) as s:
        assert s.run(show).stdout == "one two Europe/Paris m /tmp/work\n"
    for env, words in [
        ({"LD_PRELOAD": "/tmp/work/x.so"}, "env: LD_PRELOAD may not be set: the dynamic loader"),
        ({"HTTPS_PROXY": "http://elsewhere:3128"}, "egress owns the proxy variables"),
        ({"PYTHONSTARTUP": "/tmp/work/s.py"}, "it changes what Python runs"),
        ({"PYTHONPATH": "/usr/lib"}, "only directories under /tmp/work"),
        ({"PATH": "/tmp/work"}, "the sandbox sets it"),
        ({"A=B": "x"}, "'A=B' is not a variable name"),
        ({"X": "a\0b"}, "contains a NUL byte"),
        ({"X": 1}, "names and values must be strings"),
        (["X=1"], "must be a dict"),
    ]:
        with pytest.raises(ConfigError) as e:
            sandbox_for("process", env=env)
        assert words in str(e.value), (env, str(e.value))
    with pytest.raises(ConfigError) as e:
        sb.session(env={"LD_AUDIT": "x"})
    assert "LD_AUDIT may not be set" in str(e.value)
