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


# ---- every folder's layer, as docs/design.md's Layout table writes it ----

LAYER_ROW = re.compile(r"^\|\s*(\d+(?:\.\d+)?)\s*\|\s*`(src/[\w/]+|include)/?`\s*\|", re.M)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layers(root):
    """{folder: layer} from the design document's table ("src/linux", "include")."""
    with open(os.path.join(root, "docs", "design.md"), encoding="utf-8") as fh:
        return {folder.rstrip("/"): float(n) for n, folder in LAYER_ROW.findall(fh.read())}


def folder_of(path, table):
    """The table's folder that holds path (relative to the root), or None."""
    best = None
    for folder in table:
        if path == folder or path.startswith(folder + "/"):
            if best is None or len(folder) > len(best):
                best = folder
    return best


def upward_includes(root):
    """[(file, include, why)] for each include of a file of src/ that names a
    header of a folder not below its own. Includes that resolve outside the
    table's folders (build/gen's .inc files, a file's own folder) are passed."""
    table = layers(root)
    found = []
    for top, _, files in os.walk(os.path.join(root, "src")):
        for f in sorted(files):
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.relpath(os.path.join(top, f), root)
            own = folder_of(path, table)
            with open(os.path.join(root, path), encoding="utf-8") as fh:
                text = fh.read()
            for inc in INCLUDE.findall(text):
                target = os.path.normpath(os.path.join(os.path.dirname(path), inc))
                theirs = folder_of(target, table)
                if theirs is None or theirs == own or own is None:
                    continue
                # The guest is a program of its own under src/vm: it may take
                # its host's wire format (src/vm/protocol.h).
                if own == "src/vm" and theirs == "src/vm":
                    continue
                if table[theirs] >= table[own]:
                    found.append((path, inc, "%s (layer %g) includes %s (layer %g)" %
                                  (own, table[own], theirs, table[theirs])))
    return found


def test_the_table_names_every_folder_of_src():
    table = layers(ROOT)
    folders = {os.path.join("src", d) for d in os.listdir(os.path.join(ROOT, "src"))
               if os.path.isdir(os.path.join(ROOT, "src", d))}
    assert folders - set(table) == set(), "docs/design.md's Layout table misses these"
    assert "include" in table and table["include"] == 0


def test_the_table_names_every_wing_of_serve():
    # serve's wings are a table of their own (docs/design.md, "The wings
    # of src/serve"), read here like the library's.
    table = layers(ROOT)
    serve = os.path.join(ROOT, "src", "serve")
    wings = {os.path.join("src", "serve", d) for d in os.listdir(serve)
             if os.path.isdir(os.path.join(serve, d))}
    assert wings and wings - set(table) == set(), "docs/design.md's wings of src/serve miss these"
    assert all(9 < table[w] < 10 for w in wings)


def test_no_include_runs_up_or_sideways():
    assert upward_includes(ROOT) == []


def test_an_upward_include_is_found(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "design.md").write_text(
        "| 2 | `src/linux/` | x |\n| 1 | `src/core/` | y |\n| 1 | `src/base/` | z |\n| 0 | `include/` | w |\n")
    for d in ("linux", "core", "base"):
        (tmp_path / "src" / d).mkdir(parents=True)
    (tmp_path / "src" / "linux" / "jail.c").write_text('#include "../core/a.h"\n#include "jail.h"\n')
    (tmp_path / "src" / "core" / "a.h").write_text('#include "../linux/jail.h"\n#include "../base/b.h"\n')
    (tmp_path / "src" / "core" / "gen.c").write_text('#include "launch.inc"\n#include "agentjail.h"\n')
    found = [(f, inc) for f, inc, _ in upward_includes(str(tmp_path))]
    assert found == [("src/core/a.h", "../linux/jail.h"), ("src/core/a.h", "../base/b.h")]
