"""The package's PEP 517 build backend, standard library only.

`pip install ./python` must work with any Python that has pip (Debian's,
pyenv's, a bare venv's) and no network: setuptools' backend needs the
`wheel` package for bdist_wheel, which such a Python lacks and no PyPI here
can supply. So this module builds the wheel itself: libagentjail.so by make
(the source tree's own rules), then a zip laid out as the wheel spec says
(binary distribution format 1.0: the package, and a .dist-info with
METADATA, WHEEL and RECORD). The metadata is pyproject.toml's [project].

The wheel holds a Linux shared library that the package loads with cffi's
ABI mode or ctypes, never a CPython extension: any Python 3 of this
platform can use it, hence the tag py3-none-<platform>."""
import base64
import hashlib
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
import time
import zipfile

# realpath: pip may reach python/ through a symlink; the Makefile sits
# beside the real directory.
HERE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
ROOT = os.path.dirname(HERE)
PACKAGE = "agentjail"
LIBRARY = "libagentjail.so.0"


# ---- pyproject.toml ----------------------------------------------------

def read_toml(text):
    """pyproject.toml as a dict: tomllib where Python has it (3.11+);
    before that, a reader of the plain subset this file keeps to (tables,
    strings, arrays of strings, inline tables of strings)."""
    try:
        import tomllib
    except ImportError:
        return _read_simple_toml(text)
    return tomllib.loads(text)


_STRING = r'"((?:[^"\\]|\\.)*)"'


def _unquote(s):
    return s.encode("latin-1", "backslashreplace").decode("unicode_escape")


def _value(text, where):
    text = text.strip()
    m = re.fullmatch(_STRING, text)
    if m:
        return _unquote(m.group(1))
    if text.startswith("[") and text.endswith("]"):
        return [_unquote(s) for s in re.findall(_STRING, text)]
    if text.startswith("{") and text.endswith("}"):
        return {k: _unquote(v) for k, v in
                re.findall(r'([\w-]+)\s*=\s*' + _STRING, text)}
    raise ValueError(f"pyproject.toml: {where}: only strings, arrays of strings and inline "
                     f"tables of strings are read without tomllib (Python 3.11+)")


def _read_simple_toml(text):
    doc, table, pending = {}, {}, None
    for number, raw in enumerate(text.splitlines(), 1):
        # A comment ends a line unless a string could hold the '#'.
        line = raw.strip() if '"' in raw else raw.split("#", 1)[0].strip()
        if pending is not None:
            key, acc = pending
            acc += " " + line
            if acc.count("[") == acc.count("]"):
                table[key] = _value(acc, f"line {number}")
                pending = None
            else:
                pending = (key, acc)
            continue
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r"\[([\w.\-\"]+)\]", line)
        if m:
            table = doc
            for part in m.group(1).replace('"', "").split("."):
                table = table.setdefault(part, {})
            continue
        key, eq, rest = line.partition("=")
        if not eq:
            raise ValueError(f"pyproject.toml: line {number}: not `key = value`")
        key, rest = key.strip().strip('"'), rest.strip()
        if rest.startswith("[") and rest.count("[") != rest.count("]"):
            pending = (key, rest)
            continue
        table[key] = _value(rest, f"line {number}")
    return doc


def project():
    with open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8") as f:
        return read_toml(f.read())["project"]


def metadata(p):
    """METADATA (core metadata 2.1) from [project]."""
    lines = ["Metadata-Version: 2.1", f"Name: {p['name']}", f"Version: {p['version']}",
             f"Summary: {p['description']}"]
    if "requires-python" in p:
        lines.append(f"Requires-Python: {p['requires-python']}")
    if "license" in p:
        lines.append(f"License: {p['license']['text']}")
    lines += [f"Classifier: {c}" for c in p.get("classifiers", [])]
    lines += [f"Requires-Dist: {d}" for d in p.get("dependencies", [])]
    for extra, deps in p.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {d}; extra == "{extra}"' for d in deps]
    body = ""
    if "readme" in p:
        lines.append("Description-Content-Type: text/markdown")
        with open(os.path.join(HERE, p["readme"]), encoding="utf-8") as f:
            body = "\n" + f.read()
    return "\n".join(lines) + "\n" + body


