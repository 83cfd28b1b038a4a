"""Stream a log in blocks of bytes and find the lines each signature matches.

The log is never read whole. Each block of a few MiB goes through one ``re2.Set`` pass (see
:mod:`kbgen.triage.signatures`); a block no signature can match costs that pass and a line
count. In a block that can match, each candidate signature's screen finds its lines, and only
those lines are decoded, cleaned and checked with the exact pattern. RE2 runs in linear time,
so no pattern and no line (a 1 GB line is cut into pieces at MAX_CARRY) can make a scan hang.
ANSI colour codes are removed and a carriage return ends a segment, so progress bars redrawn in
place read as the text that was last drawn.
"""

from __future__ import annotations

import itertools
import re
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from kbgen.errors import KbgenError
from kbgen.triage.signatures import CompiledSignature, Screen

BLOCK = 8 * 1024 * 1024
#: characters of a matched line that are shown, centred on the match
MAX_LINE = 2000
#: bytes of a line the exact pattern sees, around the screen's hit (a longer line is cut)
WINDOW = 64 * 1024
#: a partial line longer than this is cut rather than carried into the next block
MAX_CARRY = 64 * 1024
#: matching lines remembered per signature (for display and excerpts); more are only counted
KEEP_LINES = 5
#: lines counted per signature; beyond this a signature stops being searched
MAX_COUNT = 200
CONTEXT_BEFORE = 40
CONTEXT_AFTER = 8

_ANSI = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_BOX = "│┃║╎┆"


@dataclass
class Hit:
    """A line a signature matched: 1-based line number and the cleaned text."""

    number: int
    text: str


@dataclass
class SignatureHits:
    signature: CompiledSignature
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
        cut = data.rfind(b"\n") + 1
        if len(data) - cut + (0 if cut else len(carry)) > MAX_CARRY:  # a huge line: cut it
            cut = len(data)
        if cut == len(data) and not carry:
            yield data
        elif cut:
            yield carry + memoryview(data)[:cut]
        carry = data[cut:] if cut else carry + data
    if carry:
        yield carry


def _refuse_binary(head: bytes, name: str) -> None:
    if b"\x00" in head[:8192]:
        hint = "if it is UTF-16 text, convert it first: iconv -f UTF-16 -t UTF-8"
        raise KbgenError(f"{name}: looks like a binary file (NUL bytes near the start), not a log", hint=hint)


