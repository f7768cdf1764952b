"""src/linux, the layer that builds a sandbox from the kernel's parts, takes
nothing from src/warm, which is built on it: no header of warm's, no source
of warm's compiled in (its zygote.py, as build/gen/warm_zygote.inc), no
function of warm's called. What warm needs jail.c to run, warm passes down
(jail_zygote_start's program), so that the two never call each other."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DECLARATION = re.compile(r"^[A-Za-z_][^;{}()=#]*?\b([A-Za-z_]\w*)\s*\(", re.M)


def warm_names(root):
    """The functions src/warm offers: declared in its headers, or exported
    by its helper library (agentjail_warm_*)."""
    names = set()
    warm = os.path.join(root, "src", "warm")
    for f in os.listdir(warm):
        if f.endswith(".h") or f == "helper.c":
            with open(os.path.join(warm, f), encoding="utf-8") as fh:
                text = fh.read()
            names.update(n for n in DECLARATION.findall(text)
                         if f.endswith(".h") or n.startswith("agentjail_warm_"))
    return names


def uses_of_warm(root):
    """What of src/warm a file of src/linux takes: [(file, what)]."""
    names = warm_names(root)
    found = []
    linux = os.path.join(root, "src", "linux")
    for f in sorted(os.listdir(linux)):
        if not f.endswith((".c", ".h")):
            continue
        with open(os.path.join(linux, f), encoding="utf-8") as fh:
            text = fh.read()
        for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M):
            if inc.startswith("../warm/") or inc.startswith("warm_"):
                found.append((f, inc))
        for call in re.findall(r"\b([A-Za-z_]\w*)\s*\(", text):
            if call in names:
                found.append((f, call + "()"))
    return found


def test_the_check_knows_warms_functions():
    names = warm_names(ROOT)
    assert {"warm_run", "warm_prestart", "agentjail_warm_spawn"} <= names


def test_linux_takes_nothing_from_warm():
    assert uses_of_warm(ROOT) == []


def test_a_use_is_found(tmp_path):
    (tmp_path / "src" / "warm").mkdir(parents=True)
    (tmp_path / "src" / "linux").mkdir()
    (tmp_path / "src" / "warm" / "warm.h").write_text("int warm_run(struct warm *w);\n")
    (tmp_path / "src" / "warm" / "helper.c").write_text("static int helper_only(void)\n{\n}\n")
    (tmp_path / "src" / "linux" / "jail.c").write_text(
        '#include "warm_zygote.inc"\nstatic int f(void)\n{\n\treturn warm_run(0);\n}\n')
    assert uses_of_warm(str(tmp_path)) == [("jail.c", "warm_zygote.inc"), ("jail.c", "warm_run()")]
