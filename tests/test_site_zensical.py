"""`kbgen build-pages` output built by Zensical, the successor of Material for MkDocs.

Runs where Zensical is installed (named by $ZENSICAL, in the `.zvenv` that `make zensical` makes
from its lock, or on PATH) and skips otherwise. A KB of 1,000 bugs, where a tag's section of the
tags page once held 92 KB of search text and Zensical refused it (64 KB per field). What kept a
build of 10,000 bugs from finishing is checked here at 1,000, where it shows in the written pages:
the theme's tag listing (a `<!-- material/tags -->` marker) made Zensical's memory grow with the
square of the tagged pages (Zensical 0.0.73 peaked at 1.5 GB at 1,000 bugs and 4 GB at 2,000), so
kbgen writes the tags page's lists itself and leaves Zensical no listing to fill.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run

REPO = Path(__file__).resolve().parents[1]
LOCKED = REPO / ".zvenv" / "bin" / "zensical"  # `make zensical`
ZENSICAL = os.environ.get("ZENSICAL") or (str(LOCKED) if LOCKED.is_file() else shutil.which("zensical"))

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        ZENSICAL is None, reason="zensical is not installed (`make zensical` installs it from its lock)"
    ),
]


def plain_config(project: Path) -> Path:
    """The project's mkdocs.yml for an engine without plugins: no kbgen, pages from build-pages."""
    config = (project / "mkdocs.yml").read_text()
    assert "  - kbgen:\n      stale_days: 180\n" in config
    plain = config.replace("  - kbgen:\n      stale_days: 180\n", "").replace(
        "docs_dir: docs", "docs_dir: pages"
    )
    assets = "\nextra_css: [assets/kbgen.css]\nextra_javascript: [assets/kbgen.js]\n"
    (project / "zensical.yml").write_text(plain + assets)
    return project / "zensical.yml"


@pytest.mark.usefixtures("base_layer")  # the knowledge kbgen ships fills the index pages
def test_build_pages_output_builds_with_zensical_at_1000_bugs(tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        from bench_site import make_project
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    make_project(tmp_path, 1000)
    code, out = run("--kb", str(tmp_path), "build-pages", str(tmp_path / "pages"))
    assert code == 0, out
    assert ZENSICAL is not None
    built = subprocess.run(
        [ZENSICAL, "build", "-f", str(plain_config(tmp_path))],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    site = tmp_path / "site"
    bugs = sorted((tmp_path / "kb" / "bugs").glob("*.md"))
    assert len(bugs) == 1000
    for bug in (bugs[0], bugs[-1]):
        page = (site / "bugs" / bug.stem / "index.html").read_text()
        assert bug.stem in page and "Illegal memory access in the loss" in page
    pages = tmp_path / "pages"
    assert not [p for p in pages.rglob("*.md") if "material/tags" in p.read_text(encoding="utf-8")]
    tags = (site / "tags" / "index.html").read_text()
    loss = tags.split('<h2 id="tag:loss">')[1].split("<h2")[0]  # every bug has the tag "loss"
    assert all(f'href="../bugs/{bug.stem}/"' in loss for bug in bugs)
    shown = page.split('<nav class="md-tags">')[1].split("</nav>")[0]  # the last bug's tags
    chips = re.findall(r'href="\.\./\.\./tags/#([^"]+)"', shown)
    assert chips[0] == "tag:loss" and len(chips) == 2
    assert all(f'<h2 id="{chip}">' in tags for chip in chips)
    assert (site / "assets" / "kbgen.css").is_file() and "assets/kbgen.css" in page  # the site's own styles
    index = json.loads((site / "search.json").read_text())["items"]
    found = {item["location"].split("#")[0] for item in index}
    assert f"bugs/{bugs[0].stem}/" in found  # each bug is found by search on its own page
    assert not any(item["location"].startswith("tags/") for item in index)
    # Zensical 0.0.73 shares its search index's room among the items (one per section of a
    # page): a field may hold 2**30 bytes over the item count rounded up to a power of two, as
    # its errors report (64 KB for the 13,791 items of 1,000 bugs, 8 KB for the 121,788 of
    # 10,000). Each bug page adds the same sections, so this build tells the limit at 10,000.
    per_bug = sum(1 for item in index if item["location"].startswith("bugs/")) / len(bugs)
    at_10000 = len(index) + round(per_bug * (10000 - len(bugs)))
    limit = 2**30 // (1 << (at_10000 - 1).bit_length())
    longest = max(index, key=lambda item: len(item["text"].encode()))
    assert len(longest["text"].encode()) <= limit, longest["location"]
    assert not found & {"errors/", "causes/", "fixes/", "bugs/"}  # index tables: 20 KB and growing
