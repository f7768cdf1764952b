"""examples/agent_loop.py replays its recorded transcripts on the tiers,
the same loop whatever the tier: the model's buggy first call comes back
flagged as an error, its fix runs, and its network call finds no network."""
import os
import subprocess
import sys

import pytest

from conftest import ROOT

LOOP = os.path.join(ROOT, "examples", "agent_loop.py")


def replay(*args):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    return subprocess.run([sys.executable, LOOP, *args], capture_output=True, text=True,
                          timeout=300, env=env)


@pytest.mark.parametrize("api", ["anthropic", "openai"])
@pytest.mark.parametrize("extra", [[], ["--session"], ["--tier", "container", "--image", "test"]])
def test_the_transcript_replays(api, extra):
    r = replay("--api", api, *extra)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "NameError: name 'time' is not defined" in out
    assert "fib(30) = 832040" in out
    assert "lookup service unreachable" in out
    assert "replayed 3 assistant turns, 3 tool calls" in out
    if api == "anthropic":
        assert out.count("is_error: true") == 1 and out.count("is_error: false") == 2
    assert "status: error (exit code 1)" in out


def test_usage_errors_exit_2():
    r = replay("--transcript", "/nonexistent.json")
    assert r.returncode == 2 and "/nonexistent.json" in r.stderr
    r = replay("--api", "openai", "--transcript",
               os.path.join(ROOT, "examples", "transcripts", "anthropic.json"))
    assert r.returncode == 2 and "pass --api anthropic" in r.stderr
