"""`pip install` in a session through the egress proxy (docs/egress.md,
"Installing packages"): a PEP 503 simple index the test serves on loopback,
holding a wheel the test builds, reached with allow-cidr 127.0.0.1/32:PORT
only. pip installs into the workspace (PIP_TARGET, rule E1) and the next
cell imports it; the index sees pip's requests; after the session drops the
rule, pip reaches nothing."""
import base64
import hashlib
import http.server
import io
import os
import threading
import zipfile

import pytest

from conftest import tier_options

import agentjail

# The container tier's image with pip (make test builds it: --from-host
# --packages python3-pip,python3-requests).
PIP_IMAGE = "test-pip"


def build_wheel(name, version, body):
    """A minimal pure-Python wheel (PEP 427): the module, METADATA, WHEEL
    and a RECORD with each file's hash."""
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": body.encode(),
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: agentjail-test\n"
                         b"Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{dist}/RECORD,,")
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for path, data in files.items():
            z.writestr(path, data)
    return f"{name}-{version}-py3-none-any.whl", out.getvalue()


class Index:
    """A PEP 503 simple index on 127.0.0.1, serving one project."""

    def __init__(self, project, wheel_name, wheel):
        self.requests = []
        digest = hashlib.sha256(wheel).hexdigest()
        pages = {
            "/simple/": f'<a href="/simple/{project}/">{project}</a>'.encode(),
            f"/simple/{project}/": (f'<a href="/files/{wheel_name}#sha256={digest}">'
                                    f"{wheel_name}</a>").encode(),
            f"/files/{wheel_name}": wheel,
        }
        index = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                index.requests.append(self.path)
                body = pages.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                kind = "application/octet-stream" if self.path.endswith(".whl") else "text/html"
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def index():
    token = base64.b32encode(os.urandom(10)).decode().lower()
    wheel_name, wheel = build_wheel("ajpipdemo", "1.0", f"TOKEN = {token!r}\n")
    ix = Index("ajpipdemo", wheel_name, wheel)
    ix.token = token
    yield ix
    ix.close()


PIP = ("import subprocess, sys\n"
       "p = subprocess.run([sys.executable, '-m', 'pip', 'install', '--no-input',\n"
       "                    '--disable-pip-version-check', '--retries', '0', '--index-url',\n"
       "                    'http://127.0.0.1:{port}/simple/', 'ajpipdemo'],\n"
       "                   capture_output=True, text=True, timeout=120)\n"
       "print('pip exit', p.returncode)\n"
       "print(p.stdout[-2000:], p.stderr[-2000:])\n")


def test_pip_installs_from_the_allowed_index_and_the_next_cell_imports_it(index):
    rule = f"127.0.0.1/32:{index.port}"
    opts = tier_options("container", image=PIP_IMAGE, allow_cidrs=[rule], timeout=120,
                        cpu_sec=60, memory_mb=512)
    with agentjail.Sandbox(tier="container", **opts) as sb, sb.session() as s:
        r = s.run("import importlib.util\nprint('pip present', "
                  "importlib.util.find_spec('pip') is not None)\n")
        assert "pip present True" in r.stdout, r.stdout + r.stderr
        r = s.run(PIP.format(port=index.port))
        assert "pip exit 0" in r.stdout, r.stdout + r.stderr
        assert "/simple/ajpipdemo/" in index.requests
        assert any(p.startswith("/files/ajpipdemo-1.0") for p in index.requests)
        assert r.egress is not None
        allowed = [c for c in r.egress["connections"] if c["allowed"]]
        assert allowed and all(c["port"] == index.port for c in allowed)
        r = s.run("import ajpipdemo\nprint('imported', ajpipdemo.TOKEN)\n")
        assert f"imported {index.token}" in r.stdout, r.stdout + r.stderr
        # Locked: with the rule dropped, the index is out of reach.
        s.egress_keep(hosts=[], cidrs=[])
        seen = len(index.requests)
        r = s.run(PIP.replace("'ajpipdemo']", "'--upgrade', 'ajpipdemo']").format(port=index.port))
        assert "pip exit 0" not in r.stdout
        assert len(index.requests) == seen
        assert any(not c["allowed"] for c in r.egress["connections"])
