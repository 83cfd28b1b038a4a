"""Markdown as kbgen reads it: code fences, headings, sections and unfilled template text.

`kbgen validate`, `kbgen import` and the site all read a body through :func:`read`, so they agree
on what is code, what is a heading and what a section holds, and all three use one list of
template placeholders.

Fences follow CommonMark: a run of three or more backticks or tildes indented at most three
spaces opens one (a backtick fence's info string holds no backtick); only a run of the same
character, at least as long, with nothing after it but spaces and indented at most three spaces,
closes it; a fence never closed runs to the end of the document. Lines inside list items count
their indentation from the item's content column, so a fence written under ``1. Run:`` is a
fence, and it ends when its item does; lazy continuation lines, empty items and setext
underlines are followed as far as they decide where an item ends. Headings are ATX headings
(``## Title``) outside code, comment blocks and list items. Not followed: block quotes and HTML
blocks other than comments (their lines are text here), and setext headings, which start no
section. tests/test_markdown.py checks the fences and headings against markdown-it-py.

A line-by-line reader in pure Python, not markdown-it-py itself: its block parse is several
times slower, and ``kbgen validate`` reads every bug's body.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

_LIST_ITEM = re.compile(r"(?:[-+*]|\d{1,9}[.)])(?=[ \t]|$)")
_THEMATIC_BREAK = re.compile(r"(?:(?:\*[ \t]*){3,}|(?:-[ \t]*){3,}|(?:_[ \t]*){3,})$")
_FENCE = re.compile(r"(`{3,}|~{3,})(.*)$")
_ATX = re.compile(r"(#{1,6})(?:[ \t](.*))?$")
_ATX_CLOSE = re.compile(r"(?:^|[ \t])#+[ \t]*$")
_SETEXT = re.compile(r"(?:=+|-+)[ \t]*$")
_BLOCK_LEADS = frozenset("-+*0123456789`~#<=")
_MARGIN_LEADS = "`~#<"
#: a fence or heading marker after indentation or a list marker: only list items need following
_INDENTED_MARK = re.compile(
    r"^(?:[ \t]|(?:[-+*]|\d{1,9}[.)])[ \t])[ \t\d.)*+-]*(?:`{3}|~{3}|#)", re.MULTILINE
)
_PLAIN_SKIP = frozenset([*_BLOCK_LEADS, " ", "\t", "\r", ""])


@dataclass(frozen=True)
class Heading:
    """An ATX heading: its line (0-based), level, title, and what follows the ``#`` marks."""

    line: int
    level: int
    title: str
    text: str


@dataclass(frozen=True)
class Code:
    """A fenced code block: lines ``start`` (the opening fence) up to ``end`` (exclusive)."""

    start: int
    end: int
    closed: bool  # False: it ran to the end of the document or of its list item
    fence: str  # the opening run of backticks or tildes
    info: str
    column: int  # where its list item's content starts (0 outside lists)
    indent: int  # columns of indentation of the opening fence beyond ``column``

    def content(self, lines: list[str]) -> list[str]:
        """The code itself, without the fences and the opening fence's indentation."""
        last = self.end - 1 if self.closed else self.end
        return [_dedent(line, self.column, self.indent) for line in lines[self.start + 1 : last]]


@dataclass
class Document:
    """A Markdown text split into lines, with its code blocks and headings."""

    lines: list[str]
    code: list[Code] = field(default_factory=list)
    headings: list[Heading] = field(default_factory=list)


@dataclass
class _Open:
    fence: str
    info: str
    column: int
    indent: int
    start: int


def read(text: str) -> Document:
    """Code blocks and headings of ``text`` (lines split at ``\\n``; a trailing ``\\r`` is ignored)."""
    doc = Document(text.split("\n"))
    fence = _read_margin(doc) if _INDENTED_MARK.search(text) is None else _read_nested(doc)
    if fence is not None:  # runs to the end of the document (a final line break starts no line)
        doc.code.append(_block(fence, len(doc.lines) - (doc.lines[-1] == ""), False))
    return doc


