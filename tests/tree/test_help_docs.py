"""agentjail's --help and the docs name the same options with the same words:
every option a command's --help lists is documented in docs/, and every
agentjail option the docs name is one some --help lists (a renamed or removed
option leaves no stale word behind). Runs the built binary (make builds it
before the tests)."""
import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.path.join(ROOT, "build", "agentjail")


def table_names(path, table):
    """The names of a C table of commands, `table[] = { {"name", fn}, ... };`."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as fh:
        src = fh.read()
    body = re.search(r"\b%s\[\] = \{(.*?)\n\};" % re.escape(table), src, re.S)
    assert body, "%s: no table %s[]" % (path, table)
    return re.findall(r'\{"([a-z][a-z-]*)",', body.group(1))


COMMANDS = table_names("src/cli/main.c", "commands")
# Subcommands each command's dispatch table names; the usage lines of every
# command's --help add the rest ("agentjail keys add ...").
SUBCOMMAND_TABLES = {"image": ("src/cli/image.c", "image_commands")}
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
TICKED = re.compile(r"`([^`]*)`")


def help_options(command=None):
    args = [BINARY] + ([command] if command else []) + ["--help"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, "%s: exit %d\n%s" % (" ".join(args), out.returncode, out.stderr)
    return set(OPTION.findall(out.stdout + out.stderr))


def doc_pages(root):
    docs = os.path.join(root, "docs")
    for top, _, files in os.walk(docs):
        for f in sorted(files):
            if f.endswith(".md"):
                yield os.path.join(top, f)


# Pages about another program's flags, not agentjail's.
OTHER_TOOLS = {
    os.path.join("docs", "gvisor-on-this-machine.md"): "runsc's flags, as tried on this machine",
}


def documented_options(root):
    """{option: first page naming it} for agentjail's options in docs/: in
    prose, an option in backticks (a span that starts with it or runs
    agentjail); in a code block, only on a line that runs agentjail (a
    redis-server or docker line's options are not ours)."""
    found = {}
    for page in doc_pages(root):
        if os.path.relpath(page, root) in OTHER_TOOLS:
            continue
        spans = []
        in_code = False
        paragraph = []
        with open(page, encoding="utf-8") as fh:
            lines = fh.read().split("\n") + [""]
        for line in lines:
            if line.lstrip().startswith("```") or (not in_code and not line.strip()):
                # A backticked span may cross lines, not paragraphs.
                spans += [t for t in TICKED.findall(" ".join(paragraph))
                          if t.startswith("--") or "agentjail" in t]
                paragraph = []
                if line.lstrip().startswith("```"):
                    in_code = not in_code
                continue
            if in_code:
                if "agentjail" in line:
                    spans.append(line)
            else:
                paragraph.append(line)
        for span in spans:
            for opt in OPTION.findall(span):
                found.setdefault(opt, os.path.relpath(page, root))
    return found


@pytest.fixture(scope="module")
def helps():
    if not os.access(BINARY, os.X_OK):
        pytest.fail("%s is not built: make builds it before the tests" % BINARY)
    return {c: help_options(c) for c in COMMANDS} | {"": help_options()}


def test_every_option_of_every_help_is_documented(helps):
    documented = documented_options(ROOT)
    missing = {c or "agentjail": sorted(o for o in opts if o not in documented)
               for c, opts in helps.items()}
    assert {c: m for c, m in missing.items() if m} == {}


def test_every_documented_option_is_one_of_agentjail(helps):
    known = set().union(*helps.values())
    stale = {o: page for o, page in documented_options(ROOT).items() if o not in known}
    assert stale == {}


def test_the_docs_reader_sees_only_agentjail_options(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text(
        "Use `--timeout SEC` or `agentjail run --tier process`; not -- alone.\n"
        "```\nredis-server --bind 127.0.0.1\nagentjail serve --queue redis://x\n```\n"
        "runsc's --platform is not written in backticks here, `python3 -m venv --x` is not ours,\n"
        "and `agentjail keys add --file F\nNAME --sessions 2` crosses a line.\n")
    assert set(documented_options(str(tmp_path))) == {"--timeout", "--tier", "--queue", "--file",
                                                          "--sessions"}


def usage_subcommands(command):
    out = subprocess.run([BINARY, command, "--help"], capture_output=True, text=True, timeout=60)
    return set(re.findall(r"agentjail %s ([a-z][a-z-]*)" % re.escape(command), out.stdout))


def test_every_command_and_subcommand_takes_help():
    """Each command of main.c's table, and each subcommand of theirs, answers
    --help and -h with its usage on stdout and exit 0 (`image build --help`
    once said "unexpected argument")."""
    assert {"run", "image", "keys", "serve"} <= set(COMMANDS)
    asked = []
    for command in COMMANDS:
        subs = usage_subcommands(command)
        if command in SUBCOMMAND_TABLES:
            table = table_names(*SUBCOMMAND_TABLES[command])
            assert table, command
            subs |= set(table)
        asked += [[command]] + [[command, sub] for sub in sorted(subs)]
    assert ["image", "build"] in asked and ["keys", "add"] in asked
    failed = []
    for words in asked:
        for flag in ("--help", "-h"):
            out = subprocess.run([BINARY] + words + [flag], capture_output=True, text=True,
                                 timeout=60)
            if out.returncode != 0 or "usage: agentjail" not in out.stdout:
                failed.append("agentjail %s %s: exit %d: %s" % (" ".join(words), flag,
                                                                 out.returncode,
                                                                 out.stderr.strip()[:200]))
    assert failed == []
