"""A crash's fingerprint: what stays the same when the same bug is hit again.

Modelled on how error trackers group events (Sentry's grouping): the exception type, the
exception message with everything a rerun changes turned into placeholders, and the top frames
of the user's own code and of the library, each named by file and function, never by line
number. Frames decide when both sides have them; without frames only a *name* in the message
(a quoted module, a shared library, an ``ns::op`` operator) can tell one bug from another that
prints the same words. An out-of-memory message with its sizes taken out says nothing about
which allocation failed, so two such messages without frames are never claimed the same bug:
that is the wrong merge trackers' users complain of most.

The fingerprint is stored with the bug (``fingerprint:`` in its frontmatter) with a version, so
a later change of these rules can be told from an old fingerprint and recomputed by
``kbgen migrate``.
"""

from __future__ import annotations

import re
from typing import Any

import re2
from pydantic import BaseModel, ConfigDict

__all__ = ["FINGERPRINT_VERSION", "Fingerprint", "fingerprint_of", "normalise"]

#: 2: markdown quotes and a leading ``...`` are taken off each line
FINGERPRINT_VERSION = 2
MAX_TEXT = 400
MAX_FRAMES = 3
#: only the end of a log is read: the error block is there, and the cost stays bounded
MAX_INPUT = 64 * 1024


class Fingerprint(BaseModel):
    """What a bug's crash looks like once a rerun's surface changes are taken out."""

    model_config = ConfigDict(extra="forbid")

    #: the rules that made it; one stored without a version was made by the first rules
    version: int = 1
    exception: str | None = None
    message: str = ""
    names: list[str] = []
    user_frames: list[str] = []
    library_frames: list[str] = []

    @property
    def distinctive(self) -> bool:
        """Whether anything beyond the words of the message can tell this bug from another."""
        return bool(self.names or self.user_frames or self.library_frames)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _whole(text: str) -> str:
    """``text`` with lone surrogates (from a log decoded with surrogateescape, or a JSON escape)
    as U+FFFD: RE2 reads UTF-8, which cannot hold them."""
    return _SURROGATE.sub("\ufffd", text)


def _re(pattern: str) -> Any:
    """Compiled with RE2, which runs in time linear in the text: these patterns read whatever a
    crashed program printed, and Python's backtracking engine takes quadratic time or worse on
    a long run of slashes or word characters."""
    return re2.compile(pattern)


#: what a launcher, a logger or a paste puts before a line: rank prefixes, timestamps, syslog
#: fields, a markdown quote (``> ``) and the ``...`` of a line pasted from its middle
_PREFIX = _re(
    r"^\s*(?:(?:\[rank\d+\]:|\[\d{4}-\d\d-\d\d[ T][\d:.,]+\]"
    r"|\d{4}-\d\d-\d\d[ T][\d:.,]+\s*(?:(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)\s+)?"
    r"|[A-Z][a-z]{2} \d\d \d\d:\d\d:\d\d \S+ \S+\[\d+\]:|\d+:|rank\s*\d+\s*:|>+ |\.{3}|\x{2026})\s*)+"
)
_EXC = _re(r"^\s*(?:[\w.]+\.)?(?P<name>[A-Z]\w*(?:Error|Exception|Interrupt|Warning))\s*:\s*(?P<msg>.*)$")
_PY_FRAME = _re(r'File "(?P<path>[^"]+)",\s*line\s*\d+(?:, in (?P<func>[\w.<>]+))?')
_RICH_FRAME = _re(r"(?P<path>[\w/\\.~:<>-]+\.py):\d+ in (?P<func>[\w.<>]+)")
_LIBRARY = _re("(?i)" + r"site-packages|dist-packages|[/\\]lib[/\\]python\d|<frozen|importlib")
_SO = _re(r"(?P<stem>[\w.+-]+?)(?:\.cpython-[\w-]+|\.abi3)?\.so(?P<ver>(?:\.\d+)*)\b")
_QUOTED = _re(r"""['`"](?P<q>[A-Za-z_][\w.:/-]{2,80})['`"]""")
_OPERATOR = _re(r"\b(?P<op>[a-z_]\w*::\w+)\b")
_ERRORISH = _re("(?i)" + r"error|out of memory|undefined symbol|failed|cannot|no module")
_SYMBOL = _re(r"\b_Z\w+")
_SUBS: list[tuple[Any, str]] = [
    (_re(r"https?://\S+"), "<url>"),
    (_re(r"(?:[A-Za-z]:)?(?:[/\\~][\w.+<>@-]*)+[/\\][\w.+<>@-]+"), "<path>"),
    (_re(r"\b0x[0-9a-fA-F]+\b"), "<addr>"),
    (_re(r"\b\d{4}-\d\d-\d\d[ T_][\d:.,_]+\b"), "<time>"),
    (_re("(?i)" + r"\b\d+(?:\.\d+)?\s*(?:[KMGTP]i?B|bytes?)\b"), "<size>"),
    (_re("(?i)" + r"\b(?:cuda:|gpu\s|device\s|rank\s?)\d+\b"), "<dev>"),
    (_re(r"\b(\d+)\.\d+(?:\.\d+)*(?:[a-z]+\d*)?(?:\+\w+)?\b"), r"\1.x"),
    (_re(r"\b\d+\b"), "<n>"),
]


