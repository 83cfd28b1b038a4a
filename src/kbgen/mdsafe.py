"""Put text people wrote into generated Markdown so that it stays text.

Titles, error messages and tracebacks are data: :func:`inline` escapes everything Markdown or
HTML would interpret, :func:`fence` wraps a block in a code fence no backtick run inside can
close. Bodies people wrote are Markdown and stay Markdown: :func:`body` keeps the formatting but
drops HTML comments, turns raw HTML and reference definitions into visible text and images into
links, and disarms script links. What it writes is safe without a sanitizer (``kbgen
build-pages`` output is built by engines without kbgen's plugin) for an engine that reads
Markdown as Python-Markdown with the site's extensions does.
"""

from __future__ import annotations

import bisect
import html
import re
import urllib.parse

from markupsafe import Markup

from kbgen import mdtext

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


def escape_html(value: object) -> Markup:
    """``value`` as text inside an HTML element (a raw-HTML table cell, which Markdown leaves alone)."""
    return Markup(html.escape("" if value is None else str(getattr(value, "value", value)), quote=True))


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

# In prose, what Markdown would make markup of, each rewritten by ``_swap``. The written Markdown
# must be safe for any engine that reads it as Python-Markdown does, sanitizer or not (`kbgen
# build-pages`): the only ``<`` left raw is the one of a web autolink, every link destination is
# checked, and what is code to kbgen is code to the engine whichever way it pairs backticks.
_PROSE_RE = re.compile(
    # a backslash escape Python-Markdown honours: kept, so the character after it stays literal
    r"(?P<esc>\\[\\`*_{}\[\]()>#+\-.!])"
    r"|(?P<tick>`+)"  # backticks outside code spans (_code_spans): they close nothing
    # a destination in angle brackets ([text](<url>)): without a "[" before it, it is a tag
    r"|(?P<alink>\]\([ \t]*\n?[ \t]*<)(?P<adest>[^<>\n]*)>"
    # a destination; Python-Markdown reads one across a line break ("java\nscript:"). It stops
    # before what another rule must see: "](" of the next link, "![" of an image, "{"
    r"|(?P<link>\]\(\s*)"
    r"(?P<dest>(?:[^()\[\]\"'<>`\n\\!{]|\\[^`<\n]|\n(?=[ \t]*\S)|\([^()\[\]\"'<>`\n!{]*\))*)"
    r"|(?P<ref>\[)(?=[^\[\]]*\]:)"  # the label of a reference definition: `[r]: url`
    r"|(?P<bang>!)(?=\[)"  # an image: it would load from wherever the text says, for every reader
    r"|(?P<auto><(?:https?|ftps?)://[^\s<>`\"'\\]*>)"
    r"|(?P<lt><)"
    r"|(?P<brace>\{)",  # attribute lists: `{ onclick=... }` must never reach attr_list
)
_SAFE_SCHEMES = frozenset({"http", "https", "mailto", "ftp", "ftps"})
_SCHEME_RE = re.compile(r"^([a-z][a-z0-9+.-]*):")
_CONTROL_RE = re.compile(r"[\x00-\x20\x7f]+")
# Inside a code span kbgen writes as HTML: every character HTML or Markdown would read, as an entity.
_CODE_TABLE = str.maketrans({ch: f"&#{ord(ch)};" for ch in "&<>\"'`*_\\[]{}|~^:!#="})
# A code span whose text none of these is in stays Markdown; it is inert however it is paired.
_CODE_PLAIN_RE = re.compile(r"[<>\[\]{}\n]")
_TICKS_RE = re.compile(r"`+")
_BLANK_LINE_RE = re.compile(r"\n[ \t]*\n")
# A URL in angle brackets written without them: what would end it or make it a tag, encoded.
_URL_SAFE = "/:?#@!$&*+,;=%~-._[]"


def safe_target(dest: str) -> bool:
    """True when a link target is relative or uses a scheme that cannot run code."""
    # Browsers decode entities and ignore whitespace and control characters inside a scheme.
    plain = _CONTROL_RE.sub("", html.unescape(dest)).lower()
    scheme = _SCHEME_RE.match(plain)
    return scheme is None or scheme.group(1) in _SAFE_SCHEMES


