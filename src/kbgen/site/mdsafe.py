"""Put text people wrote into generated Markdown so that it stays text.

Titles, error messages and tracebacks are data: :func:`inline` escapes everything Markdown or
HTML would interpret, :func:`fence` wraps a block in a code fence no backtick run inside can
close. Bodies people wrote are Markdown and stay Markdown: :func:`body` keeps the formatting but
drops HTML comments, turns raw HTML into visible text and disarms script links.
"""

from __future__ import annotations

import html
import re

from markupsafe import Markup

# Characters that start Markdown or HTML constructs. HTML-significant ones become entities (which
# every Markdown engine passes through); the rest get a backslash, which Python-Markdown honours.
_INLINE = {
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    "|": "&#124;",  # a table cell separator even inside text
    "~": "&#126;",
    "^": "&#94;",
    "\\": "\\\\",
    "`": "\\`",
    "*": "\\*",
    "_": "\\_",
    "[": "\\[",
    "]": "\\]",
    "{": "\\{",  # attribute lists: `{ onclick=... }` must never reach attr_list
    "}": "\\}",
    "#": "\\#",
    "!": "\\!",
}
_INLINE_TABLE = str.maketrans(_INLINE)
_WS_RE = re.compile(r"\s+")


def inline(text: object) -> Markup:
    """``text`` as one line of literal Markdown: no markup, no HTML, no line breaks."""
    flat = " ".join(str(text).split())  # called for every value on every page: str methods only
    return Markup(flat.translate(_INLINE_TABLE))


def longest_run(text: str, char: str = "`") -> int:
    """Length of the longest run of ``char`` in ``text``."""
    runs = re.findall(re.escape(char) + "+", text)
    return max((len(r) for r in runs), default=0)


def fence(text: object, lang: str = "text", indent: int = 0) -> Markup:
    """``text`` in a fenced code block whose fence is longer than any backtick run inside."""
    raw = str(text).replace("\r\n", "\n").replace("\r", "\n").rstrip("\n")
    ticks = "`" * max(3, longest_run(raw) + 1)
    pad = " " * indent  # blank lines too: inside a list or admonition they must stay in it
    lines = [f"{ticks}{lang}", *raw.split("\n"), ticks]
    return Markup("\n".join(pad + line for line in lines))


def code(text: object) -> Markup:
    """``text`` as an inline code span (one line), delimited so nothing inside can end it."""
    flat = " ".join(str(text).split())
    ticks = "`" * (longest_run(flat) + 1) if "`" in flat else "`"
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return Markup(f"{ticks}{pad}{flat}{pad}{ticks}")


# --------------------------------------------------------------------------- bodies

_FENCE_OPEN_RE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})")
# In prose: inline code spans (kept), HTML comments (dropped), then what must be disarmed.
_PROSE_RE = re.compile(
    r"(?P<code>(?P<ticks>`+)(?:(?!\n[ \t]*\n)[\s\S])*?(?<!`)(?P=ticks)(?!`))"
    r"|(?P<comment><!--[\s\S]*?-->)"
    r"|(?P<link>\]\(\s*<?)(?P<dest>(?:[^()\"'\n>]|\([^()\n]*\))*)"
    r"|(?P<ref>^[ ]{0,3}\[[^\]\n]+\]:[ \t]*<?)(?P<rdest>[^\s>]*)"
    r"|(?P<auto><(?:https?|ftps?|mailto):[^\s<>]*>)"
    r"|(?P<lt><)"
    r"|(?P<brace>\{)",
    re.MULTILINE,
)
_SAFE_SCHEMES = frozenset({"http", "https", "mailto", "ftp", "ftps"})
_SCHEME_RE = re.compile(r"^([a-z][a-z0-9+.-]*):")
_CONTROL_RE = re.compile(r"[\x00-\x20\x7f]+")


def safe_target(dest: str) -> bool:
    """True when a link target is relative or uses a scheme that cannot run code."""
    # Browsers decode entities and ignore whitespace and control characters inside a scheme.
    plain = _CONTROL_RE.sub("", html.unescape(dest)).lower()
    scheme = _SCHEME_RE.match(plain)
    return scheme is None or scheme.group(1) in _SAFE_SCHEMES


