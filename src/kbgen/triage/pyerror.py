"""The last Python exception a log shows: its class, message and the frames that led to it.

Triage uses it when no error type matches: to say what the failure is (a ``KeyError`` in the
user's data code is no GPU failure), to point at the deepest frame of the user's own code and
of the library that raised, and as the line a drafted error type is generalised from.

Lines are read with RE2 (linear time whatever the text), and only the end of a log: the last
exception is the one that stopped the program. Prefixes that launchers add to every line
(``[rank0]:``, ``[default0]:``, a timestamp and level) are dropped before reading a line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import re2

#: how much of a log's end is read for its last exception
TAIL_CHARS = 256 * 1024
MAX_MESSAGE = 500

_PREFIX = re2.compile(
    r"^(?:\s*(?:\[(?:rank|default)?\d+\]:?|\(\w+ pid=\d+(?:, ip=[\d.]+)?\)|\d{4}-\d\d-\d\d[ T][\d:.,]+"
    r"|(?:ERROR|CRITICAL|FATAL)\s*[:|-]?)\s*)+"
)
_FRAME = re2.compile(r'^\s*File "([^"]{1,1000})", line (\d{1,9}), in (\S{1,200})')
_TRACEBACK = re2.compile(r"^\s*Traceback \(most recent call last\):")
# ``pkg.mod.SomeError: message`` or a bare ``SomeError``; a class name ends as exceptions do
_EXCEPTION = re2.compile(
    r"^((?:[A-Za-z_]\w{0,80}\.){0,8}([A-Za-z_]\w{0,80}(?:Error|Exception|Exit|Interrupt|Failure|Fault"
    r"|Iteration)))(?::\s?(.*))?$"
)
_LIBRARY = re2.compile(r"[/\\](?:site|dist)-packages[/\\]([^/\\]+)")
_STDLIB = re2.compile(r"[/\\]lib[/\\]python\d\.\d+[/\\]|^<frozen |[/\\]Lib[/\\]")


@dataclass(frozen=True)
class Frame:
    path: str
    line: int
    function: str
    #: the package the frame's file belongs to (``torch``, ``transformers``), ``python`` for
    #: the standard library, None for the user's own code
    package: str | None

    def where(self) -> str:
        return f"{self.path}:{self.line} in {self.function}"


@dataclass(frozen=True)
class PythonError:
    exception: str  # as printed: ``torch.OutOfMemoryError``, ``KeyError``
    name: str  # the class name alone
    message: str
    line: str  # the exception line as it appears (prefix dropped)
    frames: list[Frame] = field(default_factory=list)

    @property
    def user_frame(self) -> Frame | None:
        """The deepest frame in the user's own code."""
        return next((f for f in reversed(self.frames) if f.package is None), None)

    @property
    def library_frame(self) -> Frame | None:
        """The deepest frame in an installed package (the standard library aside)."""
        return next((f for f in reversed(self.frames) if f.package not in (None, "python")), None)


def strip_prefix(line: str) -> str:
    return _PREFIX.sub("", line, count=1) if line[:1] in "[( 0123456789EFC" else line


def package_of(path: str) -> str | None:
    found = _LIBRARY.search(path)
    if found:
        name: str = found.group(1)
        return name[:-3] if name.endswith(".py") else name.split("-")[0]
    return "python" if _STDLIB.search(path) else None


def last_error(text: str) -> PythonError | None:
    """The last exception ``text`` shows (only its last :data:`TAIL_CHARS` are read)."""
    lines = [strip_prefix(line.rstrip()) for line in text[-TAIL_CHARS:].splitlines()]
    for index in range(len(lines) - 1, -1, -1):
        found = _EXCEPTION.match(lines[index])
        if found is None or not _looks_raised(lines, index, found.group(2)):
            continue
        message = (found.group(3) or "").strip()[:MAX_MESSAGE]
        return PythonError(
            exception=found.group(1),
            name=found.group(2),
            message=message,
            line=lines[index][: MAX_MESSAGE + 200],
            frames=_frames_before(lines, index),
        )
    return None


def _looks_raised(lines: list[str], index: int, name: str) -> bool:
    """An exception line, not prose that happens to start with a class-like word: a traceback
    or a frame leads to it, or its class name is unmistakable (``...Error`` with a message)."""
    start = max(0, index - 60)
    if any(_FRAME.match(x) or _TRACEBACK.match(x) for x in lines[start:index]):
        return True
    return name.endswith(("Error", "Exception")) and ":" in lines[index]


def _frames_before(lines: list[str], index: int) -> list[Frame]:
    """The frames of the traceback that ends at ``index`` (back to its ``Traceback`` line)."""
    frames: list[Frame] = []
    for line in reversed(lines[max(0, index - 400) : index]):
        if _TRACEBACK.match(line):
            break
        found = _FRAME.match(line)
        if found:
            path = found.group(1)
            frames.append(Frame(path, int(found.group(2)), found.group(3), package_of(path)))
    frames.reverse()
    return frames
