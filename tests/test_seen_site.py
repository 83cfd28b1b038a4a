"""What the site shows of a crash seen again: occurrences and the duplicate link on the bug page,
and the bugs seen most often on the dashboard. Built with the real mkdocs build."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from site_kb import BUG_FIXED, make_site_project, mkdocs_build, site_kb_files

pytestmark = pytest.mark.slow

SEEN_AGAIN = BUG_FIXED.replace(
    "    outcome: worked\n",
    "    outcome: worked\n"
    "occurrences:\n"
    "  - at: 2025-11-02T10:00:00+00:00\n"
    "    host: gpu-node-07\n"
    "    command: python train.py --epochs 3\n"
    "    exit_status: 1\n"
    "  - at: 2025-11-03T11:30:00+00:00\n"
    "    host: gpu-node-12\n"
    "    command: torchrun train.py\n"
    "    exit_status: 134\n",
)
DUPLICATE = """\
---
id: BUG-20251021-001
title: Assert in the embedding again
created: 2025-10-21T09:00:00+00:00
updated: 2025-10-21T09:00:00+00:00
status: duplicate
severity: low
duplicate_of: BUG-20251020-001
---
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = site_kb_files()
    files["kb/bugs/BUG-20251020-001.md"] = SEEN_AGAIN
    files["kb/bugs/BUG-20251021-001.md"] = DUPLICATE
    project = make_site_project(tmp_path_factory.mktemp("seen"), files)
    built = mkdocs_build(project)
    assert built.returncode == 0, built.stderr[-3000:]
    return project / "site"


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_the_bug_page_lists_where_and_when_the_crash_came_back(site: Path) -> None:
    page = text_of((site / "bugs/BUG-20251020-001/index.html").read_text())
    assert "Seen 3 times on 2 machines" in page
    assert "Occurrences" in page
    assert page.index("gpu-node-12") < page.index("gpu-node-07")  # newest first
    assert "torchrun train.py" in page and "134" in page


def test_a_duplicate_links_to_the_bug_it_repeats(site: Path) -> None:
    html = (site / "bugs/BUG-20251021-001/index.html").read_text()
    assert "Duplicate of:" in text_of(html)
    assert re.search(r'href="[./]*BUG-20251020-001/"', html)


def test_the_dashboard_names_the_crashes_that_came_back(site: Path) -> None:
    home = text_of((site / "index.html").read_text())
    assert "Crashes that came back" in home
    assert "Device-side assert in the embedding" in home.split("Crashes that came back", 1)[1]
    assert "3 times" in home


def test_the_bug_list_says_how_often_a_crash_was_seen(site: Path) -> None:
    rows = text_of((site / "bugs/index.html").read_text())
    assert "Device-side assert in the embedding · seen 3 times" in rows
    assert rows.count("seen ") == 1  # bugs seen once say nothing
