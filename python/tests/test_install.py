"""`pip install ./python` gives a package that works on its own: the
library inside it, found from anywhere, on Debian's python3 (with its cffi)
and on one that is not Debian's (no cffi, no setuptools, no wheel). Offline:
PIP_NO_INDEX keeps pip from looking for anything to download."""
import base64
import csv
import hashlib
import io
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile

from conftest import ROOT, tier_options

# The documented recipe, word for word (test_the_recipe_is_the_documented_one
# holds docs/python.md and the README's tour to it).
RECIPE = ["python3 -m venv venv", "venv/bin/pip install ./python"]

CLEAN_ENV = {k: v for k, v in os.environ.items()
             if k not in ("PYTHONPATH", "AGENTJAIL_LIBRARY", "AGENTJAIL_BINDING")}
CLEAN_ENV["PIP_NO_INDEX"] = "1"


def test_pip_install_works_outside_the_tree(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True)
    py = str(venv / "bin" / "python")
    subprocess.run([py, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-index",
                    os.path.join(ROOT, "python")], check=True, cwd=str(tmp_path), env=CLEAN_ENV)
    out = subprocess.run(
        [py, "-c", "import agentjail, agentjail._native\n"
                   "print(agentjail.LIBRARY_PATH)\n"
                   "print(agentjail._native.BINDING)\n"
                   "print(agentjail.ProcessSandbox().run('print(6 * 7)').stdout, end='')\n"],
        capture_output=True, text=True, check=True, cwd="/", env=CLEAN_ENV).stdout.splitlines()
    assert out[0].startswith(str(venv)) and out[0].endswith("agentjail/_lib/libagentjail.so.0")
    assert out[1:] == ["cffi", "42"]  # Debian's python3-cffi, seen through the venv


def test_a_missing_library_is_named(tmp_path):
    env = dict(os.environ, AGENTJAIL_LIBRARY=str(tmp_path / "nope.so"),
               PYTHONPATH=os.path.join(ROOT, "python"))
    # `import agentjail` works (connect() needs no library); the first
    # local sandbox names what is missing.
    r = subprocess.run([sys.executable, "-c", "import agentjail\nagentjail.connect\n"
                        "agentjail.ProcessSandbox"], capture_output=True,
                       text=True, env=env, cwd="/")
    assert r.returncode != 0
    assert "libagentjail.so not found" in r.stderr and "nope.so (absent)" in r.stderr
    assert '"<string>", line 3' in r.stderr  # at the sandbox, not the import


def non_debian_python(where):
    """A python3 with a prefix of its own, as pyenv or a tarball install
    has: Debian's interpreter and standard library, none of Debian's
    dist-packages (no cffi, setuptools or wheel) and not marked externally
    managed. Returns its bin directory."""
    real = os.path.realpath(sys.executable)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    stdlib = sysconfig.get_paths()["stdlib"]
    prefix = where / "prefix"
    (prefix / "bin").mkdir(parents=True)
    lib = prefix / "lib" / version
    lib.mkdir(parents=True)
    for entry in os.listdir(stdlib):
        if entry not in ("dist-packages", "site-packages", "EXTERNALLY-MANAGED"):
            os.symlink(os.path.join(stdlib, entry), lib / entry)
    # A copy, not a link: Python finds its prefix from where the binary is.
    shutil.copy2(real, prefix / "bin" / version)
    os.symlink(version, prefix / "bin" / "python3")
    return prefix / "bin"


def test_the_recipe_works_on_a_python_that_is_not_debians(tmp_path):
    bindir = non_debian_python(tmp_path)
    missing = subprocess.run(
        [str(bindir / "python3"), "-c",
         "import importlib.util as u\n"
         "print(*[m for m in ('cffi', 'setuptools', 'wheel') if u.find_spec(m) is None])"],
        capture_output=True, text=True, check=True, env=CLEAN_ENV).stdout.split()
    assert missing == ["cffi", "setuptools", "wheel"], "the stand-in python3 sees Debian's packages"
    os.symlink(os.path.join(ROOT, "python"), tmp_path / "python")
    env = dict(CLEAN_ENV, PATH=f"{bindir}:{CLEAN_ENV.get('PATH', '/usr/bin:/bin')}")
    for line in RECIPE:
        r = subprocess.run(line, shell=True, cwd=str(tmp_path), env=env,
                           capture_output=True, text=True)
        assert r.returncode == 0, f"{line}:\n{r.stdout[-3000:]}{r.stderr[-3000:]}"
    opts = tier_options("process")
    out = subprocess.run(
        [str(tmp_path / "venv" / "bin" / "python"), "-c",
         "from agentjail import Sandbox, _native\n"
         f"ex = Sandbox(**{opts!r}).run('print(1)')\n"
         "print(_native.BINDING, ex.status, ex.stdout, end='')\n"],
        capture_output=True, text=True, cwd="/", env=CLEAN_ENV)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ctypes", "ok", "1"]


def test_the_recipe_is_the_documented_one():
    page = open(os.path.join(ROOT, "docs", "python.md"), encoding="utf-8").read()
    section = page.split("# Python: `import agentjail`", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#", 1)[0].strip() for line in block.splitlines()]
    assert [c for c in commands if c] == RECIPE
    # The README's tour gives it on one line, the same commands in order.
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    tour = readme.split("## A five-minute tour", 1)[1].split("\n## ", 1)[0]
    assert "`" + " && ".join(RECIPE) + "`" in tour.replace("\n", " ")


def test_the_wheel_follows_the_wheel_spec(tmp_path):
    """Every file of the wheel is in RECORD with its right hash and size,
    METADATA says what pyproject.toml says, and the licence ships with it."""
    sys.path.insert(0, os.path.join(ROOT, "python", "_build"))
    try:
        import agentjail_build
    finally:
        sys.path.pop(0)
    name = agentjail_build.build_wheel(str(tmp_path))
    with zipfile.ZipFile(tmp_path / name) as z:
        info = "agentjail-0.5.0.dist-info"
        rows = list(csv.reader(io.StringIO(z.read(f"{info}/RECORD").decode())))
        recorded = {r[0]: r[1:] for r in rows}
        assert set(recorded) == set(z.namelist())
        for path, (digest, size) in recorded.items():
            if path == f"{info}/RECORD":
                assert digest == size == ""
                continue
            data = z.read(path)
            want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            assert digest == "sha256=" + want.decode() and int(size) == len(data), path
        meta = z.read(f"{info}/METADATA").decode()
        wheel = z.read(f"{info}/WHEEL").decode()
        assert "agentjail/_lib/libagentjail.so.0" in recorded
        assert f"{info}/LICENSE" in recorded
        assert z.read(f"{info}/LICENSE") == open(os.path.join(ROOT, "LICENSE"), "rb").read()
    assert "Name: agentjail\nVersion: 0.5.0\n" in meta and "License: Apache-2.0\n" in meta
    assert 'Requires-Dist: cffi>=1.15; extra == "cffi"' in meta
    assert "Root-Is-Purelib: false\n" in wheel and "Tag: py3-none-linux_" in wheel


def test_the_backend_reads_pyproject_without_tomllib():
    """Before Python 3.11 there is no tomllib: the backend's own reader must
    give what tomllib gives for this pyproject.toml."""
    import tomllib
    sys.path.insert(0, os.path.join(ROOT, "python", "_build"))
    try:
        import agentjail_build
    finally:
        sys.path.pop(0)
    text = open(os.path.join(ROOT, "python", "pyproject.toml"), encoding="utf-8").read()
    assert agentjail_build._read_simple_toml(text) == tomllib.loads(text)
