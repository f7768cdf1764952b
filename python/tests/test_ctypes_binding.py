"""The ctypes backend (a Python without cffi) through every kind of call
the package makes: the config's strings, lists and numbers, a run, the
library's renderings of a result (with images), a session's file calls,
the tool's argument check and definition. In a process of its own, with
AGENTJAIL_BINDING=ctypes, so this suite's cffi is not what answers."""
import json
import os
import subprocess
import sys

from conftest import ROOT, tier_options

SCRIPT = r'''
import json, sys
from agentjail import Sandbox, _native
from agentjail.result import Image
import dataclasses
opts = json.loads(sys.argv[1])
out = {"binding": _native.BINDING}
from agentjail.config import Config
out["preload"] = Config("process", {"warm": True, "preload": ["json", "os"]}).value("preload")
with Sandbox(ro_bind=["/usr/share"], **opts) as sb:
    out["limits"] = [sb.limit("python"), sb.limit("ro_bind"), sb.limit("memory_mb"),
                     sb.limit("timeout")]
    ex = sb.run("import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)")
    out["run"] = [ex.status, ex.exit_code, ex.stdout, ex.stderr]
    ex = dataclasses.replace(ex, images=[Image("a.png", "image/png", b"\x89PNG\0x")])
    out["json"] = json.loads(ex.to_json())["status"]
    out["text"] = ex.text().splitlines()[0]
    tool = sb.tool()
    out["tool"] = [tool.call({"code": "print(6 * 7)"}).text.splitlines()[2],
                   tool.call({"cod": 1}).is_error, tool.openai()["function"]["name"]]
    with sb.session() as s:
        s.put_file("d/x.bin", b"\0\1\2")
        out["files"] = [s.get_file("d/x.bin").hex(),
                        [(f.name, f.type, f.size) for f in s.list_files("d")]]
        s.run("a = 5")
        out["session"] = [s.run("print(a)").stdout, s.closed_reason]
        ex = s.exec(["sh", "-c", 'read l; echo "$l $X"; exit 4'], stdin="in", env={"X": "x"})
        out["exec"] = [ex.status, ex.exit_code, ex.stdout]
    out["closed"] = s.closed_reason
print(json.dumps(out))
'''


def test_every_kind_of_call_through_ctypes():
    opts = tier_options("process")
    env = dict(os.environ, AGENTJAIL_BINDING="ctypes",
               PYTHONPATH=os.path.join(ROOT, "python"))
    r = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(opts)], capture_output=True,
                       text=True, env=env, cwd="/")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["binding"] == "ctypes"
    assert out["preload"] == "json,os"
    assert out["limits"] == ["/usr/bin/python3", ["/usr/share"], 256, 10.0]
    assert out["run"] == ["error", 3, "out\n", "err\n"]
    assert out["json"] == "error" and out["text"].startswith("status: error")
    assert out["tool"] == ["42", True, "run_python"]
    assert out["files"] == ["000102", [["x.bin", "file", 3]]]
    assert out["session"] == ["5\n", None]
    assert out["exec"] == ["error", 4, "in x\n"]  # argv, stdin, env: NULL-ended arrays
    assert out["closed"] == "closed by the caller"


def test_a_bad_binding_choice_is_named():
    env = dict(os.environ, AGENTJAIL_BINDING="ffi", PYTHONPATH=os.path.join(ROOT, "python"))
    # The choice is read when a local sandbox is first asked for.
    r = subprocess.run([sys.executable, "-c", "import agentjail; agentjail.Sandbox"],
                       capture_output=True,
                       text=True, env=env, cwd="/")
    assert r.returncode != 0 and "AGENTJAIL_BINDING='ffi' is neither cffi nor ctypes" in r.stderr
