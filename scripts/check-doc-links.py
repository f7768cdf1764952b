#!/usr/bin/env python3
"""Checks that the documentation points only at what the repository holds.

In README.md, docs/**/*.md and every */README.md: each relative link or image
([text](target)), and each path in backticks that names a document
(`docs/x.md`, `../shared/DESIGN.md`), must resolve to a file inside the
repository; a #fragment must name a heading of its file (GitHub's anchor
for it). LICENSE must exist. Links to the web are not fetched (no network).
Prints one line per problem and exits 1 if there is any. Usage:
check-doc-links.py [ROOT] (default: the tree this script is in).
"""
import glob
import os
import re
import sys

ROOT = os.path.realpath(sys.argv[1] if len(sys.argv) > 1 else
                        os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)", re.M)
# A path in backticks that names a document: has a slash, ends in .md.
DOC_PATH = re.compile(r"`((?:\.{1,2}/|[\w.-]+/)[\w./-]*\.md)`")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # https:, mailto:, ...


def documents():
    names = ["README.md"] + sorted(glob.glob("docs/**/*.md", root_dir=ROOT, recursive=True)) + \
        sorted(glob.glob("*/README.md", root_dir=ROOT))
    return [n for n in names if os.path.isfile(os.path.join(ROOT, n))]


def without_code_blocks(text):
    """The text with fenced code blocks blanked (line numbers kept): a link
    in an example is not a link."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append("")
        else:
            out.append("" if fenced else line)
    return "\n".join(out)


def anchors(path):
    """GitHub's anchors for a file's headings: lower case, punctuation
    dropped, spaces to hyphens, -1, -2 ... for repeats."""
    seen, out = {}, set()
    with open(path, encoding="utf-8") as f:
        text = without_code_blocks(f.read())
    for m in re.finditer(r"^#{1,6}\s+(.*?)\s*#*\s*$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def inside(path):
    return path == ROOT or path.startswith(ROOT + os.sep)


def check(doc):
    problems = []
    full = os.path.join(ROOT, doc)
    with open(full, encoding="utf-8") as f:
        text = without_code_blocks(f.read())
    targets = [(m.start(), m.group(1), True) for m in LINK.finditer(text)]
    targets += [(m.start(), m.group(1), True) for m in REFERENCE.finditer(text)]
    # Backticked document paths are also read from the repository's root.
    targets += [(m.start(), m.group(1), False) for m in DOC_PATH.finditer(text)]
    for pos, target, is_link in targets:
        line = text.count("\n", 0, pos) + 1
        if EXTERNAL.match(target):
            continue
        path, _, fragment = target.partition("#")
        where = f"{doc}:{line}: {target}"
        if not path:
            resolved = full
        else:
            candidates = [os.path.realpath(os.path.join(os.path.dirname(full), path))]
            if not is_link:
                candidates.append(os.path.realpath(os.path.join(ROOT, path)))
            found = [c for c in candidates if inside(c) and os.path.exists(c)]
            if not found:
                outside = all(not inside(c) for c in candidates)
                problems.append(f"{where}: {'outside the repository' if outside else 'no such file'}")
                continue
            resolved = found[0]
        if fragment and resolved.endswith(".md") and fragment not in anchors(resolved):
            problems.append(f"{where}: no heading #{fragment} in "
                            f"{os.path.relpath(resolved, ROOT)}")
    return problems


def main():
    problems = []
    if not os.path.isfile(os.path.join(ROOT, "LICENSE")):
        problems.append("LICENSE: missing")
    for doc in documents():
        problems += check(doc)
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
