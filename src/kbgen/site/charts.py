"""Small bar charts as inline SVG, drawn when the site is built: no script, no CDN.

Shapes carry CSS classes (``kb-bar``, ``kb-bar--<key>``) and text is filled with
``currentColor``, so the site's stylesheet colours them for the light and the dark scheme
alike. Every label is escaped: error titles are user text.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

ROW = 22  # height of one bar in a horizontal chart, in SVG units
LABEL = 230  # width kept for the labels left of horizontal bars
WIDTH = 640


@dataclass(frozen=True)
class Bar:
    """One bar: its label, its value, a CSS key (``kb-bar--<key>``) and a tooltip."""

    label: str
    value: int
    key: str = ""
    title: str = ""


def _cls(key: str) -> str:
    return f"kb-bar kb-bar--{escape(key)}" if key else "kb-bar"


def _short(text: str, limit: int = 34) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _open(width: int, height: int, label: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(label)}">'
        f"<title>{escape(label)}</title>"
    )


def hbars(bars: list[Bar], label: str) -> str:
    """A horizontal bar chart: one row per bar, its label at the left and its value at the end."""
    height = max(1, len(bars)) * ROW + 4
    top = max([b.value for b in bars] + [1])
    room = WIDTH - LABEL - 40
    parts = [_open(WIDTH, height, label)]
    for i, bar in enumerate(bars):
        y = i * ROW + 2
        w = round(room * bar.value / top) if bar.value else 0
        tip = escape(bar.title or f"{bar.label}: {bar.value}")
        name = escape(_short(bar.label))
        parts.append(
            f"<g><title>{tip}</title>"
            f'<text x="{LABEL - 8}" y="{y + ROW / 2 + 4:g}" text-anchor="end">{name}</text>'
            f'<rect class="{_cls(bar.key)}" x="{LABEL}" y="{y + 3}" width="{w}" height="{ROW - 6}" rx="2"/>'
            f'<text x="{LABEL + w + 6}" y="{y + ROW / 2 + 4:g}">{bar.value}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


def paired_columns(groups: list[tuple[str, int, int]], label: str, keys: tuple[str, str]) -> str:
    """Vertical columns in pairs (for example opened and closed) per group, labelled below."""
    height, base, slot = 170, 140, (WIDTH - 30) / max(1, len(groups))
    top = max([max(a, b) for _, a, b in groups] + [1])
    col = max(2.0, min(16.0, slot / 2 - 3))
    parts = [_open(WIDTH, height, label)]
    parts.append(f'<line class="kb-axis" x1="24" y1="{base}" x2="{WIDTH}" y2="{base}"/>')
    parts.append(f'<text x="0" y="14">{top}</text><text x="0" y="{base}">0</text>')
    for i, (name, first, second) in enumerate(groups):
        x = 30 + i * slot + slot / 2
        for value, key, dx in ((first, keys[0], -col - 1), (second, keys[1], 1)):
            h = round((base - 14) * value / top)
            parts.append(
                f'<rect class="{_cls(key)}" x="{x + dx:.1f}" y="{base - h}" width="{col:.1f}" height="{h}">'
                f"<title>{escape(name)}: {value} {escape(key)}</title></rect>"
            )
        if len(groups) <= 8 or i % 2 == 0:
            parts.append(f'<text x="{x:.1f}" y="{base + 16}" text-anchor="middle">{escape(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)
