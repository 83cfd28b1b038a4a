"""The errors kbgen raises. ``cli`` catches :class:`KbgenError` once and prints it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


class KbgenError(Exception):
    """A problem the user can fix; printed as one message, never a traceback."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"


@dataclass(frozen=True, order=True)
class Problem:
    """One finding of ``kbgen validate`` (or of loading a file)."""

    path: str
    line: int | None
    field: str | None
    message: str
    severity: str = "error"  # "error" or "warning"
    code: str = "schema"

    def format(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        what = f"{self.field}: {self.message}" if self.field else self.message
        return f"{where}: {what}"


class EntryError(KbgenError):
    """A KB file that cannot be read or does not validate."""

    def __init__(self, problems: list[Problem], *, hint: str | None = None) -> None:
        self.problems = problems
        super().__init__("\n".join(p.format() for p in problems), hint=hint)


class KbNotFoundError(KbgenError):
    """No kb/ folder where one was looked for."""


class UnknownIdError(KbgenError):
    """An id that names no entry, or is not a valid id at all."""


class ConflictError(KbgenError):
    """A file changed on disk between kbgen reading it and writing it back."""


class ProbeError(KbgenError):
    """A probe that cannot be run at all (not one that ran and failed)."""


def relpath(path: Path, root: Path | None = None) -> str:
    """``path`` relative to ``root`` (or the cwd) when it lies below it, for messages."""
    import os

    # abspath, not resolve: a symlink loop must still get a name in the message
    base = os.path.abspath(root if root is not None else Path.cwd())  # noqa: PTH100
    absolute = os.path.abspath(path)  # noqa: PTH100
    if absolute == base or absolute.startswith(base.rstrip(os.sep) + os.sep):
        return os.path.relpath(absolute, base)
    return str(path)


def closest(word: str, choices: Iterable[str], *, n: int = 1, cutoff: float = 0.6) -> list[str]:
    """The ``n`` choices that look most like ``word``, best first: every did-you-mean uses it."""
    import difflib

    return difflib.get_close_matches(word, list(choices), n=n, cutoff=cutoff)


def did_you_mean(word: str, choices: Iterable[str], *, cutoff: float = 0.6) -> str:
    """``did you mean 'x'?`` for the choice closest to ``word``; empty when none is close."""
    found = closest(word, choices, cutoff=cutoff)
    return f"did you mean '{found[0]}'?" if found else ""
