"""The seed article's six hostile programs, through the binding, on every
tier and in the warm mode of those that have one: the same programs and
expectations as tests/hostile.h's first six, and the host checked
afterwards (a token not printed, a listener that accepted nothing;
conftest: no process, mount or cgroup left). The programs are the hostile
table's (src/attack/programs.c), read through `agentjail attack --list
--json`."""
import json
import os
import secrets
import socket
import subprocess
import tempfile

import pytest

from agentjail import Status
from conftest import ROOT, TIERS, WARM_TIERS


def _table():
    out = subprocess.run([os.path.join(ROOT, "build", "agentjail"), "attack", "--list", "--json"],
                         check=True, capture_output=True, text=True).stdout
    return {p["id"]: p["code"] for p in json.loads(out)}


PROGRAMS = _table()


def program(name, **values):
    """The table's program with its placeholders filled, as the C side's
    hostile_fill does: strings escaped for a Python '...' literal."""
    code = PROGRAMS[name]
    for key, value in values.items():
        if isinstance(value, str):
            value = value.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")
        code = code.replace("{" + key.upper() + "}", str(value))
    return code


@pytest.fixture(params=TIERS + WARM_TIERS)
def tier(request):
    return request.param


def test_cpu_loop(sandbox_for, tier):
    ex = sandbox_for(tier, cpu_sec=1).run(program("cpu-loop"))
    assert ex.status is Status.TIMEOUT and ex.exit_code is None
    assert "CPU" in ex.message or "wall-clock" in ex.message


def test_memory_512mb(sandbox_for, tier):
    ex = sandbox_for(tier).run(program("memory-512mb"))
    assert ex.status is Status.MEMORY
    assert "allocated" not in ex.stdout and "memory" in ex.message


def test_fork_bomb(sandbox_for, tier):
    sb = sandbox_for(tier)
    ex = sb.run(program("fork-bomb"))
    assert ex.status is not Status.SANDBOX_ERROR
    made = int(ex.stdout.split("made ")[1]) if "made " in ex.stdout else -1
    # The first process alone can never fork past the pids limit.
    assert 0 <= made < sb.limit("pids")


def test_disk_fill(sandbox_for, tier):
    # The disk limit, not the file-size limit, must stop it.
    sb = sandbox_for(tier, file_size_mb=4096)
    ex = sb.run(program("disk-fill"))
    assert ex.status is Status.OK
    words = ex.stdout.split()
    assert words[0] == "stopped" and words[2] == "ENOSPC"
    assert int(words[1]) <= sb.limit("disk_mb")


def test_read_secrets(sandbox_for, tier):
    token = secrets.token_hex(16)
    os.makedirs("/var/lib", exist_ok=True)
    # A caller's 0600 file in a 0700 directory, as ~/.ssh/id_rsa is, and
    # the caller's environment holding the token, as an API key would.
    with tempfile.TemporaryDirectory(prefix="agentjail-pytest-", dir="/var/lib") as d:
        os.chmod(d, 0o700)
        path = os.path.join(d, "secret")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, token.encode())
        os.close(fd)
        os.environ["AJ_TEST_API_KEY"] = token
        try:
            ex = sandbox_for(tier).run(program("read-secrets", secret=path))
        finally:
            del os.environ["AJ_TEST_API_KEY"]
    assert ex.status is Status.OK
    assert path in ex.stdout  # it really tried the file, and got nothing
    assert token not in ex.stdout and token not in ex.stderr
    assert "AJ_TEST_API_KEY" not in ex.stdout


def test_network(sandbox_for, tier):
    token = secrets.token_hex(8)
    # A listener of the test's own on loopback: the program must not reach
    # it, nor anything else.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as ls:
        ls.bind(("127.0.0.1", 0))
        ls.listen(8)
        ls.setblocking(False)
        port = ls.getsockname()[1]
        ex = sandbox_for(tier).run(program("loopback-network", port=port, token=token))
        with pytest.raises(BlockingIOError):
            ls.accept()
    assert ex.status is Status.OK
    assert "CONNECTED" not in ex.stdout and "RESOLVED" not in ex.stdout
    assert "blocked 127.0.0.1" in ex.stdout


def test_every_table_program_is_python():
    # Compiled, never run: a program that would not parse once filled in
    # would end in a SyntaxError on every tier and prove nothing.
    assert len(PROGRAMS) >= 17
    for name in PROGRAMS:
        code = program(name, token="t0k", secret="/a'b", sock="/s", cwd="/c\\d", mnt="/m",
                       hostip="127.0.0.1", port=1, hostport=2, sentinel=3)
        assert "{TOKEN}" not in code
        compile(code, name, "exec")