def normalise(text: str) -> str:
    """``text`` with paths, addresses, times, sizes, device ids, minor versions and numbers as
    placeholders, mangled symbols as ``<sym>``, whitespace squeezed."""
    out = _SYMBOL.sub("<sym>", _whole(text))
    for pattern, repl in _SUBS:
        out = pattern.sub(repl, out)
    return " ".join(out.split())[:MAX_TEXT]


def _frame_key(path: str, func: str | None) -> tuple[str, bool]:
    library = bool(_LIBRARY.search(path))
    parts = re.split(r"[/\\]", path)
    if library:
        for marker in ("site-packages", "dist-packages"):
            if marker in parts:
                parts = parts[parts.index(marker) + 1 :]
                break
        else:
            parts = parts[-2:]
        name = "/".join(parts)
    else:
        name = parts[-1]
    return f"{name}:{func or '?'}", library


def _names(lines: list[str]) -> list[str]:
    """The names in the error block that tell one bug from another of the same words."""
    found: set[str] = set()
    for line in lines:
        for m in _SO.finditer(line):
            major = m.group("ver").split(".")[1] if m.group("ver") else ""
            found.add(f"lib:{m.group('stem')}" + (f".{major}" if major else ""))
        for m in _QUOTED.finditer(line):
            found.add(f"name:{m.group('q')}")
        for m in _OPERATOR.finditer(line):
            found.add(f"op:{m.group('op')}")
    return sorted(found)


def fingerprint_of(text: str) -> Fingerprint:
    """The fingerprint of a log or of a bug's error excerpt."""
    lines = [_PREFIX.sub("", line) for line in _whole(text[-MAX_INPUT:]).splitlines()]
    exc_at = max((i for i, line in enumerate(lines) if _EXC.match(line)), default=None)
    exception, message_lines = None, []
    if exc_at is not None:
        m = _EXC.match(lines[exc_at])
        assert m is not None
        exception = m.group("name")
        message_lines = [m.group("msg")] + [x for x in lines[exc_at + 1 : exc_at + 4] if x.strip()]
        block_start = exc_at
    else:
        tail = [x for x in lines if x.strip() and not _PY_FRAME.search(x) and not _RICH_FRAME.search(x)]
        errors = [i for i, x in enumerate(tail) if _ERRORISH.search(x)]
        message_lines = tail[errors[-1] : errors[-1] + 2] if errors else tail[-3:]
        block_start = len(lines)
    user: list[str] = []
    library: list[str] = []
    for line in lines[:block_start]:
        frame = _PY_FRAME.search(line) or _RICH_FRAME.search(line)
        if frame:
            key, is_lib = _frame_key(frame.group("path"), frame.group("func"))
            (library if is_lib else user).append(key)
    message = normalise(" ".join(message_lines).strip())
    return Fingerprint(
        version=FINGERPRINT_VERSION,
        exception=exception,
        message=message,
        names=_names(message_lines)[:8],
        user_frames=_innermost(user),
        library_frames=_innermost(library),
    )


def _innermost(frames: list[str]) -> list[str]:
    """The innermost MAX_FRAMES distinct frames, innermost first."""
    out: list[str] = []
    for key in reversed(frames):
        if key not in out:
            out.append(key)
        if len(out) == MAX_FRAMES:
            break
    return out
