"""The site as a new team first sees it: nothing verified yet is no warning."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from site_kb import make_site_project, mkdocs_build, site_kb_files

pytestmark = pytest.mark.slow


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_a_new_team_is_told_what_verifying_a_fix_means(tmp_path: Path) -> None:
    """Day one: no fix has been verified yet, which is no warning, only something to learn."""
    files = {
        name: "".join(line for line in text.splitlines(True) if not line.startswith("last_verified:"))
        for name, text in site_kb_files().items()
    }
    project = make_site_project(tmp_path, files)
    built = mkdocs_build(project)
    assert built.returncode == 0, built.stderr[-3000:]
    home = (project / "site" / "index.html").read_text()
    assert "kb-stat--warn" not in home.split("to draw on")[0].rsplit("<li", 1)[-1]
    assert "A fix is verified" in text_of(home) and "0 of 2" not in text_of(home)
