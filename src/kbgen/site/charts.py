"""Small bar charts drawn when the site is built: no script, no CDN.

Nothing is scaled to fit: a chart scaled down to a phone's width shrank its text to 5 px, and a
label cut to fit a fixed width lost the words that told two error types apart. So a horizontal
chart is HTML, one row per bar, whose label is text that wraps; only the bar is an SVG. The
weekly columns are one SVG without a ``viewBox``, its shapes placed in percentages of its width,
so its text keeps the size the stylesheet gives it (in CSS px) on every screen.

Shapes carry CSS classes (``kb-bar``, ``kb-bar--<key>``) and text is filled with
``currentColor``, so the site's stylesheet colours them for the light and the dark scheme
alike. Every label is escaped: error titles are user text.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

BAR = 16  # height of one horizontal bar, in CSS px
ROOM = 88  # the longest bar's share of its row (%), leaving room for the value after it
HEIGHT, BASE, LEFT = 170, 140, 8.0  # the columns chart: height and baseline in px, plot start in %


@dataclass(frozen=True)
class Bar:
    """One bar: its label, its value, a CSS key (``kb-bar--<key>``) and a tooltip."""

    label: str
    value: int
    key: str = ""
    title: str = ""


def _cls(key: str) -> str:
    return f"kb-bar kb-bar--{escape(key)}" if key else "kb-bar"


def _pct(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".") + "%"


def hbars(bars: list[Bar], label: str) -> str:
    """A horizontal bar chart: one row per bar, its label (wrapping text) first, its value after it."""
    top = max([b.value for b in bars] + [1])
    parts = [f'<div class="kb-hbars" role="group" aria-label="{escape(label)}">']
    for bar in bars:
        width = ROOM * bar.value / top if bar.value else 0
        tip = escape(bar.title or f"{bar.label}: {bar.value}")
        parts.append(
            f'<div class="kb-hbar" title="{tip}"><span class="kb-hbar__label">{escape(bar.label)}</span>'
            f'<svg class="kb-hbar__bar" xmlns="http://www.w3.org/2000/svg" width="100%" height="{BAR + 4}"'
            ' aria-hidden="true">'
            f'<rect class="{_cls(bar.key)}" x="0" y="2" width="{_pct(width)}" height="{BAR}" rx="2"/>'
            f'<text x="{_pct(width)}" dx="6" y="{BAR - 1}">{bar.value}</text></svg></div>'
        )
    parts.append("</div>")
    return "".join(parts)


def paired_columns(groups: list[tuple[str, int, int]], label: str, keys: tuple[str, str]) -> str:
    """Vertical columns in pairs (for example opened and closed) per group, labelled below."""
    slot = (100 - LEFT) / max(1, len(groups))
    top = max([max(a, b) for _, a, b in groups] + [1])
    col = max(0.3, min(2.4, slot / 2 - 0.4))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="100%" height="{HEIGHT}" role="img" '
        f'aria-label="{escape(label)}"><title>{escape(label)}</title>',
        f'<line class="kb-axis" x1="{_pct(LEFT - 1)}" y1="{BASE}" x2="100%" y2="{BASE}"/>',
        f'<text x="0" y="14">{top}</text><text x="0" y="{BASE}">0</text>',
    ]
    for i, (name, first, second) in enumerate(groups):
        x = LEFT + i * slot + slot / 2
        for value, key, at in ((first, keys[0], x - col - 0.15), (second, keys[1], x + 0.15)):
            h = round((BASE - 14) * value / top)
            parts.append(
                f'<rect class="{_cls(key)}" x="{_pct(at)}" y="{BASE - h}" width="{_pct(col)}" height="{h}">'
                f"<title>{escape(name)}: {value} {escape(key)}</title></rect>"
            )
        if len(groups) <= 8 or i % 2 == 0:
            parts.append(f'<text x="{_pct(x)}" y="{BASE + 18}" text-anchor="middle">{escape(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)
