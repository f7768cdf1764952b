"""The binding's declarations (agentjail/_native.py) against the header the
library was built from: every structure's size and every field's offset, as
a compiler lays them out, read through both backends (cffi, and the ctypes
one used where cffi is not installed)."""
import os
import subprocess

import pytest

from agentjail import _ctypes_ffi
from agentjail._native import CDEF, ffi
from conftest import ROOT


def backends():
    out = {}
    try:
        import cffi
    except ImportError:  # a Python without it: the ctypes backend alone
        pass
    else:
        out["cffi"] = cffi.FFI()
    out["ctypes"] = _ctypes_ffi.FFI()
    for f in out.values():
        f.cdef(CDEF)
    return out

STRUCTS = {
    "aj_limits": ["wall_sec", "cpu_sec", "memory_mb", "pids", "file_size_mb", "disk_mb",
                  "output_kb", "open_files"],
    "aj_session_limits": ["idle_sec", "lifetime_sec", "cpu_sec", "max_sessions",
                          "transfer_mb", "images", "image_kb"],
    "aj_config": ["tier", "limits", "python", "uid_base", "slots", "state_dir", "image",
                  "cgroup_root", "accel", "vm_pool", "docker_socket", "docker_image",
                  "session", "warm", "preload", "ro_binds", "ro_bind_count", "env",
                  "env_count", "allow_hosts",
                  "allow_host_count", "allow_cidrs", "allow_cidr_count", "egress",
                  "trust_ca", "exec_env_allow", "exec_env_allow_count"],
    "aj_egress_limits": ["out_mb", "in_mb", "connections", "kbps"],
    "aj_error": ["code", "message"],
    "aj_result": ["status", "exit_code", "has_exit_code", "signal", "stdout_buf",
                  "stdout_len", "stdout_truncated", "stderr_buf", "stderr_len",
                  "stderr_truncated", "wall_ms", "cpu_ms", "memory_kb", "message", "images",
                  "image_count", "images_dropped", "egress_log", "background_pids",
                  "background_count"],
    "aj_image": ["name", "mime", "data", "len"],
    "aj_file_info": ["name", "type", "size"],
    "aj_event": ["kind", "data", "len", "name", "mime", "offset"],
    "aj_stream": ["fn", "arg", "buffer_kb"],
    "aj_proc_info": ["pid", "command", "running"],
    "aj_exec": ["command", "argv", "cwd", "env", "env_count", "stdin_data", "stdin_len",
                "timeout_sec"],
}


@pytest.mark.parametrize("backend", sorted(backends()))
def test_layouts_match_the_header(tmp_path, backend):
    ffi = backends()[backend]
    lines = ['#include <stddef.h>', '#include <stdio.h>', '#include "agentjail.h"',
             "int main(void) {"]
    for s, fields in STRUCTS.items():
        lines.append(f'printf("{s} %zu\\n", sizeof(struct {s}));')
        for f in fields:
            lines.append(f'printf("{s}.{f} %zu\\n", offsetof(struct {s}, {f}));')
    lines.append("return 0; }")
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines))
    exe = tmp_path / "layout"
    subprocess.run(["cc", "-std=c11", "-I", os.path.join(ROOT, "include"), "-o", str(exe),
                    str(src)], check=True)
    compiled = dict(line.rsplit(" ", 1) for line in
                    subprocess.run([str(exe)], capture_output=True, text=True,
                                   check=True).stdout.splitlines())
    declared = {}
    for s, fields in STRUCTS.items():
        declared[s] = str(ffi.sizeof(f"struct {s}"))
        for f in fields:
            declared[f"{s}.{f}"] = str(ffi.offsetof(f"struct {s}", f))
    assert declared == compiled


def test_the_library_is_the_version_declared():
    from agentjail._native import API_VERSION, VERSION
    header = open(os.path.join(ROOT, "include", "agentjail.h")).read()
    assert f'AGENTJAIL_VERSION "{VERSION}"' in header
    assert VERSION.startswith(API_VERSION + ".")


def test_enum_values_match():
    from agentjail._native import lib
    assert [lib.AJ_TIER_PROCESS, lib.AJ_TIER_CONTAINER, lib.AJ_TIER_MICROVM,
            lib.AJ_TIER_DOCKER, lib.AJ_TIER_GVISOR, lib.AJ_TIER_COUNT] == [0, 1, 2, 3, 4, 5]
    assert [lib.AJ_EVENT_STDOUT, lib.AJ_EVENT_STDERR, lib.AJ_EVENT_IMAGE] == [0, 1, 2]
    names = [ffi.string(lib.aj_status_name(i)).decode() for i in range(lib.AJ_STATUS_COUNT)]
    assert names == ["ok", "error", "timeout", "memory", "output_limit", "killed",
                     "sandbox_error"]
