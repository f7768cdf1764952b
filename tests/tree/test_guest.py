"""The microvm guest agent (src/vm/guest/) is layered and built from the
host's sources, not copies of them (issue 25):

- agent.h lists its files, one concern each, and a file calls only
  functions of the files listed above it: no two guest files call each
  other (agent.c and session.c once did, through ~15 names);
- images/build-vm.sh builds the agent with the host's src/core/io.c,
  capture.c, session_scan.c, result.c and src/linux/supervisor.c (the one
  supervision loop), and every file the agent is built from
  is an input of the VM's manifest, so a change to any of them rebuilds the
  initramfs."""
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GUEST = os.path.join(ROOT, "src", "vm", "guest")
ATTRIBUTE = re.compile(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)\s*")
DEFINITION = re.compile(r"^[A-Za-z_][^;{}()=#]*?\b([A-Za-z_]\w*)\s*\([^;{}]*?\)\s*\{", re.M)
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof"}
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
# The host's files the agent is built with instead of copies.
SHARED = ["src/core/io.c", "src/core/capture.c", "src/core/session_scan.c", "src/core/contract.c",
          "src/core/keyed.c", "src/core/result.c", "src/linux/supervisor.c",
          "src/linux/egress_listen.c", "src/vm/egress_mux.c"]


def read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def listed_order(header_text):
    """The files agent.h's opening comment lists, bottom layer first."""
    head = header_text.split("*/", 1)[0]
    return re.findall(r"^ \*   (\w+\.c)\b", head, re.M)


def calls_between(sources):
    """{(caller file, callee file)}: a file calling a function another
    guest file defines. sources: {file name: text}."""
    owner = {}
    for name, text in sources.items():
        for m in DEFINITION.finditer(ATTRIBUTE.sub("", text)):
            if m.group(1) not in KEYWORDS:
                owner.setdefault(m.group(1), set()).add(name)
    pairs = set()
    for name, text in sources.items():
        code = COMMENT.sub("", text)
        for call in set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", code)):
            for callee in owner.get(call, ()):
                if callee != name and name not in owner[call]:
                    pairs.add((name, callee))
    return pairs


def guest_sources():
    return {f: read(os.path.join(GUEST, f)) for f in sorted(os.listdir(GUEST))
            if f.endswith(".c")}


def test_the_reader_sees_calls():
    pairs = calls_between({"a.c": "int f(void)\n{\n\treturn g();\n}\n",
                           "b.c": "static int g(void)\n{\n\treturn 0; /* f() */\n}\n"})
    assert pairs == {("a.c", "b.c")}


def test_no_two_guest_files_call_each_other():
    pairs = calls_between(guest_sources())
    assert sorted((a, b) for a, b in pairs if (b, a) in pairs) == []


def test_guest_files_call_only_down_agent_h_list():
    order = listed_order(read(os.path.join(GUEST, "agent.h")))
    sources = guest_sources()
    assert sorted(order) == sorted(sources), "agent.h lists every guest file, once"
    upward = sorted((a, b) for a, b in calls_between(sources)
                    if order.index(b) > order.index(a))
    assert upward == []


def test_the_agent_builds_the_hosts_files_not_copies():
    script = read(os.path.join(ROOT, "images", "build-vm.sh"))
    for path in SHARED:
        assert path.split("/", 1)[1] in script, path
    # No guest file defines again what a shared file defines.
    shared = set()
    for path in SHARED:
        shared.update(m.group(1) for m in DEFINITION.finditer(read(os.path.join(ROOT, path))))
    for name, text in guest_sources().items():
        mine = {m.group(1) for m in DEFINITION.finditer(ATTRIBUTE.sub("", text))}
        assert mine & shared == set(), name


def test_every_agent_source_is_an_input_of_the_vm(tmp_path):
    # --inputs needs only an image directory with a root/ (nothing is built).
    (tmp_path / "root").mkdir()
    out = subprocess.run(["sh", os.path.join(ROOT, "images", "build-vm.sh"), "--inputs",
                          str(tmp_path), str(tmp_path / "no-kernel-cache")],
                         capture_output=True, text=True, check=True).stdout
    inputs = dict(line.split("=", 1) for line in out.splitlines() if line.startswith("input."))
    wanted = ["src/vm/guest/" + f for f in os.listdir(GUEST)] + SHARED + \
        ["src/core/internal.h", "src/core/session_call.h", "src/core/contract.h",
         "src/core/keyed.h", "src/vm/protocol.h",
         "include/agentjail.h", "src/linux/seccomp_policy.c", "src/linux/supervisor.h",
         "src/linux/report.h"]
    missing = [f for f in wanted if "input." + f not in inputs]
    assert missing == []
    assert all(v not in ("", "missing") for k, v in inputs.items() if k not in ("input.kernel_deb", "input.image_manifest"))
