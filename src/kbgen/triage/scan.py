"""Stream a log in blocks of bytes and find the lines each signature matches.

The log is never read whole: blocks of a few MiB are screened with plain substring searches
(each signature's required keywords, lower-cased, against the lower-cased block) and only the
lines around a keyword are decoded and handed to the regex. Lines are cut to ``MAX_LINE``
characters around the keyword, so neither a single 1 GB line nor a hostile pattern can make a
regex run long. ANSI colour codes are removed and a carriage return ends a segment, so progress
bars redrawn in place read as the text that was last drawn.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from kbgen.errors import KbgenError

BLOCK = 4 * 1024 * 1024
#: characters of a line a regex sees, centred on the keyword that selected it
MAX_LINE = 2000
#: a partial line longer than this is cut rather than carried into the next block
MAX_CARRY = 64 * 1024
#: matching lines remembered per signature (for display and excerpts); more are only counted
KEEP_LINES = 5
#: lines counted per signature; beyond this a signature stops being searched
MAX_COUNT = 200
CONTEXT_BEFORE = 40
CONTEXT_AFTER = 8

_ANSI = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_BOX = "│┃║╎┆"


@dataclass(frozen=True)
class Signature:
    """One compiled signature of one error type."""

    error: str
    index: int
    regex: re.Pattern[str]
    weight: float
    keywords: tuple[bytes, ...] | None  # lower-case; a line needs one of them; None: test all


@dataclass
class Hit:
    """A line a signature matched: 1-based line number and the cleaned text."""

    number: int
    text: str


@dataclass
class SignatureHits:
    signature: Signature
    count: int = 0
    lines: list[Hit] = field(default_factory=list)
    #: cleaned lines before and after the first hit, for excerpts
    before: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)


@dataclass
class ScanResult:
    hits: dict[tuple[str, int], SignatureHits]
    lines: int
    size: int
    tail: list[str]  # the last lines of the log, cleaned


def whole_words(raw: bytes, cut_start: bool, cut_end: bool) -> bytes:
    """A piece of a line without the words a cut fell into: secrets are redacted only later, and a
    token cut in two would lose the prefix that gives it away."""
    if cut_start:
        raw = raw[len(raw.split(None, 1)[0]) :] if raw[:1].strip() else raw
    if cut_end and raw[-1:].strip():
        raw = raw[: len(raw) - len(raw.rsplit(None, 1)[-1])]
    return raw


def clean_line(raw: bytes) -> str:
    """Decode one line, keep the last carriage-return segment, drop a box's side borders."""
    text = raw.decode("utf-8", errors="replace")
    if "\r" in text:
        segments = [s for s in text.split("\r") if s.strip()]
        text = segments[-1] if segments else ""
    text = text.rstrip()
    inner = text.lstrip()
    if inner and inner[0] in _BOX:  # a rich traceback row: "│ text     │"
        inner = inner[1:].rstrip()
        if inner[-1:] in _BOX:
            inner = inner[:-1].rstrip()
        text = inner[1:] if inner.startswith(" ") else inner
    return text


def open_log(source: str) -> tuple[BinaryIO, str]:
    """Open a log file, or stdin for ``-``; user errors become KbgenError."""
    if source == "-":
        return sys.stdin.buffer, "<stdin>"
    path = Path(source)
    if path.is_dir():
        raise KbgenError(f"{source}: is a folder, not a log file")
    try:
        return path.open("rb"), source
    except FileNotFoundError:
        raise KbgenError(f"{source}: no such file", hint="pass a log file, or - to read stdin") from None
    except OSError as exc:
        raise KbgenError(f"{source}: cannot read: {exc.strerror or exc}") from None


def iter_blocks(stream: BinaryIO, name: str) -> Iterator[bytes]:
    """Blocks that each end at a line break (or are cut at MAX_CARRY within a huge line)."""
    carry = b""
    first = True
    while True:
        try:
            data = stream.read(BLOCK)
        except OSError as exc:
            raise KbgenError(f"{name}: cannot read: {exc.strerror or exc}") from None
        if first:
            _refuse_binary(data, name)
            first = False
        if not data:
            break
        data = carry + data
        cut = data.rfind(b"\n") + 1
        if len(data) - cut > MAX_CARRY:  # a huge line: cut it rather than carry it on
            cut = len(data)
        carry = data[cut:]
        if cut:
            yield data[:cut]
    if carry:
        yield carry


def _refuse_binary(head: bytes, name: str) -> None:
    if b"\x00" in head[:8192]:
        hint = "if it is UTF-16 text, convert it first: iconv -f UTF-16 -t UTF-8"
        raise KbgenError(f"{name}: looks like a binary file (NUL bytes near the start), not a log", hint=hint)