def _code_spans(text: str) -> list[tuple[int, int, int]]:
    """``(start, end, ticks)`` of each code span in ``text``, as CommonMark pairs them: a run of
    backticks not escaped by a backslash opens one, the next run of the same length closes it,
    never across a blank line. One pass with an index per run length: no regex backtracking,
    which took minutes over a few kilobytes of backtick runs of different lengths."""
    runs = [(m.start(), len(m.group())) for m in _TICKS_RE.finditer(text)]
    by_length: dict[int, list[int]] = {}
    for number, (_, length) in enumerate(runs):
        by_length.setdefault(length, []).append(number)
    blanks = [m.start() for m in _BLANK_LINE_RE.finditer(text)]
    spans = []
    number = 0
    while number < len(runs):
        start, length = runs[number]
        number += 1
        slashes = 0
        while slashes < start and text[start - slashes - 1] == "\\":
            slashes += 1
        if slashes % 2:  # the first backtick is escaped: the rest of the run may open one
            start, length = start + 1, length - 1
        same = by_length.get(length, [])
        at = bisect.bisect_left(same, number)
        if length == 0 or at == len(same):
            continue
        closer = runs[same[at]][0]
        blank = bisect.bisect_left(blanks, start)
        if blank < len(blanks) and blanks[blank] < closer:
            continue
        spans.append((start, closer + length, length))
        number = same[at] + 1
    return spans


def _code_span(span: str, ticks: int) -> str:
    inner = span[ticks:-ticks]
    if not _CODE_PLAIN_RE.search(inner):
        return span
    # Written as HTML, so no pairing of backticks and no block break makes its text markup.
    return "<code>" + " ".join(inner.split()).translate(_CODE_TABLE) + "</code>"


def _swap(m: re.Match[str]) -> str:
    kind = {"adest": "alink", "dest": "link"}.get(str(m.lastgroup), m.lastgroup)
    text = m.group(0)
    if kind in ("esc", "auto"):
        return text if text not in ("\\{", "\\}") else f"&#{ord(text[1])};"
    if kind == "tick":
        return "\\`" * len(text)
    if kind == "alink":
        dest, lead = m.group("adest"), m.group("alink")[:-1]
        if not _link_may_end(m):
            return lead + "&lt;" + _prose(dest) + ">"  # no link can end here: show it as written
        if not safe_target(dest):
            return lead + "about:blank"
        return lead + urllib.parse.quote(dest.strip(), safe=_URL_SAFE)  # the same link, unbracketed
    if kind == "link":
        dest = m.group("dest")
        return m.group("link") + (dest if safe_target(dest) else "about:blank")
    return {"ref": "\\[", "bang": "\\!", "lt": "&lt;", "brace": "&#123;"}[str(kind)]


def _link_may_end(m: re.Match[str]) -> bool:
    """Whether ``m`` may end a link: its paragraph has a "[" before it."""
    return m.string.find("[", m.string.rfind("\n\n", 0, m.start()) + 1, m.start()) >= 0


# A line the site's engine would take for the opening of a fence (superfences reads them inside
# quotes too). Prose holds none as written (a fence there is code to kbgen), but a comment taken
# out can bring one to the start of its line, and the engine would then pair it with the fence of
# kbgen's next code block and show that block's code as prose.
_FENCE_LINE_RE = re.compile(r"^([ \t>]*)([`~])(?=\2\2)", re.M)


def _comments(text: str) -> list[tuple[int, int, int]]:
    """``(start, end, 0)`` of each HTML comment in ``text``."""
    return [(start, end, 0) for start, end in mdtext.comment_spans(text)]


def _prose(text: str) -> str:
    made: list[str] = []
    at = 0
    # Code spans are kept (or written as HTML), comments dropped; where one starts inside the
    # other, the first to start wins. The rest is read by _PROSE_RE in place, so that a link's
    # "[" before a code span is still seen.
    for start, end, ticks in [*sorted(_code_spans(text) + _comments(text)), (len(text), len(text), 0)]:
        if start < at:
            continue
        for m in _PROSE_RE.finditer(text, at, start):
            made += [text[at : m.start()], _swap(m)]
            at = m.end()
        made.append(text[at:start])
        if ticks:
            made.append(_code_span(text[start:end], ticks))
        at = end
    return _FENCE_LINE_RE.sub(lambda m: f"{m.group(1)}&#{ord(m.group(2))};", "".join(made))


