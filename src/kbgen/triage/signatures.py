"""Signatures as RE2 programs: what a pattern may use, and the one-pass screen over a block.

Triage runs every signature with RE2 (google-re2), whose matching time is linear in the text
whatever the pattern, so a signature can be slow to write but never slow to run. RE2 has no
lookarounds, backreferences, possessive or atomic repeats; such a signature is refused with
the reason RE2 gives, and ``kbgen validate`` names its file and line. The one thing RE2 accepts
with another meaning than Python's ``re`` (which checks signatures when a record loads) is
``{,n}``: literal text to RE2, ``{0,n}`` to Python; it is refused too.

Each signature is compiled twice:

- *exact*: the pattern as written, run on one cleaned line (colour codes removed, the last
  carriage-return segment, a rich box's borders dropped, trailing blanks stripped);
- *screen*: the same pattern with its line anchors (``^ $ \\A \\z``) removed, run on raw blocks
  of the log with ``never_nl`` so that no match crosses a line break. Dropping a zero-width
  assertion only lets a pattern match more, so the screen finds every line the exact pattern
  can match (and a few more, which the exact pattern then rejects).

All screens go into one ``re2.Set``: a single pass over a block says which signatures can match
anywhere in it, and a block where none can is done with.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import re2

#: memory RE2 may use for one signature, and for the set of all of them (its DFA cache)
PATTERN_MEM = 8 << 20
SET_MEM = 64 << 20
RE2_LIMITS = (
    "kbgen runs signatures with RE2: no lookarounds (?= (?! (?<= (?<!, no backreferences \\1, "
    "no possessive or atomic repeats, repeat counts up to 1000"
)


class SignatureError(ValueError):
    """A pattern RE2 cannot run, or that would match every line."""


@dataclass(frozen=True)
class CompiledSignature:
    """One compiled signature of one error type."""

    error: str
    index: int
    exact: Any  # re2 pattern, run on a cleaned line (str)
    screen: Any  # re2 pattern without line anchors, run on raw blocks (bytes)
    weight: float
    #: counts only when a non-supporting signature of the same error type matched too
    supporting: bool = False
    #: when it matches, the error type ranks as a consequence of the log's other errors
    consequence: bool = False
    #: counts only when the last non-blank line of the log matches it (nothing came after it)
    at_end: bool = False


def re2_options(*, never_nl: bool, max_mem: int = PATTERN_MEM) -> Any:
    options = re2.Options()
    options.log_errors = False
    options.never_nl = never_nl
    options.max_mem = max_mem
    return options


def compile_exact(pattern: str) -> Any:
    """The pattern as RE2 runs it on one line; SignatureError when it cannot, or should not."""
    try:
        compiled = re2.compile(pattern, re2_options(never_nl=False))
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise SignatureError(f"RE2 cannot run this pattern ({reason}); {RE2_LIMITS}") from None
    if compiled.search("") is not None:
        raise SignatureError("matches an empty line, so it would match every line of every log")
    tokens = list(_tokens(pattern))
    if any(t == "{" and tokens[i + 1 : i + 2] == [","] for i, t in enumerate(tokens)):
        # Python's re reads a{,3} as a{0,3}, RE2 as the text "a{,3}": say so rather than guess
        raise SignatureError("{,n} is literal text to RE2 (Python's re reads it as {0,n}); write {0,n}")
    return compiled


def compile_screen(pattern: str) -> Any:
    """The pattern without line anchors, never crossing a line break (see the module doc)."""
    return re2.compile(without_anchors(pattern), re2_options(never_nl=True))


def signature_problems(pattern: str) -> list[str]:
    """Why ``pattern`` cannot be a signature; an empty list means it is fine."""
    try:
        compile_exact(pattern)
    except SignatureError as exc:
        return [str(exc)]
    return []


def without_anchors(pattern: str) -> str:
    """``pattern`` with ``^``, ``$``, ``\\A`` and ``\\z`` outside character classes made empty.

    Each becomes ``(?:)`` rather than nothing, so a quantifier after it still has an operand.
    """
    return "".join("(?:)" if t in ("^", "$", "\\A", "\\z") else t for t in _tokens(pattern))


def _tokens(pattern: str) -> Iterator[str]:
    """The pattern cut into escapes, quoted text (``\\Q...\\E``), whole classes and single characters."""
    i, n = 0, len(pattern)
    while i < n:
        if pattern.startswith("\\Q", i):  # literal text up to \E
            end = pattern.find("\\E", i + 2)
            end = n if end < 0 else end + 2
        elif pattern[i] == "\\":
            end = i + 2
        elif pattern[i] == "[":
            end = _class_end(pattern, i)
        else:
            end = i + 1
        yield pattern[i:end]
        i = end


def _class_end(pattern: str, start: int) -> int:
    """Index just past the character class that opens at ``start``."""
    i = start + 1
    if pattern[i : i + 1] == "^":
        i += 1
    if pattern[i : i + 1] == "]":  # a leading ] is a literal
        i += 1
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
        elif pattern.startswith("[:", i):
            close = pattern.find(":]", i + 2)
            i = i + 1 if close < 0 else close + 2
        elif pattern[i] == "]":
            return i + 1
        else:
            i += 1
    return len(pattern)


class Screen:
    """Which signatures can match somewhere in a block, in one pass of RE2 over it."""

    def __init__(self, signatures: list[CompiledSignature]) -> None:
        self.signatures = signatures
        self._set: Any = re2.Set.SearchSet(re2_options(never_nl=True, max_mem=SET_MEM))
        try:
            for signature in signatures:
                self._set.Add(without_anchors(signature.exact.pattern))
            self._set.Compile()
        except re2.error:  # too large for one set: test each screen on its own
            self._set = None

    def candidates(self, block: bytes) -> list[CompiledSignature]:
        if not self.signatures:
            return []
        if self._set is None:
            return [s for s in self.signatures if s.screen.search(block) is not None]
        return [self.signatures[i] for i in sorted(self._set.Match(block) or ())]
