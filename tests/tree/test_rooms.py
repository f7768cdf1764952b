"""The rooms issue 25 split stay split: the jail's four modes are an enum
with a body each, not booleans switched inside one init; agentjail worker's
state is passed to its threads, not kept in a file-scope singleton; and no
function of these rooms grows back into a page-long one (cmd_bench was 322
lines, cmd_worker 140)."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROOMS = ("src/linux/jail", "src/serve/worker/worker", "src/cli/bench")
LONGEST = 100  # lines of a function body

# A definition at the start of a line: a return type and the name, the
# parameters, then the body's brace on a line of its own.
DEFINITION = re.compile(r"^[A-Za-z_][^;{}()=#]*?\b([A-Za-z_]\w*)\s*\([^;{}]*?\)\s*\n\{\n", re.M)


def room_files(root):
    found = []
    for prefix in ROOMS:
        folder, stem = os.path.split(prefix)
        for f in sorted(os.listdir(os.path.join(root, folder))):
            if f.startswith(stem) and f.endswith(".c"):
                found.append(os.path.join(folder, f))
    return found


def read(root, path):
    with open(os.path.join(root, path), encoding="utf-8") as fh:
        return fh.read()


def long_functions(root):
    """[(file, function, lines)] for bodies longer than LONGEST."""
    found = []
    for path in room_files(root):
        text = read(root, path)
        for m in DEFINITION.finditer(text):
            end = text.find("\n}\n", m.end() - 1)
            lines = text.count("\n", m.end(), end + 1)
            if lines > LONGEST:
                found.append((path, m.group(1), lines))
    return found


# File-scope state: a `static` at the start of a line that is neither
# const nor a function (a definition or a prototype).
STATE = re.compile(r"^static\s+(?!const\b)(?![^;{=]*\()[^;]*?(?:;|=)", re.M)


def file_scope_state(root):
    found = []
    for path in room_files(root):
        if path.startswith("src/serve/"):
            text = read(root, path)
            # A struct defined with a variable: `static struct worker {...} w;`
            text = re.sub(r"^static struct \w+ \{.*?^\} (\w+);", r"static struct x \1;", text,
                          flags=re.M | re.S)
            found += [(path, m.group(0).strip()) for m in STATE.finditer(text)]
    return found


def test_the_rooms_are_found():
    files = room_files(ROOT)
    assert "src/linux/jail_plan.c" in files and "src/cli/bench.c" in files
    assert any(f.startswith("src/serve/worker") for f in files)


def test_no_function_of_the_rooms_is_page_long():
    assert long_functions(ROOT) == []


def test_the_worker_keeps_no_file_scope_state():
    assert file_scope_state(ROOT) == []


def test_the_jail_modes_are_an_enum():
    header = read(ROOT, "src/linux/jail.h")
    spec = header[header.index("struct jail_spec {"):]
    spec = spec[:spec.index("\n};")]
    assert re.search(r"enum jail_mode \{[^}]*JAIL_RUN,[^}]*JAIL_SESSION,[^}]*JAIL_ZYGOTE,"
                     r"[^}]*JAIL_WARM_RUN,", header, re.S)
    assert "enum jail_mode mode;" in spec
    for flag in ("session", "zygote", "warm_child"):
        assert not re.search(r"\bbool\s+%s;" % flag, spec), flag


def test_the_checks_find_what_they_look_for(tmp_path):
    (tmp_path / "src" / "linux").mkdir(parents=True)
    (tmp_path / "src" / "serve" / "worker").mkdir(parents=True)
    (tmp_path / "src" / "cli").mkdir()
    body = "".join("\tx();\n" for _ in range(LONGEST + 1))
    (tmp_path / "src" / "cli" / "bench.c").write_text(
        "int cmd_bench(int argc,\n\t      char **argv)\n{\n" + body + "}\n")
    (tmp_path / "src" / "linux" / "jail.c").write_text("static int f(void)\n{\n\treturn 0;\n}\n")
    (tmp_path / "src" / "serve" / "worker" / "worker.c").write_text(
        "static const char usage[] = \"u\";\nstatic void log_msg(const char *fmt, ...);\n"
        "static struct worker {\n\tint a;\n} w;\nstatic int count = 0;\n")
    assert long_functions(str(tmp_path)) == [("src/cli/bench.c", "cmd_bench", LONGEST + 1)]
    assert [s for _, s in file_scope_state(str(tmp_path))] == ["static struct x w;",
                                                                "static int count ="]
