"""`pip install ./python` gives a package that works on its own: the
library inside it, found from anywhere. Offline here, so pip uses Debian's
setuptools (--no-build-isolation) and cffi (a venv that sees them)."""
import os
import subprocess
import sys

from conftest import ROOT


def test_pip_install_works_outside_the_tree(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True)
    py = str(venv / "bin" / "python")
    subprocess.run([py, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-index",
                    os.path.join(ROOT, "python")], check=True, cwd=str(tmp_path))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AGENTJAIL_LIBRARY")}
    out = subprocess.run(
        [py, "-c", "import agentjail\n"
                   "print(agentjail.LIBRARY_PATH)\n"
                   "print(agentjail.ProcessSandbox().run('print(6 * 7)').stdout, end='')\n"],
        capture_output=True, text=True, check=True, cwd="/", env=env).stdout.splitlines()
    assert out[0].startswith(str(venv)) and out[0].endswith("agentjail/_lib/libagentjail.so.0")
    assert out[1] == "42"


def test_a_missing_library_is_named(tmp_path):
    env = dict(os.environ, AGENTJAIL_LIBRARY=str(tmp_path / "nope.so"),
               PYTHONPATH=os.path.join(ROOT, "python"))
    r = subprocess.run([sys.executable, "-c", "import agentjail"], capture_output=True,
                       text=True, env=env, cwd="/")
    assert r.returncode != 0
    assert "libagentjail.so not found" in r.stderr and "nope.so (absent)" in r.stderr
