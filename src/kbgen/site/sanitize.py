"""Clean the HTML of pages made from KB text with an allow-list sanitizer (nh3, the Python binding
of the Rust ammonia crate) before the theme wraps them.

``mdsafe`` keeps text that people wrote from turning into markup, but a Markdown engine has more
ways to produce HTML than any rewrite of Markdown can foresee. So the HTML that comes out is
cleaned as well: only the elements and attributes mkdocs-material's features produce survive
(admonitions, details, content tabs, tables, highlighted code with line anchors, task lists,
emoji and icon SVGs, heading permalinks, the sortable tables' ``data-`` keys); scripts, styles,
frames, forms, every ``on*`` attribute and every URL whose scheme is not a web or mail one go.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from functools import lru_cache
from typing import Any

_TAGS = {
    # text and structure
    *("a", "abbr", "b", "blockquote", "br", "caption", "cite", "code", "col", "colgroup", "dd", "del"),
    *("details", "dfn", "div", "dl", "dt", "em", "figcaption", "figure", "h1", "h2", "h3", "h4"),
    *("h5", "h6", "hr", "i", "img", "ins", "kbd", "li", "mark", "ol", "p", "pre", "q", "s", "samp"),
    *("small", "span", "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th"),
    *("thead", "tr", "u", "ul", "var", "wbr", "article", "section", "aside", "nav", "time"),
    # content tabs and task lists
    *("input", "label"),
    # emoji and icons from Material's shortcodes; the dashboard's charts (labels are <text>)
    *("svg", "path", "g", "circle", "rect", "line", "polyline", "polygon", "ellipse", "title", "text"),
}
_EVERYWHERE = {"class", "id", "title", "lang", "dir", "role", "hidden"}
_ATTRIBUTES = {
    "*": _EVERYWHERE | {f"aria-{name}" for name in ("label", "hidden", "describedby", "labelledby", "sort")},
    "a": {"href", "name", "rel"},
    "img": {"src", "alt", "width", "height", "loading"},
    "details": {"open"},
    "input": {"type", "checked", "disabled", "name"},
    "label": {"for"},
    "ol": {"start", "reversed", "type"},
    "li": {"value"},
    "td": {"align", "colspan", "rowspan", "style"},
    "th": {"align", "colspan", "rowspan", "scope", "style"},
    "col": {"span"},
    "time": {"datetime"},
    "abbr": {"title"},
    "svg": {"xmlns", "viewBox", "viewbox", "width", "height", "fill", "aria-hidden", "focusable"},
    "path": {"d", "fill", "fill-rule", "clip-rule"},
    "g": {"fill", "transform"},
    "circle": {"cx", "cy", "r", "fill"},
    "rect": {"x", "y", "width", "height", "rx", "ry", "fill"},
    "line": {"x1", "y1", "x2", "y2"},
    "polyline": {"points"},
    "polygon": {"points"},
    "ellipse": {"cx", "cy", "rx", "ry"},
    "text": {"x", "y", "dx", "dy", "text-anchor", "dominant-baseline"},
}
_SCHEMES = {"http", "https", "mailto", "ftp", "ftps"}
# Only tables' alignment may be styled (Python-Markdown writes ``style="text-align: left;"``).
_STYLES = {"text-align"}


@lru_cache(maxsize=1)
def _cleaner() -> Callable[[str], Any]:
    """One sanitizer for every page: its allow-lists are built once, not per call (nh3.Cleaner;
    an nh3 without it builds them per call, with the same options)."""
    import nh3

    if hasattr(nh3, "Cleaner"):
        return nh3.Cleaner(**_options()).clean
    return functools.partial(nh3.clean, **_options())


def _options() -> dict[str, Any]:
    return {
        "tags": _TAGS,
        "attributes": _ATTRIBUTES,
        "url_schemes": _SCHEMES,
        "generic_attribute_prefixes": {"data-"},
        "strip_comments": True,
        "link_rel": None,  # links to other KB pages keep no rel; off-site ones keep theirs
        "clean_content_tags": {"script", "style"},
        "filter_style_properties": _STYLES,
    }


def clean_html(html: str) -> str:
    """``html`` with everything outside the allow-list removed (text kept, markup dropped)."""
    return str(_cleaner()(html))


class BlockCleaner:
    """:func:`clean_html` for the big HTML blocks of one generated page (:mod:`kbgen.site.rawhtml`),
    kept between a server's rebuilds: a block seen before is not worked on again, and a table's
    rows are worked on one by one (each cleaned inside a table, as the whole table would parse
    them; a list's items the same way), so a table of ten thousand bugs with one row changed
    costs one row.

    ``resolve`` (the page's link resolution) is applied to each part before it is cleaned, so the
    parts are kept under the text the template wrote; whoever keeps the cleaner drops it when the
    site's files change. Whatever is put together is made of cleaned parts only: the table with
    an empty body, and each row as the sanitizer wrote it inside ``<table><tbody>`` (an item
    inside ``<ul>``); a block whose parts do not come back in that shape is cleaned whole."""

    ROWS_FROM = 64  # a smaller table or list is cleaned whole
    LIMIT = 100_000  # rows kept; past it the memo starts over
    HELD = 16_000_000  # characters of whole blocks kept; past it they are dropped
    #: the containers worked on row by row: (opening tag, row's end tag, what a row is cleaned in)
    KINDS = (("<tbody>", "</tr>", "<table><tbody>"), ("<ul>", "</li>", "<ul>"))

    def __init__(self) -> None:
        self.blocks: dict[str, str] = {}
        self.held = 0  # characters in self.blocks
        self.rows: dict[tuple[str, str], str] = {}

    def __call__(self, block: str, resolve: Callable[[str], str] = str) -> str:
        done = self.blocks.get(block)
        if done is None:
            if self.held > self.HELD:  # a big table's every version is megabytes: start over
                self.blocks.clear()
                self.held = 0
            if len(self.rows) >= self.LIMIT:
                self.rows.clear()
            done = next(
                (d for kind in self.KINDS if (d := self._rows(block, resolve, *kind)) is not None), None
            )
            self.blocks[block] = done = clean_html(resolve(block)) if done is None else done
            self.held += len(block) + len(done)
        return done

    def _rows(
        self, block: str, resolve: Callable[[str], str], tag: str, row_end: str, wrap: str
    ) -> str | None:
        close = tag.replace("<", "</")
        head, opened, rest = block.partition(tag)
        body, closed, tail = rest.rpartition(close)
        if not (opened and closed) or body.count(row_end) < self.ROWS_FROM:
            return None
        empty = tag + close
        skeleton = clean_html(resolve(f"{head}{empty}{tail}"))
        if skeleton.count(empty) != 1:
            return None
        unwrap = "".join(f"</{name}>" for name in reversed(wrap[1:-1].split("><")))
        cleaned = []
        for row in _cut(body, row_end):
            done = self.rows.get((tag, row))
            if done is None:
                out = clean_html(wrap + resolve(row) + unwrap)
                if not (out.startswith(wrap) and out.endswith(unwrap)):
                    return None
                done = self.rows[tag, row] = out[len(wrap) : -len(unwrap)]
            cleaned.append(done)
        return skeleton.replace(empty, tag + "".join(cleaned) + close, 1)


def _cut(body: str, row_end: str) -> list[str]:
    """``body`` cut after each ``row_end`` (the text between rows goes with the next one)."""
    parts = body.split(row_end)
    return [part + row_end for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
