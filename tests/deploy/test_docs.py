"""The documentation points only at what the repository holds: every
relative link and named document of README.md, docs/**/*.md and */README.md
resolves inside it (headings too, for #anchors), and LICENSE is there.
The check is scripts/check-doc-links.py, also run by hand."""
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHECK = os.path.join(ROOT, "scripts", "check-doc-links.py")


def test_every_relative_link_resolves_inside_the_repository():
    r = subprocess.run([sys.executable, CHECK], capture_output=True, text=True)
    assert r.returncode == 0, "\n" + r.stdout + r.stderr


def test_the_check_finds_what_it_is_for(tmp_path):
    """A tree with no LICENSE, a link out of it, a missing file and a wrong
    anchor, also in a folder below docs/: each is named."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text(
        "# Top\n\n## Its part\n\nsee `../shared/DESIGN.md`, [a](docs/a.md#its-part) "
        "[b](#its-part) [c](#nope)\n\n```\n[in code](nowhere.md)\n```\n")
    (tmp_path / "docs" / "a.md").write_text("## Its part\n[up](../README.md#its-part) "
                                             "[gone](gone.png)\n")
    (tmp_path / "docs" / "tiers").mkdir()
    (tmp_path / "docs" / "tiers" / "b.md").write_text("[ok](../a.md#its-part) [no](../none.md)\n")
    r = subprocess.run([sys.executable, CHECK, str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 1
    assert r.stdout.splitlines() == [
        "LICENSE: missing",
        "README.md:5: #nope: no heading #nope in README.md",
        "README.md:5: ../shared/DESIGN.md: outside the repository",
        "docs/a.md:2: gone.png: no such file",
        "docs/tiers/b.md:1: ../none.md: no such file",
    ]
