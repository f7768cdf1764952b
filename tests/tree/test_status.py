"""How a run or a call ended is decided in one place, status_decide
(src/core/status.c, docs/design.md "Status: the ladder"): a tier, the
session core and the front ends only gather facts (struct end_facts, or
struct outcome for outcome_to_result) and hand them over. So no file of
src/ but status.c gives a result a status of its own (an AJ_STATUS_ value
assigned to a status), except the few places listed in ALLOWED, each with
why it is no decision of the ladder's. Issue 35 took the last three
(tiers/microvm.c, gvisor/run.c, boot/session.c) off."""
import os
import re

from test_function_length import DEFINITION, KEYWORDS, TOKEN, blank

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LADDER = os.path.join("src", "core", "status.c")

# (file, function): why it may set a status itself.
ALLOWED = {
    ("src/core/result.c", "result_init"):
        "a result that was never set is a sandbox_error (the contract's Result)",
    ("src/core/result.c", "result_sandbox_error"):
        "rule 1's word, for a failure before there is any end to decide",
    ("src/attack/verdict.c", "attack_evidence_init"):
        "an attack's evidence, not a result: what it holds before a run",
    ("src/serve/admit/runs_begin.c", "runs_cancelled_result"):
        "a queued run cancelled before it started: no sandbox, no facts",
    ("src/serve/admit/call_limits.c", "call_deadline_end"):
        "serve's own deadline for a session call relabels the cancel it made "
        "as the call's timeout; to become a fact of the ladder's (issue 35)",
}

# An AJ_STATUS_ value assigned to a status: `res->status = AJ_STATUS_OK`,
# `.status = x ? AJ_STATUS_OK : AJ_STATUS_ERROR`.
ASSIGNMENT = re.compile(r"\bstatus\s*=(?!=)[^;,]*\bAJ_STATUS_\w+")


def status_setters(root):
    """{(file, function)} of every status set outside the ladder."""
    found = set()
    for d, _, files in os.walk(os.path.join(root, "src")):
        for f in sorted(files):
            path = os.path.join(d, f)
            rel = os.path.relpath(path, root)
            if not f.endswith(".c") or rel == LADDER:
                continue
            with open(path, encoding="utf-8") as fh:
                text = TOKEN.sub(blank, fh.read())
            starts = [(m.start(), m.group(2)) for m in DEFINITION.finditer(text)
                      if m.group(2) not in KEYWORDS]
            for m in ASSIGNMENT.finditer(text):
                inside = [name for start, name in starts if start < m.start()]
                found.add((rel, inside[-1] if inside else "(file scope)"))
    return found


def test_the_check_sees_the_allowed_ones():
    found = status_setters(ROOT)
    assert ("src/core/result.c", "result_init") in found


def test_only_the_ladder_sets_a_status():
    assert sorted(status_setters(ROOT) - set(ALLOWED)) == []


def test_every_allowed_one_is_still_there():
    """An entry whose status setting is gone leaves the list."""
    assert sorted(set(ALLOWED) - status_setters(ROOT)) == []


def test_a_status_set_beside_the_ladder_is_found(tmp_path):
    (tmp_path / "src" / "core").mkdir(parents=True)
    (tmp_path / "src" / "tiers").mkdir()
    (tmp_path / "src" / "core" / "status.c").write_text(
        "void status_decide(void)\n{\n\tres->status = AJ_STATUS_OK;\n}\n")
    (tmp_path / "src" / "tiers" / "t.c").write_text(
        "/* res->status = AJ_STATUS_OK; */\n"
        "static int run(struct aj_result *res)\n{\n"
        "\tif (res->status == AJ_STATUS_OK)\n\t\tputs(\"status = AJ_STATUS_OK\");\n"
        "\tstruct x y = {.a = 1, .status = AJ_STATUS_TIMEOUT};\n"
        "\tres->signal = 9;\n}\n"
        "static void set(struct aj_result *res)\n{\n"
        "\tres->status = res->exit_code ? AJ_STATUS_ERROR : AJ_STATUS_OK;\n"
        "\tres->http_status = 200;\n}\n")
    assert status_setters(str(tmp_path)) == {("src/tiers/t.c", "run"), ("src/tiers/t.c", "set")}
