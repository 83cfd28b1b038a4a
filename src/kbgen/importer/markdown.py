"""The Markdown a hand-written report is made of: sections, label lists, checklists, code blocks.

Headings inside fenced code blocks are not headings (a pasted shell session has ``# comments``).
Each :class:`Section` keeps its own lines verbatim, so whatever is not moved into a field is
written back exactly as the person wrote it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kbgen import mdtext
from kbgen.mdtext import is_placeholder

_LABEL = re.compile(
    r"^(?P<indent>[ \t]*)(?:[-*+]|\d+[.)])[ \t]+"
    r"(?:\*\*(?P<bold>[^*\n]{1,60}?)\*\*[ \t]*:?|(?P<plain>[A-Za-z][\w ./()-]{0,40}?)[ \t]*:)"
    r"[ \t]*(?P<value>.*)$"
)
_BULLET = re.compile(r"^(?P<indent>[ \t]*)(?:[-*+]|\d+[.)])[ \t]+(?P<text>.*)$")
_CHECK = re.compile(r"^[ \t]*[-*+][ \t]+\[(?P<mark>[ xX])\][ \t]+(?P<label>.+?)[ \t]*$")

# A run of characters that is UTF-8 read as cp1252: a lead byte's character, then continuations.
_MOJIBAKE_RUN = re.compile(
    "[\u00c2\u00c3\u00e2\u00ef\u00f0][\u0080-\u00bf\u0152\u0153\u0160\u0161\u0178\u017d\u0192\u02c6\u02dc"
    "\u2013\u2014\u2018-\u201e\u2020-\u2022\u2026\u2030\u2039\u203a\u20ac\u2122]+"
)


@dataclass(eq=False)
class Section:
    """A heading and the lines up to the next heading; ``children`` are its sub-sections."""

    level: int
    heading: str
    raw_heading: str
    lines: list[str] = field(default_factory=list)
    children: list[Section] = field(default_factory=list)
    dropped: bool = False
    consumed: bool = False  # its own content now lives in a field
    heading_used: bool = False  # the heading became the title; the content stays

    @property
    def key(self) -> str:
        return re.sub(r"[*_`:]", "", self.heading).strip().lower()

    def own_text(self) -> str:
        return "\n".join(self.lines)

    def drop(self) -> None:
        self.dropped = True
        for child in self.children:
            child.drop()

    def placeholder_only(self) -> bool:
        """True when the section (and its sub-sections) say nothing: empty, or only template
        placeholders (:func:`kbgen.mdtext.unfilled`). A lone top-level heading is the title."""
        if self.level == 1 and not self.own_text().strip() and not self.children:
            return False
        return is_placeholder(self.own_text()) and all(c.placeholder_only() for c in self.children)

    def only_labels(self) -> bool:
        """True when every line is a ``- **Label:** value`` item or a bullet nested under one."""
        return all(_LABEL.match(line) or _BULLET.match(line) for line in self.lines if line.strip())

    def render(self) -> str:
        """The section as it will stand in the body ('' when dropped or moved into fields)."""
        if self.dropped:
            return ""
        parts = [] if (self.consumed or self.heading_used) else [self.raw_heading]
        if not self.consumed:
            content = self.own_text().strip("\n")
            if content:
                parts.append(content if self.heading_used else f"\n{content}")
        return "\n".join(parts)


def parse_sections(body: str) -> tuple[list[Section], str]:
    """Every section in document order (nested ones too), and the text before the first heading."""
    doc = mdtext.read(body.replace("\r\n", "\n").replace("\r", "\n").removesuffix("\n"))
    parts = mdtext.sections(doc)
    made = {
        p.heading.line: Section(p.heading.level, p.heading.title, doc.lines[p.heading.line], p.own_lines(doc))
        for p in parts
    }
    for part in parts:
        made[part.heading.line].children = [made[c.heading.line] for c in part.children]
    first = parts[0].heading.line if parts else len(doc.lines)
    return list(made.values()), "\n".join(doc.lines[:first])


def label_lines(text: str, *, nested: bool = False) -> list[tuple[str, str]]:
    """``(label, value)`` for each ``- **Label:** value`` item; with ``nested``, bullets indented
    under an item are joined onto its value with "; "."""
    found: list[tuple[str, str]] = []
    base: int | None = None
    for line in text.splitlines():
        match = _LABEL.match(line)
        indent = len(line) - len(line.lstrip())
        if match and (base is None or indent <= base):
            base = indent
            label = (match.group("bold") or match.group("plain") or "").strip().rstrip(":").strip()
            found.append((label, match.group("value").strip()))
        elif nested and found and base is not None and indent > base and (bullet := _BULLET.match(line)):
            label, value = found[-1]
            item = bullet.group("text").strip()
            found[-1] = (label, f"{value}; {item}" if value else item)
    return found


def checklist(text: str) -> list[tuple[str, bool]]:
    """``(label, ticked)`` items when the text is nothing but a checklist; otherwise []."""
    items = []
    for line in text.splitlines():
        if not line.strip():
            continue
        match = _CHECK.match(line)
        if match is None:
            return []
        items.append((match.group("label"), match.group("mark") != " "))
    return items


def fenced_blocks(text: str) -> list[str]:
    """The contents of the fenced code blocks in ``text`` (one never closed runs to the end)."""
    doc = mdtext.read(text)
    blocks = ("\n".join(block.content(doc.lines)).strip("\n") for block in doc.code)
    return [b for b in blocks if b.strip()]


def repair_mojibake(text: str) -> tuple[str, list[str]]:
    """Repair UTF-8 read as cp1252 with ftfy; sequences whose bytes were lost become U+FFFD."""
    import ftfy
    import ftfy.bad_codecs  # registers the sloppy-windows-1252 codec

    before = len(_MOJIBAKE_RUN.findall(text))
    if not before:
        return text, []
    # Only the encoding fix: quotes, ligatures, widths and line breaks are the author's.
    config = ftfy.TextFixerConfig(
        unescape_html=False,
        remove_terminal_escapes=False,
        restore_byte_a0=False,  # guessing a lost byte from a space picks the wrong character
        fix_latin_ligatures=False,
        fix_character_width=False,
        uncurl_quotes=False,
        fix_line_breaks=False,
        remove_control_chars=False,
        normalization=None,
    )
    fixed = ftfy.fix_text(text, config)
    lossy = 0

    def decode_what_is_left(match: re.Match[str]) -> str:
        nonlocal lossy
        try:
            data = match.group(0).encode("sloppy-windows-1252")
        except UnicodeEncodeError:
            return match.group(0)
        decoded = data.decode("utf-8", errors="replace")
        lossy += "\ufffd" in decoded
        return decoded

    fixed = _MOJIBAKE_RUN.sub(decode_what_is_left, fixed)
    notes = [f"repaired {before - lossy} mojibake sequence(s)"] if before > lossy else []
    if lossy:
        notes.append(f"{lossy} mojibake sequence(s) had lost bytes and are marked with \ufffd")
    return fixed, notes
