"""The tags page and the tag links above each tagged page, as a built site shows them: built by
mkdocs through the kbgen plugin, and from `kbgen build-pages` output without it."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import write_tree
from site_kb import build_plain_site, make_site_project, mkdocs_build

BUG = "BUG-20251109-002"
HOSTILE = "BUG-20251112-014"
ERROR = ("CUDA error: an illegal memory access was encountered", "../errors/cuda-illegal-memory-access/")
BUG_ENTRY = (f"{BUG}: Illegal memory access in BCE loss", f"../bugs/{BUG}/")
HOSTILE_ENTRY = (
    f"{HOSTILE}: <script>alert(1)</script> {{{{ 7 * 7 }}}} | pipes *and* `ticks`",
    f"../bugs/{HOSTILE}/",
)
#: each tag's section of the tags page: its anchor, then each entry's text and link
EXPECTED = {
    "tag:bboldb": [HOSTILE_ENTRY],  # the tag <b>bold</b>, with what the theme may show of it
    "tag:cuda": [ERROR],
    "tag:data": [("Index or label out of range", "../causes/out-of-range-index/")],
    "tag:loss": [BUG_ENTRY],
    "tag:memory": [ERROR],
    "tag:wsl2": [BUG_ENTRY, HOSTILE_ENTRY],
}


class Tags(HTMLParser):
    """The sections of a tags page (``h2`` anchor -> entries of the list below it) and the tag
    links of a page (``nav.md-tags``), those a reader sees apart from those hidden."""

    def __init__(self, page: Path) -> None:
        super().__init__()
        self.sections: dict[str, list[tuple[str, str]]] = {}
        self.navs: list[tuple[bool, list[str]]] = []  # each nav.md-tags: hidden?, its links
        self._section: str | None = None
        self._item: list[str] | None = None
        self._href = ""
        self._nav = False  # inside a nav.md-tags
        self.feed(page.read_text(encoding="utf-8"))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "h2":
            self._section = found.get("id") if (found.get("id") or "").startswith("tag:") else None
            if self._section is not None:
                self.sections[self._section] = []
        elif tag == "li" and self._section is not None:
            self._item = []
        elif tag == "a" and self._item is not None and not self._href:
            self._href = found.get("href") or ""
        elif tag == "nav" and "md-tags" in (found.get("class") or "").split():
            self._nav = True
            self.navs.append(("hidden" in found, []))
        elif tag == "a" and self._nav:
            self.navs[-1][1].append(found.get("href") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "li" and self._item is not None and self._section is not None:
            self.sections[self._section].append((" ".join("".join(self._item).split()), self._href))
            self._item, self._href = None, ""
        elif tag == "nav":
            self._nav = False

    def handle_data(self, data: str) -> None:
        if self._item is not None:
            self._item.append(data)


@pytest.fixture(params=["plugin", "build-pages"])
def site(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """The fixture KB's site, built through the plugin or from `kbgen build-pages` output."""
    project = make_site_project(tmp_path / "project")
    if request.param == "build-pages":
        return build_plain_site(project, tmp_path / "plain")
    result = mkdocs_build(project)
    assert result.returncode == 0, result.stderr
    return project / "site"


def test_tags_page_lists_every_tagged_page_under_each_tag(site: Path) -> None:
    assert Tags(site / "tags" / "index.html").sections == EXPECTED


def test_tags_above_a_page_link_to_their_section_of_the_tags_page(site: Path) -> None:
    sections = Tags(site / "tags" / "index.html").sections
    shown = {f"bugs/{BUG}": ["loss", "wsl2"], "errors/cuda-illegal-memory-access": ["cuda", "memory"]}
    for page, tags in shown.items():
        navs = Tags(site / page / "index.html").navs
        # one row of tags a reader sees; the theme's own, which would link nowhere, is hidden
        assert [links for hidden, links in navs if not hidden] == [
            [f"../../tags/#tag:{tag}" for tag in tags]
        ], page
        assert all(not links for hidden, links in navs if hidden), page
        assert all(link.split("#")[1] in sections for _, links in navs for link in links)
    assert Tags(site / "fixes" / "reinstall-wheel" / "index.html").navs == []  # a fix with no tags


def test_written_pages_leave_no_tag_listing_to_the_theme(tmp_path: Path) -> None:
    """The theme's `<!-- material/tags -->` listing made Zensical's memory grow with the square
    of the tagged pages (4 GB at 2,000 bugs); kbgen writes the tags page's lists itself."""
    project = make_site_project(tmp_path / "project")
    build_plain_site(project, tmp_path / "plain")
    written = list((tmp_path / "plain" / "pages").rglob("*.md"))
    assert len(written) > 10
    assert [p for p in written if "material/tags" in p.read_text(encoding="utf-8")] == []


def test_a_team_tags_page_left_to_the_theme_still_takes_the_tag_links(tmp_path: Path) -> None:
    """A team that kept the theme's listing in its own tags template: `mkdocs build --strict`
    passes (the theme makes the sections after mkdocs checks anchors) and the links land."""

    project = make_site_project(tmp_path / "project")
    write_tree(project, {"templates/page-tags.md.j2": "# Tags\n\n<!-- material/tags -->\n"})
    result = mkdocs_build(project)
    assert result.returncode == 0, result.stderr
    assert "does not contain an anchor" not in result.stderr
    site = project / "site"
    sections = Tags(site / "tags" / "index.html").sections
    links = [link for _, found in Tags(site / "bugs" / BUG / "index.html").navs for link in found]
    assert links and all(link.split("#")[1] in sections for link in links)