def _prose(text: str) -> str:
    def swap(m: re.Match[str]) -> str:
        if m.group("code") or m.group("auto"):
            return m.group(0)
        if m.group("comment"):
            return ""
        for lead, target in (("link", "dest"), ("ref", "rdest")):
            if m.group(lead):
                dest = m.group(target)
                return m.group(lead) + (dest if safe_target(dest) else "about:blank")
        return "&lt;" if m.group("lt") else "&#123;"

    return _PROSE_RE.sub(swap, text)


def split_fences(text: str) -> list[tuple[bool, str]]:
    """``text`` cut into ``(is_code, chunk)`` pieces along fenced code blocks."""
    pieces: list[tuple[bool, str]] = []
    prose: list[str] = []
    block: list[str] = []
    closing: re.Pattern[str] | None = None
    for line in text.splitlines(keepends=True):
        if closing is None:
            opened = _FENCE_OPEN_RE.match(line)
            if opened and not (opened["fence"][0] == "`" and "`" in line[opened.end() :]):
                char, size = opened["fence"][0], len(opened["fence"])
                closing = re.compile(rf"^\s*{re.escape(char)}{{{size},}}\s*$")
                pieces.append((False, "".join(prose)))
                prose, block = [], [line]
            else:
                prose.append(line)
        else:
            block.append(line)
            if closing.match(line):
                pieces.append((True, "".join(block)))
                block, closing = [], None
    if block:  # an unclosed fence runs to the end, as Markdown reads it
        pieces.append((True, "".join(block)))
    pieces.append((False, "".join(prose)))
    return [p for p in pieces if p[1]]


_BLOCK_START_RE = re.compile(r"^(?:[#>+*-]|\d+[.)])")
_URL_RE = re.compile(r"https?://[^\s<>\"'`]+")


def prose(text: object) -> Markup:
    """A short Markdown field (summary, symptom, note) as one line: formatting kept, HTML shown as text."""
    flat = _WS_RE.sub(" ", _prose(str(text))).strip()
    # At the start of a list item or cell a leading "#", "-" or "1." would open a new block.
    return Markup(_BLOCK_START_RE.sub(lambda m: m.group(0)[:-1] + "\\" + m.group(0)[-1], flat, count=1))


def link(url: object) -> Markup:
    """A web address as an automatic link when it is one; anything else as literal text."""
    text = str(url).strip()
    return Markup(f"<{text}>") if _URL_RE.fullmatch(text) else inline(text)


_HEADING_RE = re.compile(r"^(#{1,6})(?=[ \t]|$)", re.MULTILINE)


def body(text: str, top: int = 3) -> Markup:
    """A person's Markdown, kept as Markdown but with raw HTML shown as text and comments dropped.

    Headings move down so the shallowest one is level ``top``: the body sits under a section of
    the generated page and must not compete with its title.
    """
    lines: list[tuple[bool, str]] = []
    for is_code, chunk in split_fences(text):
        lines.extend((is_code, line) for line in (chunk if is_code else _prose(chunk)).splitlines())
    levels = [len(h[1]) for c, line in lines if not c and (h := _HEADING_RE.match(line))]
    shift = max(0, top - min(levels)) if levels else 0
    kept: list[str] = []
    for index, (is_code, line) in enumerate(lines):
        heading = None if is_code else _HEADING_RE.match(line)
        if heading is None:
            kept.append(line)
        elif not _empty_section(lines, index, len(heading[1])):
            kept.append("#" * min(6, len(heading[1]) + shift) + line[heading.end() :])
    # Guidance comments of an unfilled template leave runs of blank lines behind.
    return Markup(re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip("\n"))


def _empty_section(lines: list[tuple[bool, str]], start: int, level: int) -> bool:
    """True when the heading at ``start`` has nothing under it but blank lines."""
    for is_code, line in lines[start + 1 :]:
        heading = None if is_code else _HEADING_RE.match(line)
        if heading is not None and len(heading[1]) <= level:
            return True
        if heading is not None or line.strip():
            return False
    return True
