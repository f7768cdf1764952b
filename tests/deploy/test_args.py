"""The commands deploy/ runs are ones agentjail takes: every serve and
worker argument list in the Kubernetes manifests and the systemd units is
handed to the real binary with --help appended, which it reaches only
after parsing (and validating) every option before it."""
import glob
import os
import shlex
import subprocess

import pytest
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
AGENTJAIL = os.path.join(ROOT, "build", "agentjail")


def parses(args):
    r = subprocess.run([AGENTJAIL, *args, "--help"], capture_output=True, text=True, timeout=30)
    return r.returncode, r.stderr


def k8s_commands():
    for path in sorted(glob.glob(os.path.join(ROOT, "deploy", "kubernetes", "**", "*.yaml"),
                             recursive=True)):
        for doc in yaml.safe_load_all(open(path)):
            spec = ((doc or {}).get("spec") or {}).get("template", {}).get("spec", {})
            for c in spec.get("containers", []):
                args = [a.replace("$(POD_NAME)", "pod-0") for a in c.get("args", [])]
                if args and args[0] in ("serve", "worker"):
                    yield os.path.relpath(path, ROOT), c["name"], args


def systemd_commands():
    env = {}
    envfile = os.path.join(ROOT, "deploy", "systemd", "agentjail.env")
    for line in open(envfile):
        line = line.strip()
        if line and not line.startswith("#"):
            k, v = line.split("=", 1)
            env[k] = shlex.split(v)[0] if v.startswith('"') else v
    for path in sorted(glob.glob(os.path.join(ROOT, "deploy", "systemd", "*.service"))):
        for line in open(path):
            if line.startswith("ExecStart="):
                cmd = line.split("=", 1)[1].strip()
                for k, v in env.items():
                    cmd = cmd.replace("${%s}" % k, v).replace("$" + k, v)
                cmd = cmd.replace("%i", "process").replace("%H", "host")
                yield os.path.relpath(path, ROOT), shlex.split(cmd)[1:]


@pytest.mark.skipif(not os.access(AGENTJAIL, os.X_OK), reason="build/agentjail not built")
def test_kubernetes_args_parse():
    seen = 0
    for path, name, args in k8s_commands():
        rc, err = parses(args)
        assert rc == 0, f"{path} {name}: {' '.join(args)}: {err}"
        seen += 1
    assert seen >= 3


@pytest.mark.skipif(not os.access(AGENTJAIL, os.X_OK), reason="build/agentjail not built")
def test_systemd_exec_start_parses():
    seen = 0
    for path, args in systemd_commands():
        rc, err = parses(args)
        assert rc == 0, f"{path}: {' '.join(args)}: {err}"
        seen += 1
    assert seen == 3
