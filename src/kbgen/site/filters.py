"""What the page templates get beyond the text filters: status marks and icons, links between
records, bug ids turned into links, and the dashboard's charts (see :mod:`kbgen.site.render`)."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from enum import Enum
from typing import Any

import jinja2
from markupsafe import Markup

from kbgen import mdsafe
from kbgen.kinds import KINDS
from kbgen.models import BUG_ID
from kbgen.site import charts
from kbgen.site.data import SiteData, page_uri, relative

#: The mark shown beside a probe result, a progress step or a tried fix: a Material icon
#: shortcode (pymdownx.emoji makes it an inline SVG, so no emoji font is needed) and its colour.
_MARKS = {
    "ok": ("material-check-circle", "kb-mark--ok"),
    "warn": ("material-alert", "kb-mark--warn"),
    "bad": ("material-close-circle", "kb-mark--bad"),
    "skip": ("material-minus-circle-outline", "kb-mark--skip"),
    "pending": ("material-timer-sand", "kb-mark--pending"),
    "unknown": ("material-help-circle-outline", "kb-mark--skip"),
}
ICONS = {
    "pass": "ok", "warn": "warn", "skip": "skip",
    "fail": "bad", "error": "bad", "crash": "bad", "timeout": "bad",
    "passed": "ok", "failed": "bad", "skipped": "skip", "pending": "pending",
    "worked": "ok", "partial": "warn",
}  # fmt: skip


def mark(state: str) -> Markup:
    """The icon shortcode for ``state`` (a probe status, step state or fix outcome)."""
    shortcode, css = _MARKS[ICONS.get(state, "unknown")]
    return Markup(f':{shortcode}:{{ .kb-mark .{css} title="{state}" }}')


def icon(value: Enum) -> Markup:
    return mark(value.value)


def task(state: Enum) -> Markup:
    """A checklist item's start: the state's mark, which kbgen.css shows in place of the bullet
    (a ticked box beside it was a second mark saying less: failed and pending looked alike)."""
    return Markup(f"- {mark(state.value)}")


# Code spans (also those mdsafe writes as HTML), links and autolinks are left alone; a bare bug id
# outside them becomes a link.
_BUG_REF_RE = re.compile(
    r"(?P<skip>(?P<ticks>`+).*?(?P=ticks)|\[[^\]\n]*\]\([^)\n]*\)|<code>[^<]*</code>|<[^>\n]*>)"
    rf"|(?<![\w/#.-])(?P<bug>{BUG_ID})(?![\w-])",
    re.DOTALL,
)


def record_link(context: Any, kind: str, record_id: str) -> tuple[str, str] | None:
    """The label and relative page path of a record's link from the page being rendered (None
    when there is no such record): a bug by its id, anything else by its title."""
    entries = context["site"].kb.entries(KINDS[kind])
    if record_id not in entries:
        return None
    label = record_id if kind == "bug" else entries[record_id].record.title
    return label, relative(page_uri(kind, record_id), context["here"])


@jinja2.pass_context
def html_link(context: Any, kind: str, record_id: str) -> Markup:
    """``<a href="page.md">title</a>`` for a record (its id as text when there is no such record),
    for a table the site plugin lifts out of Markdown (:mod:`kbgen.site.rawhtml`), which makes the
    ``.md`` path a site URL."""
    found = record_link(context, kind, record_id)
    if found is None:
        return mdsafe.escape_html(record_id)
    label, target = found
    return Markup(f'<a href="{html.escape(target, quote=True)}">{mdsafe.escape_html(label)}</a>')


def link_bug_ids(text: str, bugs: Any, here: str) -> str:
    """``text`` (Markdown) with each bare id of a known bug turned into a link to its page."""

    def swap(m: re.Match[str]) -> str:
        bug = m.group("bug")
        if bug is None or bug not in bugs:
            return m.group(0)
        return f"[{bug}]({relative(page_uri('bug', bug), here)})"

    if "BUG-" not in text:
        return text
    return "".join(
        chunk if is_code else _BUG_REF_RE.sub(swap, chunk) for is_code, chunk in mdsafe.split_fences(text)
    )


def dashboard_charts(site: SiteData, top: int = 10) -> dict[str, Markup]:
    """The dashboard's SVG charts: opened and closed per week, open bugs by error and severity."""
    weeks = [(day.strftime("%b %d"), opened, closed) for day, opened, closed in site.weekly()]
    by_error = [
        charts.Bar(site.errors[e].title if e in site.errors else (e or "not classified"), n)
        for e, n in site.open_by_error()[:top]
    ]
    by_sev = [charts.Bar(sev.value, n, sev.value) for sev, n in site.open_by_severity()]
    return {
        "weekly": Markup(
            charts.paired_columns(weeks, "Bugs opened and closed per week", ("opened", "closed"))
        ),
        "by_error": Markup(charts.hbars(by_error, "Open bugs by error type")) if by_error else Markup(""),
        "by_severity": Markup(charts.hbars(by_sev, "Open bugs by severity")),
    }


class Memo:
    """Parts of a page kept from one rendering to the next, under a key the template gives: the
    digests of everything the part shows. The bug index wraps each row in it, so a server's
    rebuild after one bug is saved renders one row, not a thousand.

    ``{% call memo("bug-row", site.digest("bug", b.id), ...) %}<tr>...</tr>{% endcall %}``
    """

    #: parts kept; past it the memo starts over (old digests are never asked for). A bug shows
    #: in a few tables (the bug index, its error type's, its causes' and fixes' pages).
    LIMIT = 200_000

    def __init__(self) -> None:
        self.kept: dict[tuple[Any, ...], Markup] = {}

    def __call__(self, *key: Any, caller: Any) -> Markup:
        found = self.kept.get(key)
        if found is None:
            if len(self.kept) >= self.LIMIT:
                self.kept.clear()
            found = self.kept[key] = Markup(caller())
        return found

    def table(self, name: str, rows: Iterable[tuple[tuple[Any, ...], Any]], row: Any) -> Markup:
        """The rows of a big table at the cost of a lookup each: ``row(item)`` (a macro) for each
        ``(key, item)`` of ``rows``, kept under ``(name, *key)`` as a call would keep it."""
        kept, made = self.kept, []
        for key, item in rows:
            full = (name, *key)
            found = kept.get(full)
            if found is None:
                if len(kept) >= self.LIMIT:
                    kept.clear()
                found = kept[full] = Markup(row(item))
            made.append(found)
        return Markup("".join(made))

    def clear(self) -> None:
        self.kept.clear()