def split_fences(text: str) -> list[tuple[bool, str]]:
    """``text`` cut into ``(is_code, chunk)`` pieces along fenced code blocks, as
    :func:`kbgen.mdtext.read` finds them (the chunks join back into ``text``)."""
    doc = mdtext.read(text)
    return [(block is not None, text[start:end]) for block, start, end in _pieces(doc)]


def _pieces(doc: mdtext.Document) -> list[tuple[mdtext.Code | None, int, int]]:
    """``(code block or None, start, end)``: character offsets of the prose and code pieces."""
    offsets = [0]
    for line in doc.lines:
        offsets.append(offsets[-1] + len(line) + 1)
    offsets[-1] -= 1  # the last line has no newline after it
    pieces: list[tuple[mdtext.Code | None, int, int]] = []
    at = 0
    for block in doc.code:
        pieces.append((None, offsets[at], offsets[block.start]))
        pieces.append((block, offsets[block.start], offsets[block.end]))
        at = block.end
    pieces.append((None, offsets[at], offsets[-1]))
    return [p for p in pieces if p[2] > p[1]]


_INDENTED_CODE_RE = re.compile(r"(?: {4}| {0,3}\t)[ \t]*\S")
_QUOTED_RE = re.compile(r"^(?: {0,3}> ?)+")
_LEADING_BLANK_RE = re.compile(r"\A(?:[ \t]*\n)+")


def _gap(block: mdtext.Code, lines: list[str]) -> str:
    """A blank line to put before ``block`` where the site's engine (superfences) might take its
    fence for the rest of the text above (indented code, in a quote or not) and its code for
    prose, raw HTML and all. In CommonMark the blank line changes nothing; in a list item it
    makes the list loose, so there it goes only after indented lines."""
    at = block.start - 1
    if at < 0 or not lines[at].strip():
        return ""
    if block.column == 0:
        return "\n"
    while at >= 0 and lines[at].strip():
        if _INDENTED_CODE_RE.match(_QUOTED_RE.sub("", lines[at][block.column :])):
            return "\n"
        at -= 1
    return ""


_LANG_RE = re.compile(r"\.?[\w#.+-]+(?=[ \t]|$)")


def _code(block: mdtext.Code, lines: list[str]) -> str:
    """A code block written so that the site's Markdown engine reads it as CommonMark does: the
    opening fence at its list item's column with a plain language name (or none), the same fence
    to close it, also when the person never closed it (else the engine renders the code as
    prose, raw HTML and all)."""
    lang = _LANG_RE.match(block.info)
    opening = " " * block.column + block.fence
    return "\n".join([opening + (lang[0] if lang else ""), *block.content(lines), opening])


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


def body(text: str, top: int = 3) -> Markup:
    """A person's Markdown, kept as Markdown but with raw HTML shown as text and comments dropped.

    Headings move down so the shallowest one is level ``top``: the body sits under a section of
    the generated page and must not compete with its title. Sections that say nothing (empty, or
    only template text: :func:`kbgen.mdtext.unfilled`) are left out.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    doc = mdtext.read(text)
    made = []
    for block, start, end in _pieces(doc):
        chunk = text[start:end]
        if block is None:
            made.append(_prose(chunk))
        else:  # a block that ran to its list item's end is followed by a line break
            made.append(_gap(block, doc.lines) + _code(block, doc.lines))
            made.append("\n" if chunk.endswith("\n") else "")
    doc = mdtext.read("".join(made))
    levels = [h.level for h in doc.headings]
    shift = max(0, top - min(levels)) if levels else 0
    lines = doc.lines
    for section in mdtext.sections(doc):
        heading = section.heading
        if not section.children and mdtext.is_placeholder(section.own_text(doc)):
            lines[heading.line : section.end] = [""] * (section.end - heading.line)
        else:
            lines[heading.line] = "#" * min(6, heading.level + shift) + heading.text
    # Guidance comments of an unfilled template leave runs of blank lines behind.
    joined = re.sub(r"\n{3,}", "\n\n", "\n".join(lines))
    # Blank lines around it go, spaces or tabs and all: a line of them first in a page is
    # indented code to the site's engine, which then takes a fence below it for more of it.
    return Markup(_LEADING_BLANK_RE.sub("", joined).rstrip())
