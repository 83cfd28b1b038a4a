"""Bug ids: ``BUG-YYYYMMDD-NNN``, the first free number of a day, claimed by creating the file.

A new file is created with a hard link from a finished temporary file, which fails if the name
exists: two processes can never get the same id on one machine, and no reader ever sees a
half-written report.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from kbgen.errors import KbgenError
from kbgen.fileio import Unreadable, locked_folder, read_limited
from kbgen.models import BUG_ID, BUG_ID_RE
from kbgen.store import Project, atomic_write, encode, entry_files

_MAX_TRIES = 10_000


def stamp(day: dt.date) -> str:
    """``YYYYMMDD`` with the year in four digits (strftime writes year 1 as ``1``)."""
    return f"{day.year:04d}{day.month:02d}{day.day:02d}"


_ID_IN_TEXT = re.compile(BUG_ID)


def taken_ids(project: Project) -> set[str]:
    """Every bug id in use: file names, plus aliases (read cheaply, without validation)."""
    taken: set[str] = set()
    for path in entry_files(project.folder("bug")):
        taken.update(ids_in_file(path))
    return taken


def ids_in_file(path: Path) -> set[str]:
    """The id in a bug file's name and the aliases its frontmatter lists."""
    ids = {match.group(0)} if (match := _ID_IN_TEXT.match(path.stem)) else set()
    try:
        head = read_limited(path).decode("utf-8", errors="replace")[:65536]
    except (OSError, Unreadable):
        return ids
    return ids | {m.group(0) for m in _ID_IN_TEXT.finditer(_aliases_block(head))}


def _aliases_block(text: str) -> str:
    match = re.search(r"^aliases:(.*?)(?=^\S|\Z)", text, re.MULTILINE | re.DOTALL)
    return match.group(1) if match else ""


def id_parts(bug_id: str) -> tuple[str, int] | None:
    """``BUG-20251109-002`` -> ``("20251109", 2)``; None for what is not a bug id."""
    match = re.fullmatch(BUG_ID_RE, bug_id)
    return (match.group(1), int(match.group(2))) if match else None


def make_id(prefix: str, number: int) -> str:
    """The id of ``number`` on the day ``prefix`` (YYYYMMDD) stamps: at least three digits."""
    return f"BUG-{prefix}-{number:03d}"


def next_id(day: dt.date, taken: Iterable[str]) -> str:
    """The id after every id of ``day`` in ``taken`` (an id freed below the top is not reused)."""
    prefix = stamp(day)
    return make_id(prefix, max((p[1] for t in taken if (p := id_parts(t)) and p[0] == prefix), default=0) + 1)


def _candidates(day: dt.date, taken: set[str]) -> Iterator[str]:
    prefix, start = id_parts(next_id(day, taken)) or (stamp(day), 1)
    for number in range(start, start + _MAX_TRIES):
        yield make_id(prefix, number)


def slugify(title: str, words: int = 6) -> str:
    """A short file-name tail from a title: ``CUDA OOM in val loop`` -> ``cuda-oom-in-val-loop``."""
    import unicodedata

    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    parts = re.findall(r"[a-z0-9]+", ascii_title.lower())[:words]
    return "-".join(parts)[:60].strip("-")


def claim_id(project: Project, day: dt.date, render: Any, slug: str = "") -> tuple[str, Path]:
    """Create ``kb/bugs/<id>[-slug].md`` under the first free id of ``day``; ``render(id)`` gives its text.

    The lock makes listing-then-creating atomic between processes; the exclusive link is a
    second guard for a file name that appeared anyway.
    """
    folder = project.folder("bug")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise KbgenError(f"{project.rel(folder)}: cannot create: {exc.strerror}") from None
    with locked_folder(folder):  # flock on kb/bugs itself: no lock file is left there
        taken = taken_ids(project)
        for bug_id in _candidates(day, taken):
            path = folder / (f"{bug_id}-{slug}.md" if slug else f"{bug_id}.md")
            try:
                atomic_write(path, encode(render(bug_id)), exclusive=True)
            except FileExistsError:
                continue
            return bug_id, path
    raise KbgenError(f"no free bug id left for {day}")  # pragma: no cover
