"""The curl commands README.md and docs/serve.md show work as pasted: each
is run by bash, with only what serve prints (AGENTJAIL_KEY=, AGENTJAIL_URL=)
exported, against a serve started as the docs start it, and must get a
result, not a 401."""
import json
import os
import re
import subprocess

from conftest import ROOT

DOCS = ["README.md", "docs/serve.md"]


def commands(doc):
    """The `$ curl ...` lines of doc's sh blocks, continuations joined."""
    out, fenced, cur = [], False, None
    with open(os.path.join(ROOT, doc), encoding="utf-8") as f:
        for line in f.read().split("\n"):
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            if not fenced:
                continue
            if cur is not None:
                cur += "\n" + line
            elif line.startswith("$ curl "):
                cur = line[2:]
            if cur is not None and not cur.endswith("\\"):
                out.append(cur)
                cur = None
    return out


def test_the_docs_curl_commands_use_what_serve_prints(start):
    s = start("--tier", "process", "--timeout", "10")
    printed = {"AGENTJAIL_KEY": s.key, "AGENTJAIL_URL": s.url}
    env = {"PATH": os.environ["PATH"], **printed}
    seen = 0
    for doc in DOCS:
        for cmd in commands(doc):
            seen += 1
            # Every variable a pasted command reads is one serve printed.
            used = set(re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", cmd))
            assert used <= set(printed), f"{doc}: {cmd!r} reads {used - set(printed)}"
            out = subprocess.run(["bash", "-c", cmd], env=env, capture_output=True, text=True,
                                 timeout=60)
            assert out.returncode == 0, f"{doc}: {cmd!r}: {out.stderr}"
            if "text/event-stream" in cmd:
                assert "event: result" in out.stdout, f"{doc}: {cmd!r}: {out.stdout}"
            else:
                answer = json.loads(out.stdout)
                assert answer.get("status") == "ok", f"{doc}: {cmd!r}: {answer}"
    assert seen >= 3
