"""`kbgen build-pages` writes Markdown for an engine without kbgen's plugin, so without its
sanitizer: what a plain `mkdocs build` makes of it must hold nothing a record's text put there.

The KB holds a bug per hole the site's Markdown escaping had, a report brought in by `kbgen
import`, and bodies with angle-bracket link destinations and the marker of lifted HTML blocks.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import invoke
from site_kb import TODAY, build_plain_site, make_site_project
from test_site_sanitize import dangers, hostile_bug, hostile_files, import_hostile_report
from test_site_user_text import (
    EVIL,
    IMPORTED_REPORT,
    LIFT_FROM_BODY,
    MARKER_IN_FENCE,
    TRACKER,
    article,
    outline,
)

pytestmark = pytest.mark.slow

EXTRA = {
    "BUG-20251114-001": LIFT_FROM_BODY,
    "BUG-20251114-002": MARKER_IN_FENCE,
    "BUG-20251114-003": IMPORTED_REPORT.split("## Steps to reproduce\n", 1)[1],
}


def build_hostile_plain_site(root: Path, work: Path) -> Path:
    """The hostile KB's pages as `kbgen build-pages` writes them, built by mkdocs alone."""
    files = hostile_files()
    for bug_id, body in EXTRA.items():
        files[f"kb/bugs/{bug_id}.md"] = hostile_bug(bug_id, body, title=f"Hostile x](<img src={TRACKER}>")
    project = make_site_project(root, files)
    with pytest.MonkeyPatch.context() as patch:
        import_hostile_report(project, patch)
    return build_plain_site(project, work)


@pytest.fixture(scope="module")
def plain_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_hostile_plain_site(tmp_path_factory.mktemp("plain"), tmp_path_factory.mktemp("plain-out"))


def bug_pages(site: Path) -> list[Path]:
    return sorted((site / "bugs").glob("BUG-*/index.html"))


def test_no_page_built_without_the_plugin_holds_what_a_record_put_there(plain_site: Path) -> None:
    found = bug_pages(plain_site)
    assert len(found) >= 15  # the fixture's 3, a bug per hole, the imported one and the extra ones
    for page in [*found, plain_site / "bugs" / "index.html"]:
        text = article(page.read_text(encoding="utf-8"))
        parsed = outline(text)
        assert dangers(text) == [], page
        assert [tag for tag, _ in parsed.tags if tag in ("img", "iframe", "script")] == [], page
        hrefs = [attrs.get("href") or "" for tag, attrs in parsed.tags if tag == "a"]
        assert not [h for h in hrefs if "tracker.example" in h or "evil.example" in h], page
        assert not [a for _, a in parsed.tags if "md-button" in (a.get("class") or "")], page
        assert parsed.linked_headings == [], page


def test_hostile_text_is_shown_as_written(plain_site: Path) -> None:
    def text_of(bug_id: str) -> str:
        return outline(
            article((plain_site / "bugs" / bug_id / "index.html").read_text(encoding="utf-8"))
        ).text

    imported = text_of("BUG-20251114-003")
    assert f"Open the notebook x](<img src={TRACKER}>" in imported
    assert f"Then press x](<a href={EVIL} class=md-button>" in imported
    assert f"Hostile x](<img src={TRACKER}>" in imported
    assert "[r]: x<img src=x onerror=alert(22)>" in text_of("BUG-20251120-001")
    fenced = outline(article((plain_site / "bugs" / "BUG-20251114-002" / "index.html").read_text("utf-8")))
    assert f"<!-- kbgen:html -->\n<img src={TRACKER}>\n<!-- /kbgen:html -->\n" in fenced.code
    assert not re.search(r"<!-- /?kbgen:html", (plain_site / "bugs" / "index.html").read_text("utf-8"))


def test_build_pages_refuses_a_docs_link_to_a_file_outside(tmp_path: Path) -> None:
    """The pages go to another engine, which would publish whatever the link points at."""
    outside = tmp_path / "outside.txt"
    outside.write_text("kbgen-test-secret-5e1d\n", encoding="utf-8")
    project = make_site_project(tmp_path / "project")
    (project / "docs" / "notes.txt").symlink_to(outside)
    out = tmp_path / "pages"
    result = invoke("--kb", str(project), "build-pages", str(out), KBGEN_NOW=TODAY)
    assert result.exit_code == 1
    assert f"{project / 'docs' / 'notes.txt'}: a symbolic link to {outside}, outside" in result.output
    assert not out.exists() or "kbgen-test-secret-5e1d" not in "".join(
        p.read_text(encoding="utf-8", errors="replace") for p in out.rglob("*") if p.is_file()
    )
    # a link that stays inside docs/ is published like the file it points at
    (project / "docs" / "notes.txt").unlink()
    (project / "docs" / "guide.md").symlink_to(project / "docs" / "getting-started.md")
    assert invoke("--kb", str(project), "build-pages", str(out), KBGEN_NOW=TODAY).exit_code == 0
    assert (out / "guide.md").read_text(encoding="utf-8").startswith("# Getting started")