class Scanner:
    """Feeds blocks through the keyword screen and the signatures; collects hits."""

    def __init__(self, signatures: list[Signature]) -> None:
        self.hits = {(s.error, s.index): SignatureHits(s) for s in signatures}
        self.by_keyword: dict[bytes, list[SignatureHits]] = {}
        self.unscreened: list[SignatureHits] = []
        for entry in self.hits.values():
            if entry.signature.keywords is None:
                self.unscreened.append(entry)
            for keyword in entry.signature.keywords or ():
                self.by_keyword.setdefault(keyword, []).append(entry)
        self.line = 1  # number of the first line of the next block
        self.size = 0
        self.blank = True  # nothing but whitespace so far
        self.ends_open = False  # the last block did not end with a line break
        self.previous_tail: list[str] = []

    def feed(self, block: bytes) -> None:
        """Scan one block (which ends at a line break or a cut)."""
        self.size += len(block)
        if self.blank and block.strip():
            self.blank = False
        self.ends_open = not block.endswith(b"\n")
        if b"\x1b" in block:
            block = _ANSI.sub(b"", block)
        candidates = self._candidates(block)
        if self.unscreened:
            candidates.extend(self._every_line(block))
        self._match(block, candidates)
        self.previous_tail = [clean_line(x) for x in block[-8192:].split(b"\n")[-CONTEXT_BEFORE:]]
        self.line += block.count(b"\n")

    def _candidates(self, block: bytes) -> list[tuple[int, SignatureHits]]:
        lowered = block.lower()
        found: list[tuple[int, SignatureHits]] = []
        for keyword, entries in self.by_keyword.items():
            waiting = [e for e in entries if e.count < MAX_COUNT]
            if not waiting:
                continue
            pos = lowered.find(keyword)
            taken = 0
            while pos >= 0 and taken < MAX_COUNT * 4:
                found.extend((pos, e) for e in waiting)
                taken += 1
                end = lowered.find(b"\n", pos)
                if end < 0:
                    break
                pos = lowered.find(keyword, end)
        return found

    def _every_line(self, block: bytes) -> list[tuple[int, SignatureHits]]:
        waiting = [e for e in self.unscreened if e.count < MAX_COUNT]
        found: list[tuple[int, SignatureHits]] = []
        if not waiting:
            return found
        start = 0
        for piece in block.split(b"\n"):
            if piece.strip():
                found.extend((start, e) for e in waiting)
            start += len(piece) + 1
        return found

    def _match(self, block: bytes, candidates: list[tuple[int, SignatureHits]]) -> None:
        candidates.sort(key=lambda item: item[0])
        counted_to, line = 0, self.line
        seen: set[tuple[int, int]] = set()
        for pos, entry in candidates:
            line += block.count(b"\n", counted_to, pos)
            counted_to = pos
            line_start = block.rfind(b"\n", 0, pos) + 1
            start = max(line_start, pos - MAX_LINE // 2)
            line_end = block.find(b"\n", pos)
            line_end = len(block) if line_end < 0 else line_end
            end = min(line_end, start + MAX_LINE)
            key = (id(entry), start)
            if key in seen or entry.count >= MAX_COUNT:
                continue
            seen.add(key)
            text = clean_line(whole_words(block[start:end], start > line_start, end < line_end))
            if not entry.signature.regex.search(text):
                continue
            entry.count += 1
            if len(entry.lines) < KEEP_LINES:
                entry.lines.append(Hit(line, text))
            if entry.count == 1:
                entry.before, entry.after = self._context(block, line_start, line_end)

    def _context(self, block: bytes, start: int, end: int) -> tuple[list[str], list[str]]:
        head = block[max(0, start - 16384) : start].split(b"\n")[:-1][-CONTEXT_BEFORE:]
        before = [clean_line(whole_words(x[:MAX_LINE], False, len(x) > MAX_LINE)) for x in head]
        if len(before) < CONTEXT_BEFORE and start - 16384 <= 0:
            before = self.previous_tail[-(CONTEXT_BEFORE - len(before)) :] + before
        tail = block[end + 1 : end + 1 + 16384].split(b"\n")[:CONTEXT_AFTER]
        return before, [clean_line(whole_words(x[:MAX_LINE], False, len(x) > MAX_LINE)) for x in tail]


def scan_log(source: str, signatures: list[Signature]) -> ScanResult:
    """Stream ``source`` (a path or ``-``) through the signatures."""
    stream, name = open_log(source)
    try:
        return scan_stream(stream, name, signatures)
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


def scan_stream(stream: BinaryIO, name: str, signatures: list[Signature]) -> ScanResult:
    """Scan an open binary stream; ``name`` is used in messages."""
    scanner = Scanner(signatures)
    for block in iter_blocks(stream, name):
        scanner.feed(block)
    if scanner.blank:
        raise KbgenError(f"{name}: the log is empty", hint="pass the file the failing command wrote to")
    lines = scanner.line - 1 + (1 if scanner.ends_open else 0)
    return ScanResult(scanner.hits, lines, scanner.size, scanner.previous_tail)
