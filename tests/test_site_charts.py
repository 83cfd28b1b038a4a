"""The dashboard's charts and the small text helpers of the site, as a reader meets them."""

from __future__ import annotations

import datetime as dt
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kbgen import templating
from kbgen.site import charts
from kbgen.site import filters as pagetext
from kbgen.site.data import SiteData
from kbgen.store import Project, load_kb
from site_kb import make_site_project

SVG = "{http://www.w3.org/2000/svg}"


def bars_of(made: str) -> list[ET.Element]:
    return list(ET.fromstring(made).iter(f"{SVG}rect"))


def test_horizontal_bars_scale_to_the_largest_and_escape_labels() -> None:
    made = charts.hbars(
        [charts.Bar("<b>cuda</b> & co", 4, "high"), charts.Bar("oom", 2), charts.Bar("none", 0)], "By error"
    )
    root = ET.fromstring(made)  # well-formed XML: a label cannot break out of its element
    assert root.get("aria-label") == "By error"
    widths = [float(r.get("width", "0").rstrip("%")) for r in bars_of(made)]
    assert widths[0] == 2 * widths[1] and widths[2] == 0
    assert widths[0] < 100  # room for the value after the longest bar
    assert bars_of(made)[0].get("class") == "kb-bar kb-bar--high"
    labels = [s.text for s in root.iter("span") if s.get("class") == "kb-hbar__label"]
    assert labels == ["<b>cuda</b> & co", "oom", "none"]  # whole, as text
    assert [t.text for t in root.iter(f"{SVG}text")] == ["4", "2", "0"]
    assert "fill=" not in made  # colours come from the stylesheet, so dark mode can change them


def test_a_long_label_is_kept_whole() -> None:
    """Two error titles that differ only at the end must not both be cut to the same prefix."""
    titles = [
        "CUDA error: an illegal instruction was encountered (715)",
        "CUDA error: an illegal memory access was encountered (700)",
    ]
    root = ET.fromstring(charts.hbars([charts.Bar(t, 1) for t in titles], "By error"))
    assert [s.text for s in root.iter("span") if s.get("class") == "kb-hbar__label"] == titles


def test_charts_are_not_scaled_to_fit() -> None:
    """No viewBox: the text keeps its CSS size on a phone instead of shrinking with the chart."""
    weekly = charts.paired_columns([("w1", 3, 0), ("w2", 1, 3)], "Per week", ("opened", "closed"))
    for made in (weekly, charts.hbars([charts.Bar("oom", 2)], "By error")):
        for svg in [e for e in ET.fromstring(made).iter() if e.tag in (f"{SVG}svg", "svg")]:
            assert svg.get("viewBox") is None and svg.get("width") == "100%"


def test_paired_columns_draw_both_series_per_group() -> None:
    svg = charts.paired_columns([("w1", 3, 0), ("w2", 1, 3)], "Per week", ("opened", "closed"))
    rects = bars_of(svg)
    assert [r.get("class") for r in rects] == ["kb-bar kb-bar--opened", "kb-bar kb-bar--closed"] * 2
    heights = [float(r.get("height", "0")) for r in rects]
    assert heights[0] == heights[3] == 3 * heights[2] and heights[1] == 0
    xs = [float(r.get("x", "0").rstrip("%")) for r in rects]
    assert xs == sorted(xs) and xs[0] > 0 and xs[-1] < 100  # placed in percentages of the width


def test_charts_without_data_are_still_valid() -> None:
    ET.fromstring(charts.hbars([], "Nothing"))
    ET.fromstring(charts.paired_columns([], "Nothing", ("a", "b")))


@pytest.fixture
def site(tmp_path: Path) -> SiteData:
    kb = load_kb(Project(make_site_project(tmp_path, site_config=False)))
    return SiteData(kb, dt.date(2025, 11, 21))


def test_weekly_counts_bugs_opened_and_closed(site: SiteData) -> None:
    weeks = site.weekly(12)
    assert len(weeks) == 12 and weeks[-1][0] <= site.today < weeks[-1][0] + dt.timedelta(days=7)
    assert sum(opened for _, opened, _ in weeks) == len(site.bugs)  # all three made within 12 weeks
    closed = [b for b in site.bugs.values() if not site.is_open(b)]
    assert sum(c for _, _, c in weeks) == len(closed) == 1


def test_open_bugs_by_error_and_severity(site: SiteData) -> None:
    assert site.open_by_error() == [("cuda-illegal-memory-access", 2)]
    assert [(sev.value, n) for sev, n in site.open_by_severity()] == [
        ("critical", 1),
        ("high", 1),
        ("medium", 0),
        ("low", 0),
    ]


def test_first_sentence_keeps_the_index_short() -> None:
    long = "The CPU hit an instruction it does not implement. The process dies from SIGILL."
    assert templating.first_sentence(long) == "The CPU hit an instruction it does not implement."
    assert templating.first_sentence("torch.cuda.is_available() is False. Then") == (
        "torch.cuda.is_available() is False."
    )
    cut = templating.first_sentence("word " * 100, limit=40)
    assert len(cut) <= 42 and cut.endswith("…")
    assert templating.first_sentence("`a b c d e f g h` " * 10, limit=30).count("`") % 2 == 0


def test_bug_ids_in_prose_become_links_but_not_inside_code_or_links() -> None:
    bugs = {"BUG-20251109-002": object()}
    text = "see BUG-20251109-002, not `BUG-20251109-002` nor [BUG-20251109-002](x.md) nor BUG-20990101-001"
    made = pagetext.link_bug_ids(text, bugs, "errors/x.md")
    assert made == (
        "see [BUG-20251109-002](../bugs/BUG-20251109-002.md), not `BUG-20251109-002` "
        "nor [BUG-20251109-002](x.md) nor BUG-20990101-001"
    )
    fenced = "```\nBUG-20251109-002\n```\n"
    assert pagetext.link_bug_ids(fenced, bugs, "errors/x.md") == fenced


def test_signature_patterns_read_as_log_lines_when_plain() -> None:
    assert (
        templating.readable_pattern(r"Illegal instruction \(core dumped\)")
        == "Illegal instruction (core dumped)"
    )
    assert templating.readable_pattern(r"\bSIGILL\b") == "SIGILL"
    assert templating.readable_pattern("CUDA error: out of memory") == "CUDA error: out of memory"
    kept = r"(?:RuntimeError|torch\.AcceleratorError): CUDA error"
    assert templating.readable_pattern(kept) == kept  # alternatives stay a pattern
    assert templating.readable_pattern(r"sm_\d+") == r"sm_\d+"