# ---- the wheel ---------------------------------------------------------

def _tag():
    return "py3-none-" + re.sub(r"[^\w]", "_", sysconfig.get_platform())


def _dist_info(p):
    return f"{p['name']}-{p['version']}.dist-info"


def _wheel_file():
    return ("Wheel-Version: 1.0\nGenerator: agentjail_build\nRoot-Is-Purelib: false\n"
            f"Tag: {_tag()}\n")


def _build_library():
    if not os.path.exists(os.path.join(ROOT, "Makefile")):
        raise SystemExit(
            f"agentjail: the package is built from the agentjail source tree (python/ beside "
            f"its Makefile); {HERE} has no ../Makefile (pip before 21.3 copies the directory "
            f"away first: upgrade pip, or pip install --use-feature=in-tree-build)")
    # make decides what is out of date; its own errors name what is missing
    # (scripts/install-deps.sh installs it). Its output goes to stderr: a
    # PEP 517 hook's stdout is pip's to read.
    r = subprocess.run(["make", "-C", ROOT, "build/libagentjail.so"], stdout=sys.stderr)
    if r.returncode != 0:
        raise SystemExit("agentjail: building libagentjail.so failed (see make's output "
                         "above; ./scripts/install-deps.sh installs what it needs)")
    return os.path.join(ROOT, "build", LIBRARY)


def _package_files():
    """(path in the wheel, path on disk) of the package's own files."""
    src = os.path.join(HERE, PACKAGE)
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = sorted(d for d in dirnames if d not in ("__pycache__", "_lib"))
        for name in sorted(filenames):
            if name.endswith((".py", ".typed")):
                full = os.path.join(dirpath, name)
                yield os.path.relpath(full, HERE).replace(os.sep, "/"), full


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def _write_wheel(path, p, library):
    info = _dist_info(p)
    # Reproducible when asked (SOURCE_DATE_EPOCH); zip cannot go below 1980.
    stamp = time.gmtime(max(int(os.environ.get("SOURCE_DATE_EPOCH", time.time())), 315532800))
    record = []

    def add(z, arcname, data, mode=0o644):
        zi = zipfile.ZipInfo(arcname, stamp[:6])
        zi.external_attr = (0o100000 | mode) << 16
        zi.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(zi, data)
        if not arcname.endswith("/RECORD"):
            record.append(_record_line(arcname, data))

    with zipfile.ZipFile(path, "w") as z:
        for arcname, full in _package_files():
            with open(full, "rb") as f:
                add(z, arcname, f.read())
        with open(library, "rb") as f:
            add(z, f"{PACKAGE}/_lib/{LIBRARY}", f.read(), 0o755)
        for name in ("LICENSE", "NOTICE"):
            if os.path.exists(os.path.join(ROOT, name)):
                with open(os.path.join(ROOT, name), "rb") as f:
                    add(z, f"{info}/{name}", f.read())
        add(z, f"{info}/METADATA", metadata(p).encode())
        add(z, f"{info}/WHEEL", _wheel_file().encode())
        add(z, f"{info}/top_level.txt", f"{PACKAGE}\n".encode())
        # RECORD lists itself without a hash (the spec's rule).
        record.append(f"{info}/RECORD,,")
        add(z, f"{info}/RECORD", ("\n".join(record) + "\n").encode())


# ---- PEP 517 hooks -----------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    p = project()
    info = os.path.join(metadata_directory, _dist_info(p))
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(metadata(p))
    with open(os.path.join(info, "WHEEL"), "w", encoding="utf-8") as f:
        f.write(_wheel_file())
    return _dist_info(p)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    p = project()
    library = _build_library()
    name = f"{p['name']}-{p['version']}-{_tag()}.whl"
    # Written aside and renamed: pip never sees half a wheel.
    fd, tmp = tempfile.mkstemp(suffix=".whl", dir=wheel_directory)
    os.close(fd)
    try:
        _write_wheel(tmp, p, library)
        os.replace(tmp, os.path.join(wheel_directory, name))
    except BaseException:
        os.unlink(tmp)
        raise
    return name