def _read_margin(doc: Document) -> _Open | None:
    """The quick reading, when no fence or heading marker is indented or follows a list marker:
    then no list item holds one, and only lines that start with one (or a comment) count."""
    fence: _Open | None = None
    comment = False
    for number, raw in enumerate(doc.lines):
        if comment:
            comment = "-->" not in raw
        elif raw[:1] in _MARGIN_LEADS and raw:
            line = raw.rstrip("\r")
            if fence is not None:
                if _closes(line, fence.fence):
                    doc.code.append(_block(fence, number + 1, True))
                    fence = None
            elif opened := _opener(line):
                fence = _Open(opened[1], opened[2].strip(), 0, 0, number)
            elif line.startswith("<!--"):
                comment = "-->" not in line
            elif heading := _heading(number, line):
                doc.headings.append(heading)
    return fence


def _read_nested(doc: Document) -> _Open | None:
    """The full reading: list items, lazy lines and indentation followed line by line."""
    reader = _Reader(doc)
    for number, raw in enumerate(doc.lines):
        if raw[:1] not in _PLAIN_SKIP and reader.fence is None and not reader.items and not reader.comment:
            reader.paragraph = True  # text at the margin (most lines): decided at once
            continue
        reader.line(number, raw.rstrip("\r").expandtabs(4) if "\t" in raw else raw.rstrip("\r"))
    return reader.fence


@dataclass
class _Reader:
    """The state of the line-by-line reading."""

    doc: Document
    items: list[int] = field(default_factory=list)  # content columns of open list items, innermost last
    fence: _Open | None = None
    comment: bool = False  # inside an HTML comment block
    paragraph: bool = False  # the line before continues a paragraph
    empty: bool = False  # the line before was an empty list item

    def line(self, number: int, line: str) -> None:
        """Read one line (tabs expanded): record the fences and headings it opens or closes."""
        stripped = line.lstrip(" ")
        width = len(line) - len(stripped)
        if self.fence is not None and not self._in_fence(number, stripped, width):
            return
        if self.comment or not stripped:
            self.comment = self.comment and "-->" not in line
            if self.empty and not stripped:
                self.items.pop()  # a list item starts with at most one blank line
            self.paragraph = self.empty = False
            return
        self.empty = False
        if self.paragraph and self.items and width < self.items[-1] and not _starts_block(stripped):
            return  # a lazy continuation line: still the paragraph of its list item
        while self.items and width < self.items[-1]:
            self.items.pop()
            self.paragraph = False  # it was the paragraph of the item that ended
        if stripped[0] not in _BLOCK_LEADS:  # text (the common case, decided at once)
            self.paragraph = self.paragraph or width - (self.items[-1] if self.items else 0) <= 3
            return
        column, start = _enter_items(line, width, self.items, self.paragraph)
        if start - column > 3:  # indented code, or a paragraph's continuation
            self.paragraph = self.paragraph and start == width
            return
        rest = line[start:]
        underlines, self.paragraph = self.paragraph and start == width, False
        if not rest:
            self.empty = True  # an empty list item
            return
        if opened := _opener(rest):
            self.fence = _Open(opened[1], opened[2].strip(), column, start - column, number)
        elif rest.startswith("<!--") and not self.items:
            self.comment = "-->" not in rest
        elif heading := _heading(number, rest) if rest[:1] == "#" else None:
            if not self.items:
                self.doc.headings.append(heading)
        elif not (_THEMATIC_BREAK.match(rest) or (underlines and _SETEXT.match(rest))):
            self.paragraph = True

    def _in_fence(self, number: int, stripped: str, width: int) -> bool:
        """Read a line inside a fence; True when the line ended its list item (and so the fence)
        and must be read again as a line of its own."""
        fence = self.fence
        assert fence is not None
        if not stripped or width >= fence.column:
            if stripped and width - fence.column <= 3 and _closes(stripped, fence.fence):
                self.doc.code.append(_block(fence, number + 1, True))
                self.fence = None
            return False
        self.doc.code.append(_block(fence, number, False))
        self.fence = None
        return True


def _opener(rest: str) -> re.Match[str] | None:
    """An opening fence; a backtick fence's info string holds no backtick."""
    opened = _FENCE.match(rest) if rest[:1] in ("`", "~") else None
    return None if opened is None or (opened[1][0] == "`" and "`" in opened[2]) else opened


