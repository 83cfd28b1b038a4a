"""Put text people wrote into generated Markdown so that it stays text.

Titles, error messages and tracebacks are data: :func:`inline` escapes everything Markdown or
HTML would interpret, :func:`fence` wraps a block in a code fence no backtick run inside can
close. Bodies people wrote are Markdown and stay Markdown: :func:`body` keeps the formatting but
drops HTML comments, turns raw HTML into visible text and disarms script links.
"""

from __future__ import annotations

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
    # a code span: the same run of backticks closes it, never across a blank line
    r"|(?P<code>(?P<ticks>`+)(?P<inner>(?:(?!\n[ \t]*\n)[\s\S])*?)(?<!`)(?P=ticks)(?!`))"
    r"|(?P<tick>`+)"  # backticks that close nothing
    r"|(?P<comment><!--[\s\S]*?-->)"
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
# A URL in angle brackets written without them: what would end it or make it a tag, encoded.
_URL_SAFE = "/:?#@!$&*+,;=%~-._[]"


def safe_target(dest: str) -> bool:
    """True when a link target is relative or uses a scheme that cannot run code."""
    # Browsers decode entities and ignore whitespace and control characters inside a scheme.
    plain = _CONTROL_RE.sub("", html.unescape(dest)).lower()
    scheme = _SCHEME_RE.match(plain)
    return scheme is None or scheme.group(1) in _SAFE_SCHEMES


def _swap(m: re.Match[str]) -> str:
    kind = {"adest": "alink", "dest": "link"}.get(str(m.lastgroup), m.lastgroup)
    text = m.group(0)
    if kind in ("esc", "auto"):
        return text if text not in ("\\{", "\\}") else f"&#{ord(text[1])};"
    if kind == "code":
        inner = m.group("inner")
        if not _CODE_PLAIN_RE.search(inner):
            return text
        # Written as HTML, so no pairing of backticks and no block break makes its text markup.
        return "<code>" + " ".join(inner.split()).translate(_CODE_TABLE) + "</code>"
    if kind == "tick":
        return "\\`" * len(text)
    if kind == "comment":
        return ""
    if kind == "alink":
        dest, lead = m.group("adest"), m.group("alink")[:-1]
        if "[" not in _paragraph_before(m):
            return lead + "&lt;" + _prose(dest) + ">"  # no link can end here: show it as written
        if not safe_target(dest):
            return lead + "about:blank"
        return lead + urllib.parse.quote(dest.strip(), safe=_URL_SAFE)  # the same link, unbracketed
    if kind == "link":
        dest = m.group("dest")
        return m.group("link") + (dest if safe_target(dest) else "about:blank")
    return {"ref": "\\[", "bang": "\\!", "lt": "&lt;", "brace": "&#123;"}[str(kind)]


def _paragraph_before(m: re.Match[str]) -> str:
    """The text of ``m``'s paragraph before it: a link's "[" would be there."""
    before = m.string[: m.start()]
    return before[before.rfind("\n\n") + 1 :]


# A line the site's engine would take for the opening of a fence (superfences reads them inside
# quotes too). Prose holds none as written (a fence there is code to kbgen), but a comment taken
# out can bring one to the start of its line, and the engine would then pair it with the fence of
# kbgen's next code block and show that block's code as prose.
_FENCE_LINE_RE = re.compile(r"^([ \t>]*)([`~])(?=\2\2)", re.M)


def _prose(text: str) -> str:
    made = _PROSE_RE.sub(_swap, text)
    return _FENCE_LINE_RE.sub(lambda m: f"{m.group(1)}&#{ord(m.group(2))};", made)


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
