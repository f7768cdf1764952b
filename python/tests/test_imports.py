"""The package's modules form layers: no module imports one that imports it
back, directly or through others, counting imports inside functions too (a
cycle hidden in a function is still two modules that each need the other,
and so is one imported by name when first used)."""
import ast
import os

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "agentjail")


def package_imports():
    """{module: the package's modules it imports anywhere in its text}."""
    modules = {f[:-3] for f in os.listdir(PACKAGE) if f.endswith(".py")}
    graph = {}
    for m in modules:
        with open(os.path.join(PACKAGE, m + ".py")) as f:
            tree = ast.parse(f.read())
        used = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module:
                    used.add(node.module.split(".")[0])
                else:  # from . import x
                    used.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("agentjail."):
                used.add(node.module.split(".")[1])
            elif isinstance(node, ast.Import):
                used.update(a.name.split(".")[1] for a in node.names
                            if a.name.startswith("agentjail."))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and node.value.startswith(".") and node.value[1:] in modules:
                # A module imported by name when first used (__init__'s
                # _NATIVE: importlib.import_module(".sandbox", ...)).
                used.add(node.value[1:])
        graph[m] = used & modules - {m}
    return graph


def find_cycle(graph):
    """One import cycle as a list of modules, or None."""
    state = {}

    def visit(m, path):
        state[m] = "open"
        for n in sorted(graph[m]):
            if state.get(n) == "open":
                return path[path.index(n):] + [n]
            if n not in state:
                found = visit(n, path + [n])
                if found:
                    return found
        state[m] = "done"
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m, [m])
            if found:
                return found
    return None


def test_the_package_reads_the_graph():
    # The check is only as good as its reading: the known edges are there.
    graph = package_imports()
    assert "_native" in graph["sandbox"]
    assert "sandbox" in graph["__init__"]


def test_no_module_imports_one_that_imports_it_back():
    cycle = find_cycle(package_imports())
    assert cycle is None, "an import cycle: " + " -> ".join(cycle)


def test_find_cycle_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