def _starts_block(stripped: str) -> bool:
    """Whether a line (its indentation removed) opens a block: then it is no lazy line of the
    paragraph in a list item (any list marker counts: it starts an item of the outer list)."""
    return bool(
        _opener(stripped)
        or _ATX.match(stripped)
        or _THEMATIC_BREAK.match(stripped)
        or stripped.startswith("<!--")
        or _LIST_ITEM.match(stripped)
    )


def _interrupting_item(line: str, start: int) -> re.Match[str] | None:
    """A list marker that may interrupt a paragraph: not an empty item, an ordered one only from 1."""
    marker = _LIST_ITEM.match(line, start)
    if marker is None or not line[marker.end() :].strip():
        return None
    return marker if marker[0][0] in "-+*" or marker[0][:-1] == "1" else None


def _enter_items(line: str, start: int, items: list[int], paragraph: bool) -> tuple[int, int]:
    """Open the list items whose markers start at ``start``; the content column and where the
    rest of the line starts. After a paragraph line only some markers start an item."""
    column = items[-1] if items else 0
    while start - column <= 3 and not _THEMATIC_BREAK.match(line, start):
        marker = _interrupting_item(line, start) if paragraph else _LIST_ITEM.match(line, start)
        if marker is None:
            break
        paragraph = False
        after = marker.end()
        spaces = len(line) - after - len(line[after:].lstrip(" "))
        if after + spaces == len(line):  # an empty item: its content starts one column on
            items.append(after + 1)
            return after + 1, len(line)
        column = after + (1 if spaces > 4 else spaces)
        items.append(column)
        start = after + spaces
    return column, start


def _closes(stripped: str, fence: str) -> bool:
    run = len(stripped) - len(stripped.lstrip(fence[0]))
    return run >= len(fence) and not stripped[run:].strip(" ")


def _block(fence: _Open, end: int, closed: bool) -> Code:
    return Code(fence.start, end, closed, fence.fence, fence.info, fence.column, fence.indent)


def _heading(number: int, rest: str) -> Heading | None:
    if (match := _ATX.match(rest)) is None:
        return None
    return Heading(number, len(match[1]), _ATX_CLOSE.sub("", match[2] or "").strip(), rest[len(match[1]) :])


def _dedent(line: str, column: int, indent: int) -> str:
    """``line`` less up to ``indent`` spaces after its list item's ``column``."""
    body = line[column:]
    return line[:column] + body[min(indent, len(body) - len(body.lstrip(" "))) :]


# --------------------------------------------------------------------------- sections


@dataclass
class Section:
    """A heading and its own lines: those up to the next heading of any level (``end``)."""

    heading: Heading
    end: int
    children: list[Section] = field(default_factory=list)

    def own_lines(self, doc: Document) -> list[str]:
        return doc.lines[self.heading.line + 1 : self.end]

    def own_text(self, doc: Document) -> str:
        return "\n".join(self.own_lines(doc))


def sections(doc: Document) -> list[Section]:
    """Every section in document order; a deeper heading's section is also its parent's child."""
    found: list[Section] = []
    stack: list[Section] = []
    ends = [h.line for h in doc.headings[1:]] + [len(doc.lines)]
    for heading, end in zip(doc.headings, ends[: len(doc.headings)], strict=True):
        section = Section(heading, end)
        while stack and stack[-1].heading.level >= heading.level:
            stack.pop()
        if stack:
            stack[-1].children.append(section)
        stack.append(section)
        found.append(section)
    return found


def strip_comments(text: str) -> str:
    """``text`` without its HTML comments."""
    return _swap_comments(text, lambda _: "")


def blank_comments(text: str) -> str:
    """``text`` with HTML comments blanked out (newlines kept, so lines still count)."""
    return _swap_comments(text, lambda comment: re.sub(r"[^\n]", " ", comment))


