"""No C function name in src/ is defined in two files for two different
things: a reader who meets a name once must know what it does everywhere
(issue 25: jail.c's warm_init, a run's init, beside warm.c's, which sets up
a sandbox's warm state, made the two files look as if they called each
other).

A name defined in more than one file is allowed only when every definition
is a copy of one thing (the same job, written again in a file that cannot
reach the other); those are listed below, with the files, so that a new
clash fails here and a copy is removed from the list when its copies are
made one."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# name: the files that each hold a copy of the same job.
# serve's backend ops table (src/serve/admit/backend.h): each backend's file
# defines its entries under the op's own name, one meaning in both.
BACKENDS = {"src/serve/local/local_api.c", "src/serve/remote/remote_api.c"}
COPIES = {
    "main": {"src/cli/main.c", "src/serve/main.c", "src/vm/guest/agent.c"},  # a program's entry
    "add_ro_binds": {"src/docker/spec.c", "src/gvisor/bundle.c"},  # cfg.ro_bind into a spec
    "call": {"src/api/session.c", "src/serve/remote/remote_api.c"},     # one session call
    "close_fd": {"src/vm/guest/session.c", "src/warm/warm.c"},
    "read_line": {"src/docker/http.c", "src/mcp/server.c"},
    "send_all": {"src/docker/http.c", "src/boot/session.c"},
    "close_backend": BACKENDS,
    "mcp_sandbox": BACKENDS,
    "open_backend": BACKENDS,
    "gauges": BACKENDS,
    "session_call": BACKENDS,
    "session_held": BACKENDS,
    "session_egress": BACKENDS,
    "session_files": BACKENDS,
    "session_open": BACKENDS,
    "session_run": BACKENDS,
    "start": BACKENDS,
    "stop": BACKENDS,
    "tiers": BACKENDS,
    "type_name": {"src/cli/repl.c", "src/api/tool_files.c"},     # a file type's word
    "wait_ready": {"src/linux/jail_session.c", "src/boot/session.c", "src/vm/snapshot.c"},
}

ATTRIBUTE = re.compile(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)\s*")
# A definition: at the start of a line, a return type and the name, the
# parameters, then the body's brace (a declaration ends with ';').
DEFINITION = re.compile(r"^[A-Za-z_][^;{}()=#]*?\b([A-Za-z_]\w*)\s*\([^;{}]*?\)\s*\{", re.M)
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof"}


def definitions(root):
    """{function name: the files of src/ that define it}."""
    found = {}
    for d, _, files in os.walk(os.path.join(root, "src")):
        for f in files:
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(d, f)
            with open(path, encoding="utf-8") as fh:
                text = ATTRIBUTE.sub("", fh.read())
            for m in DEFINITION.finditer(text):
                if m.group(1) not in KEYWORDS:
                    found.setdefault(m.group(1), set()).add(os.path.relpath(path, root))
    return found


def clashes(found):
    """The names defined in more than one file that are not known copies."""
    return {name: sorted(files) for name, files in found.items()
            if len(files) > 1 and not files <= COPIES.get(name, set())}


def test_the_reader_finds_definitions():
    # The check is only as good as its reading: functions of every shape
    # it must see (static, with an attribute, parameters over lines).
    found = definitions(ROOT)
    assert "src/linux/jail_warm.c" in found["jail_zygote_start"]
    assert "src/warm/helper.c" in found["agentjail_warm_spawn"]  # after __attribute__
    assert "src/linux/jail_run.c" in found["run_init"]           # noreturn, static
    assert "src/linux/supervise.c" in found["outcome_to_result"]  # parameters on two lines
    assert "if" not in found


def test_no_name_means_two_things():
    assert clashes(definitions(ROOT)) == {}


def test_the_list_of_copies_is_current():
    # A copy made one leaves the list, so the list names only live copies.
    found = definitions(ROOT)
    stale = {name: sorted(files) for name, files in COPIES.items()
             if len(found.get(name, set()) & files) < 2}
    assert stale == {}


def test_a_clash_is_found(tmp_path):
    for name, text in [("a.c", "static int read_text(int fd)\n{\n\treturn fd;\n}\n"),
                       ("b.c", "int read_text(const char *dir,\n\t      char *buf)\n{\n}\n"),
                       ("c.c", "int close_fd(int *fd);\n")]:
        (tmp_path / "src").mkdir(exist_ok=True)
        (tmp_path / "src" / name).write_text(text)
    assert clashes(definitions(str(tmp_path))) == {"read_text": ["src/a.c", "src/b.c"]}
