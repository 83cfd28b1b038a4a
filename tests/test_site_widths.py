"""The site on a phone (390 px) and a desktop (1400 px), in headless Chromium.

The shipped kb/ with a small fleet (one node drifting) is built with mkdocs and opened at both
widths: nothing may be cut off at the right, no word of a title broken in two, chart text must
stay readable and chart labels whole, and each checklist step must show one mark. Screenshots go
to $KBGEN_SHOTS/widths (default tests/artifacts/widths/); the folder is printed.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fleet_fixtures import report
from site_kb import mkdocs_build
from test_fleet_site import ingest
from test_site_browser import CHROMIUM, SHOTS, Browser, serve

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"),
]

FOLDER = SHOTS / "widths"
WIDTHS = [1400, 390]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[str]:
    repo = Path(__file__).resolve().parents[1]
    project = tmp_path_factory.mktemp("widths")
    for folder in ("kb", "docs"):
        shutil.copytree(repo / folder, project / folder)
    shutil.copy(repo / "mkdocs.yml", project / "mkdocs.yml")
    drift = {"driver": "535.104.05", "name": "NVIDIA A100-SXM4-80GB with a long marketing name"}
    ingest(project, [report("gpu-node-01"), report("gpu-node-02", gpu=drift), report("gpu-node-03")])
    result = mkdocs_build(project)
    assert result.returncode == 0, result.stderr
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"screenshots at both widths: {FOLDER}")
    yield from serve(project / "site")


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    chrome = Browser(tmp_path / "profile")
    try:
        yield chrome
    finally:
        chrome.close()


def look(browser: Browser, url: str, width: int, name: str) -> None:
    """Open ``url`` at ``width`` and save the whole page, a screen at a time."""
    browser.resize(width)
    browser.open(url)
    browser.wait_for("document.fonts.status === 'loaded'")
    time.sleep(0.3)  # kbgen.js lays the tables out again once the fonts are in
    height = int(browser.evaluate("document.documentElement.scrollHeight"))
    for part, top in enumerate(range(0, min(height, 12000), 1000)):
        browser.evaluate(f"window.scrollTo(0, {top})")
        browser.screenshot(FOLDER / f"{name}-{width}-{part}.png")
    browser.evaluate("window.scrollTo(0, 0)")


# Everything in the article whose right edge is past the screen, except inside a code block
# (which scrolls, and says so with its scrollbar) or the bug index's sortable frame.
_CUT = """[...document.querySelectorAll('article *')].filter(e => {
  if (e.closest('pre, .highlight, .kb-sortable')) return false;
  const r = e.getBoundingClientRect();
  return r.width > 0 && r.right > window.innerWidth + 1;
}).map(e => e.tagName + ': ' + (e.innerText || '').slice(0, 60))"""

# Table frames that hide part of their table (Material scrolls them, with no sign of it).
_HIDDEN = """[...document.querySelectorAll('article .md-typeset__scrollwrap')]
  .filter(w => !w.closest('.kb-sortable') && w.scrollWidth > w.clientWidth + 1)
  .map(w => w.innerText.slice(0, 60))"""

# Words of table cells drawn on two lines (a title broken mid-word).
_BROKEN = """(() => {
  const broken = [];
  for (const cell of document.querySelectorAll('article td')) {
    const walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walk.nextNode(); node; node = walk.nextNode()) {
      if (node.parentElement.closest('code')) continue;
      for (const m of node.data.matchAll(/[A-Za-z]{4,}/g)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
        if (lines.size > 1) broken.push(m[0]);
      }
    }
  }
  return broken;
})()"""


def assert_nothing_cut(browser: Browser) -> None:
    assert browser.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    assert browser.evaluate(_CUT) == []
    assert browser.evaluate(_HIDDEN) == []
    assert browser.evaluate(_BROKEN) == []


@pytest.mark.parametrize("width", WIDTHS)
def test_home_tables_fit_and_keep_titles_whole(site: str, browser: Browser, width: int) -> None:
    look(browser, site, width, "home")
    assert_nothing_cut(browser)
    recent = browser.evaluate(
        "[...document.querySelectorAll('article h2')].find(h => h.id === 'recently-updated')"
        ".nextElementSibling.innerText"
    )
    assert "FileNotFoundError" in recent  # a whole word, not "FileNotFou" and "ndError"
    if width < 600:  # on a phone each row is a block, its cells under their headings
        assert browser.evaluate("document.querySelectorAll('article table[data-kb-rows]').length") >= 2
        assert "Title" in browser.evaluate(
            "getComputedStyle(document.querySelector("
            "'table[data-kb-rows] td[data-label=Title]'), '::before').content"
        )


@pytest.mark.parametrize("width", WIDTHS)
def test_chart_text_is_readable_and_labels_whole(site: str, browser: Browser, width: int) -> None:
    look(browser, site, width, "charts")
    sizes = browser.evaluate(
        "[...document.querySelectorAll('.kb-chart text')].map(t =>"
        " parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a)"
    )
    labels = browser.evaluate(
        "[...document.querySelectorAll('.kb-hbar__label')].map(l => ({text: l.innerText,"
        " size: parseFloat(getComputedStyle(l).fontSize), clipped: l.scrollWidth > l.clientWidth + 1}))"
    )
    assert sizes and min(sizes) >= 10  # was about 5 px on a phone: the chart was scaled down
    assert labels and all(label["size"] >= 10 and not label["clipped"] for label in labels)
    texts = [label["text"] for label in labels]
    assert "CUDA error: an illegal memory access was encountered (700)" in texts  # not cut with "…"
    assert "CUDA error: an illegal instruction was encountered (715)" in texts
    outside = browser.evaluate(
        """[...document.querySelectorAll('.kb-chart')].flatMap(c => {
          const box = c.getBoundingClientRect();
          const svgs = [...c.querySelectorAll('svg')];
          const inSvg = svgs.flatMap(s => { const r = s.getBoundingClientRect();
            return [...s.querySelectorAll('text')].filter(t => { const b = t.getBoundingClientRect();
              return b.left < r.left - 1 || b.right > r.right + 1 || b.top < r.top - 1
                || b.bottom > r.bottom + 1; }).map(t => t.textContent); });
          const inChart = [...c.querySelectorAll('.kb-hbar__label')].filter(l => {
            const b = l.getBoundingClientRect(); return b.left < box.left - 1 || b.right > box.right + 1; })
            .map(l => l.innerText);
          return [...inSvg, ...inChart];
        })"""
    )
    assert outside == []
    assert_nothing_cut(browser)


@pytest.mark.parametrize("width", WIDTHS)
def test_bug_page_findings_and_checklist(site: str, browser: Browser, width: int) -> None:
    look(browser, site + "bugs/BUG-20251109-002/", width, "bug")
    assert_nothing_cut(browser)
    findings = browser.evaluate(
        "[...document.querySelectorAll('article h2')].find(h => h.id === 'findings')"
        ".nextElementSibling.nextElementSibling.innerText"
    )
    assert "torch 2.8.0+cu128" in findings
    marks = browser.evaluate(
        "[...[...document.querySelectorAll('article h2')].find(h => h.id === 'checklist')"
        ".nextElementSibling.querySelectorAll(':scope > li')].map(li => ({"
        " marks: li.querySelectorAll('.kb-mark').length + li.querySelectorAll('input[type=checkbox]').length"
        "  + (getComputedStyle(li).listStyleType === 'none' ? 0 : 1),"
        " left: li.querySelector('.kb-mark').getBoundingClientRect().left}))"
    )
    assert len(marks) >= 5 and all(m["marks"] == 1 for m in marks)  # one mark per step, not two
    assert all(m["left"] >= 0 for m in marks)


@pytest.mark.parametrize("width", WIDTHS)
def test_fleet_page_shows_the_drift_column(site: str, browser: Browser, width: int) -> None:
    look(browser, site + "fleet/", width, "fleet")
    assert_nothing_cut(browser)
    cell = browser.evaluate(
        "(() => { const t = document.querySelector('article table'); const i = [...t.tHead.rows[0].cells]"
        ".findIndex(c => c.innerText.trim() === 'Drift'); const row = [...t.tBodies[0].rows]"
        ".find(r => r.innerText.includes('gpu-node-02')); const r = row.cells[i].getBoundingClientRect();"
        " return {text: row.cells[i].innerText, right: r.right, width: r.width}; })()"
    )
    assert "differs from the fleet" in cell["text"]
    assert cell["width"] > 0 and cell["right"] <= browser.evaluate("window.innerWidth")