def comment_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each HTML comment in ``text``, found with str.find in linear time (a
    regex tries every unclosed ``<!--`` against the rest of the text: minutes over many)."""
    spans = []
    at = 0
    while (start := text.find("<!--", at)) >= 0 and (end := text.find("-->", start + 4)) >= 0:
        spans.append((start, end + 3))
        at = end + 3
    return spans


def _swap_comments(text: str, swap: Callable[[str], str]) -> str:
    out, at = [], 0
    for start, end in comment_spans(text) if "<!--" in text else []:
        out += [text[at:start], swap(text[start:end])]
        at = end
    return "".join([*out, text[at:]])


# --------------------------------------------------------------------------- placeholders

#: Sentences of report templates that were never filled (seed 002 has all of these). They are
#: placeholders wherever they stand: ``kbgen validate`` reports each one it finds in prose.
SENTENCES = (
    "Not specified", "What should happen.", "What actually happens.", "Brief description of the bug.",
    "Error message here", "Who is working on this bug.", "How to fix the issue.", "How to test the fix.",
    "What is causing the issue", "High/Medium/Low", "TODO", "TBD", "FIXME", "Lorem ipsum",
)  # fmt: skip
#: Template words followed by a number ("1. Step 1"): placeholders as a whole line or list item,
#: since "**Step 1:** check the driver" is real text.
NUMBERED = ("Step", "Related issue", "Issue", "Item")
#: Template text that is a placeholder only when a whole line, list item or label's value says
#: nothing else: a section holding only these (or nothing) is unfilled. ``kbgen import`` drops
#: unfilled sections, ``kbgen validate`` warns about them and the site leaves them out.
FILLERS = (
    "n/a", "where in the code", "what triggers the issue", "who is affected", "any temporary workarounds",
    "if applicable, include screenshots or relevant log entries",
    "this bug report follows the project's standardized format for issue tracking",
)  # fmt: skip
_WHOLE_LINE = frozenset(p.rstrip(".").lower() for p in (*SENTENCES, *FILLERS))
_NUMBERED_LINE = re.compile(rf"^(?:{'|'.join(p.lower() for p in NUMBERED)}) \d+$")
#: a sentence anywhere, or a numbered placeholder as a whole line or list item (as written)
PLACEHOLDER_RE = re.compile(
    "|".join(
        [
            rf"(?<![\w-]){re.escape(p)}(?![\w-])" if p[-1].isalnum() else rf"(?<![\w-]){re.escape(p)}"
            for p in SENTENCES
        ]
        + [rf"(?m:^[ \t]*(?:[-*+][ \t]+|\d+[.)][ \t]+)?{p} \d+[ \t]*$)" for p in NUMBERED]
    )
)
_EMPTY_LINE = re.compile(r"\s*(?:-{3,}|\*{3,}|_{3,}|`{3,}\w*|~{3,}\w*)?\s*")


def might_hold_placeholder(text: str) -> bool:
    """A cheap screen (substring search runs at C speed) before :data:`PLACEHOLDER_RE`."""
    return any(p in text for p in SENTENCES) or any(p + " " in text for p in NUMBERED)


_ITEM_MARK = re.compile(r"^(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
_BOLD_LABEL = re.compile(r"^\*\*[^*]{1,60}\*\*\s*:?\s*")
_EMPHASIS = re.compile(r"[*_`]")


def _normalise(line: str) -> str:
    """A line as a placeholder is looked up: no list marker, checkbox, bold label or emphasis."""
    text = _BOLD_LABEL.sub("", _ITEM_MARK.sub("", line.strip()))
    return _EMPHASIS.sub("", text).strip().rstrip(".").strip().lower()


def unfilled(text: str) -> str | None:
    """What ``text`` says when it says nothing: ``""`` when every line is blank, a rule, a bare
    fence or an HTML comment, the first template line when the others are template text (a
    sentence, a filler or a numbered placeholder, in any case); None when it says something."""
    first = None
    for line in strip_comments(text).splitlines():
        if _EMPTY_LINE.fullmatch(line):
            continue
        norm = _normalise(line)
        if not norm:
            continue
        if norm not in _WHOLE_LINE and not _NUMBERED_LINE.match(norm):
            return None
        first = first or line.strip()
    return first or ""


def is_placeholder(text: str) -> bool:
    """True when ``text`` says nothing (see :func:`unfilled`)."""
    return unfilled(text) is not None
