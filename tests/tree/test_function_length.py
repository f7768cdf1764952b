"""No C function of src/ is longer than LONGEST lines of body (docs/design.md,
Style; the rule issue 25 set for its rooms, test_rooms.py, issue 35 set for
the whole tree). The functions that were longer when the rule came are listed
in LONG with their length then, and the list only shrinks: a listed function
may not grow past its figure, and one that is split below the limit, renamed
or removed must leave the list, so that its place cannot be taken again.

A function's length is the lines between its opening brace and its closing
one (test_rooms.py counts the same), found by matching braces after a
definition (test_calls.py's pattern) with comments, strings and character
constants set aside."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LONGEST = 100  # lines of a function body

# (file, function): its length when it was listed. Split one, then remove its
# line (or lower its figure); never add one.
LONG = {
    ("src/cli/attack.c", "run_attack"): 176,
    ("src/serve/remote/remote.c", "remote_call_until"): 170,
    ("src/cli/image.c", "cmd_build"): 159,
    ("src/serve/main.c", "cmd_serve"): 127,
    ("src/linux/supervisor.c", "supervisor_run"): 119,
}

# Comments, string literals and character constants: their braces are not
# the code's. A comment keeps its newlines, so that lines still count.
TOKEN = re.compile(r"/\*.*?\*/|//[^\n]*|\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'", re.S)
DEFINITION = re.compile(r"^([A-Za-z_][^;{}()=#]*?)\b([A-Za-z_]\w*)\s*\([^;{}]*?\)\s*\{", re.M)
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "defined"}


def blank(m):
    token = m.group(0)
    return "\n" * token.count("\n") if token[0] == "/" else token[0] * 2


def closing_brace(text, start):
    """The index of the brace that closes the one at start, or -1."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    return -1


def function_lengths(root):
    """{(file, function): lines of its body} for every C function of src/
    (the longest, where a file defines a name twice)."""
    found = {}
    for d, _, files in os.walk(os.path.join(root, "src")):
        for f in sorted(files):
            if not f.endswith(".c"):
                continue
            path = os.path.join(d, f)
            with open(path, encoding="utf-8") as fh:
                text = TOKEN.sub(blank, fh.read())
            rel = os.path.relpath(path, root)
            body_end = 0
            for m in DEFINITION.finditer(text):
                if m.start() < body_end or m.group(2) in KEYWORDS:
                    continue  # a label's line before an if, inside a body
                end = closing_brace(text, m.end() - 1)
                assert end >= 0, "%s: %s: no closing brace" % (rel, m.group(2))
                body_end = end
                lines = text.count("\n", m.end() - 1, end) - 1
                key = (rel, m.group(2))
                found[key] = max(lines, found.get(key, 0))
    return found


def breaches(root, allowed):
    """What breaks the rule: [(file, function, what)]."""
    lengths = function_lengths(root)
    out = []
    for key, lines in sorted(lengths.items()):
        if lines > LONGEST and key not in allowed:
            out.append(key + ("%d lines, over %d" % (lines, LONGEST),))
        elif key in allowed and lines > allowed[key]:
            out.append(key + ("%d lines, grown from its listed %d" % (lines, allowed[key]),))
    for key, listed in sorted(allowed.items()):
        if key not in lengths:
            out.append(key + ("listed, but no longer in the tree: remove it from LONG",))
        elif lengths[key] <= LONGEST:
            out.append(key + ("listed, but %d lines now: remove it from LONG" % lengths[key],))
    return out


def test_the_measure_knows_the_tree():
    lengths = function_lengths(ROOT)
    assert lengths[("src/core/status.c", "status_decide")] > 10
    assert ("src/vm/guest/agent.c", "main") in lengths
    assert len(lengths) > 1000


def test_no_function_is_longer_than_the_limit_unless_listed():
    assert breaches(ROOT, LONG) == []


def test_breaches_are_found(tmp_path):
    src = tmp_path / "src" / "a"
    src.mkdir(parents=True)
    body = "".join("\tx();\n" for _ in range(LONGEST + 1))
    (src / "long.c").write_text(
        "/* {{ a comment's braces\n */\nint too_long(int a,\n\t     char *b)\n{\n" + body +
        "}\n\nstatic int short_one(void)\n{\n\tputs(\"}}\");\n\treturn '}';\n}\n")
    (src / "listed.c").write_text(
        "void listed(void)\n{\n" + body + "\tif (x) {\n\t\ty();\n\t}\nout:\n\tif (y) {\n\t}\n}\n")
    (src / "grown.c").write_text("void grown(void)\n{\n" + body + "}\n")
    (src / "split.c").write_text("void split(void)\n{\n\tx();\n}\n")
    lengths = function_lengths(str(tmp_path))
    assert lengths[("src/a/long.c", "too_long")] == LONGEST + 1
    assert lengths[("src/a/long.c", "short_one")] == 2
    assert lengths[("src/a/listed.c", "listed")] == LONGEST + 7
    assert sorted(n for _, n in lengths) == ["grown", "listed", "short_one", "split", "too_long"]
    allowed = {("src/a/listed.c", "listed"): LONGEST + 7, ("src/a/grown.c", "grown"): LONGEST,
               ("src/a/split.c", "split"): 120, ("src/a/gone.c", "gone"): 130}
    assert [(f, n) for f, n, _ in breaches(str(tmp_path), allowed)] == [
        ("src/a/grown.c", "grown"), ("src/a/long.c", "too_long"),
        ("src/a/gone.c", "gone"), ("src/a/split.c", "split")]