class Scanner:
    """Feeds blocks through the signature screen and the exact patterns; collects hits."""

    def __init__(self, signatures: list[CompiledSignature], screen: Screen | None = None) -> None:
        self.hits = {(s.error, s.index): SignatureHits(s) for s in signatures}
        self.screen = screen or Screen(signatures)
        self.line = 1  # number of the first line of the next block
        self.size = 0
        self.blank = True  # nothing but whitespace so far
        self.ends_open = False  # the last block did not end with a line break
        self.previous_tail: list[str] = []

    def prepare(self, block: bytes) -> bytes:
        """Account for one raw block (which ends at a line break or a cut); drop colour codes."""
        self.size += len(block)
        if self.blank and not block.isspace():
            self.blank = False
        self.ends_open = not block.endswith(b"\n")
        return _ANSI.sub(b"", block) if b"\x1b" in block else block

    def finish(self, block: bytes, candidates: list[CompiledSignature]) -> None:
        """Find the lines of a prepared block that the screen's candidates match."""
        waiting = [
            entry
            for signature in candidates
            if (entry := self.hits[signature.error, signature.index]).count < MAX_COUNT
        ]
        if waiting:
            self._match(block, waiting)
        self.previous_tail = self._tail_after(block)
        self.line += block.count(b"\n")

    def _tail_after(self, block: bytes) -> list[str]:
        """The log's last CONTEXT_BEFORE lines once ``block`` is read. A block can be one short
        line (the last line of a log without a final line break), so the lines before it are kept."""
        pieces = block[-8192:].split(b"\n")
        if block.endswith(b"\n"):
            pieces.pop()  # the empty piece after the last line break is no line
        lines = [clean_line(x[:MAX_LINE]) for x in pieces[-CONTEXT_BEFORE:]]
        if len(lines) < CONTEXT_BEFORE and len(block) <= 8192:
            lines = self.previous_tail[len(lines) - CONTEXT_BEFORE :] + lines
        return lines

    def _match(self, block: bytes, waiting: list[SignatureHits]) -> None:
        found: list[tuple[int, int, str, SignatureHits]] = []
        for entry in waiting:
            found.extend(self._lines_of(block, entry))
        found.sort(key=lambda item: item[0])
        counted_to, line = 0, self.line
        for start, end, text, entry in found:
            line += block.count(b"\n", counted_to, start)
            counted_to = start
            if not entry.lines:
                entry.before, entry.after = self._context(block, start, end)
            if len(entry.lines) < KEEP_LINES:
                entry.lines.append(Hit(line, text))

    def _lines_of(self, block: bytes, entry: SignatureHits) -> Iterator[tuple[int, int, str, SignatureHits]]:
        """(line start, line end, cleaned text) of each line in the block the signature matches."""
        signature, pos = entry.signature, 0
        while entry.count < MAX_COUNT:
            hit = signature.screen.search(block, pos)
            if hit is None:
                return
            at = hit.start()
            start = block.rfind(b"\n", 0, at) + 1
            end = block.find(b"\n", at)
            end = len(block) if end < 0 else end
            pos = end + 1
            # a line longer than the window is judged on the window around the hit
            low, high = max(start, at - WINDOW // 4), min(end, at + WINDOW)
            # a cut drops the word it falls in: a token without its prefix would escape redaction
            text = clean_line(whole_words(block[low:high], low > start, high < end))
            match = signature.exact.search(text)
            if match is None:
                continue
            entry.count += 1
            yield start, end, _shown(text, match.start()), entry

    def _context(self, block: bytes, start: int, end: int) -> tuple[list[str], list[str]]:
        head = block[max(0, start - 16384) : start].split(b"\n")[:-1][-CONTEXT_BEFORE:]
        before = [clean_line(whole_words(x[:MAX_LINE], False, len(x) > MAX_LINE)) for x in head]
        if len(before) < CONTEXT_BEFORE and start - 16384 <= 0:
            before = self.previous_tail[-(CONTEXT_BEFORE - len(before)) :] + before
        tail = block[end + 1 : end + 1 + 16384].split(b"\n")[:CONTEXT_AFTER]
        return before, [clean_line(whole_words(x[:MAX_LINE], False, len(x) > MAX_LINE)) for x in tail]


def _shown(text: str, at: int) -> str:
    """The line as shown: whole when short, else MAX_LINE characters around the match."""
    if len(text) <= MAX_LINE:
        return text
    low = max(0, min(at - MAX_LINE // 2, len(text) - MAX_LINE))
    piece = whole_words(text[low : low + MAX_LINE].encode(), low > 0, low + MAX_LINE < len(text))
    return piece.decode("utf-8", errors="replace")


def scan_log(source: str, signatures: list[CompiledSignature]) -> ScanResult:
    """Stream ``source`` (a path or ``-``) through the signatures."""
    stream, name = open_log(source)
    try:
        return scan_stream(stream, name, signatures)
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


def scan_stream(
    stream: BinaryIO, name: str, signatures: list[CompiledSignature], screen: Screen | None = None
) -> ScanResult:
    """Scan an open binary stream; ``name`` is used in messages. ``screen``: the signatures'
    :class:`Screen` when the caller built it once for many scans.

    The screen of one block (RE2, which releases the GIL) runs in a worker thread while this
    thread reads and prepares the next block and counts the lines of the one before.
    """
    scanner = Scanner(signatures, screen)
    blocks = iter_blocks(stream, name)
    head = list(itertools.islice(blocks, 3))
    if len(head) < 3:  # the whole log (a short one) is read: nothing to overlap, no thread to start
        for raw in head:
            block = scanner.prepare(raw)
            scanner.finish(block, scanner.screen.candidates(block))
        return _result(scanner, name)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="kbgen-triage") as pool:
        pending: tuple[bytes, Future[list[CompiledSignature]]] | None = None
        for raw in itertools.chain(head, blocks):
            block = scanner.prepare(raw)
            job = (block, pool.submit(scanner.screen.candidates, block))
            if pending is not None:
                scanner.finish(pending[0], pending[1].result())
            pending = job
        if pending is not None:
            scanner.finish(pending[0], pending[1].result())
    return _result(scanner, name)


def _result(scanner: Scanner, name: str) -> ScanResult:
    if scanner.blank:
        raise KbgenError(f"{name}: the log is empty", hint="pass the file the failing command wrote to")
    lines = scanner.line - 1 + (1 if scanner.ends_open else 0)
    return ScanResult(scanner.hits, lines, scanner.size, scanner.previous_tail)
