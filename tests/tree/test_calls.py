"""No two source files of src/ call each other, directly or round a longer
loop: a file's functions call only into files that never call back, so the
files can be read, tested and replaced from the bottom up (docs/design.md,
Layout). A call is a use of a name in a file that does not define it, where
exactly one other file defines that name as a function outside any
"static": a name followed by "(", or the name as a value (a function handed
to pthread_create, put in an ops table or a hook), which is a call made
later; a member (".name", "->name") is not a use.
The microvm guest (src/vm/guest/) is a program of its own: its calls resolve
only to its own files and the src/core files it compiles in."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GUEST = os.path.join("src", "vm", "guest")

ATTRIBUTE = re.compile(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)\s*")
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
DEFINITION = re.compile(r"^([A-Za-z_][^;{}()=#]*?)\b([A-Za-z_]\w*)\s*\([^;{}]*?\)\s*\{", re.M)
CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
# A name as a value: an argument, an initializer or the right of "=", not
# a member (s.name, p->name) and not a declarator ("int a, name;"). A
# function used so is called as surely as by a call, only later.
VALUE = re.compile(r"([(,=&{])\s*([A-Za-z_]\w*)\s*(?=([,)};]))")


def uses(text):
    """The names a file calls, or hands on as values."""
    found = set(CALL.findall(text))
    for m in VALUE.finditer(text):
        if not (m.group(1) == "," and m.group(3) == ";"):
            found.add(m.group(2))
    return found
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "defined"}


def sources(root):
    """{path relative to root: its text without comments and strings}."""
    out = {}
    for d, _, files in os.walk(os.path.join(root, "src")):
        for f in files:
            if f.endswith(".c"):
                path = os.path.join(d, f)
                with open(path, encoding="utf-8") as fh:
                    text = ATTRIBUTE.sub("", fh.read())
                out[os.path.relpath(path, root)] = STRING.sub('""', COMMENT.sub(" ", text))
    return out


def program(path):
    return "guest" if path.startswith(GUEST + os.sep) else "host"


def reachable(path, target):
    """Whether a file of path's program can call into target."""
    if program(path) == "host":
        return program(target) == "host"
    return program(target) == "guest" or target.startswith(os.path.join("src", "core") + os.sep)


def call_graph(root):
    """{file: {file it calls: [names]}}."""
    texts = sources(root)
    exported = {}
    for path, text in texts.items():
        for m in DEFINITION.finditer(text):
            if "static" not in m.group(1).split() and m.group(2) not in KEYWORDS:
                exported.setdefault(m.group(2), set()).add(path)
    graph = {}
    for path, text in texts.items():
        own = {m.group(2) for m in DEFINITION.finditer(text)}
        for name in uses(text) - own:
            owners = {p for p in exported.get(name, ()) if p != path and reachable(path, p)}
            if len(owners) == 1:
                graph.setdefault(path, {}).setdefault(owners.pop(), []).append(name)
    return graph


def loops(graph):
    """The strongly connected sets of two or more files (Tarjan's)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def test_the_graph_sees_calls_across_files():
    graph = call_graph(ROOT)
    assert "aj_run_lang" in graph["src/cli/run.c"]["src/api/language.c"]
    assert "aj_run_streaming" in graph["src/api/language.c"]["src/api/sandbox.c"]
    assert "status_decide" in graph["src/linux/supervise.c"]["src/core/status.c"]


def test_no_files_call_each_other():
    graph = call_graph(ROOT)
    found = loops(graph)
    described = [[(a, b, sorted(graph[a][b])) for a in g for b in g if b in graph.get(a, {})]
                 for g in found]
    assert described == []


def test_a_loop_is_found(tmp_path):
    src = tmp_path / "src"
    (src / "vm" / "guest").mkdir(parents=True)
    (src / "a.c").write_text("int a(void)\n{\n\treturn b(); /* c() */\n}\n")
    (src / "b.c").write_text("int b(void)\n{\n\treturn c() + puts(\"a()\");\n}\n")
    (src / "c.c").write_text("int c(void)\n{\n\treturn a();\n}\nstatic int d(void)\n{\n}\n")
    (src / "d.c").write_text("int e(void)\n{\n\treturn d();\n}\n")
    # A function handed to pthread_create is called, as is one put in a
    # table; a member of the same name is not.
    (src / "p.c").write_text("int p(void)\n{\n\tstruct x a, r;\n"
                             "\treturn pthread_create(0, 0, q, 0) + s.r + t->r;\n}\n")
    (src / "q.c").write_text("void *q(void *x)\n{\n\treturn x ? 0 : hook(p);\n}\n")
    (src / "r.c").write_text("int r(void)\n{\n\treturn 0;\n}\n")
    # The guest's own a() is not the host's.
    (src / "vm" / "guest" / "g.c").write_text("int a(void)\n{\n\treturn c();\n}\n")
    graph = call_graph(str(tmp_path))
    assert "src/d.c" not in graph   # d() is static in c.c
    assert "src/vm/guest/g.c" not in graph
    assert "src/r.c" not in graph.get("src/p.c", {})
    assert loops(graph) == [["src/a.c", "src/b.c", "src/c.c"], ["src/p.c", "src/q.c"]]
