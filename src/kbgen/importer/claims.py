"""Bug ids for many new bugs in a row, as :func:`kbgen.bugs.ids.claim_id` gives one.

``claim_id`` reads every file of kb/bugs/ for the ids in use each time it is called: right for
one bug, quadratic for an import of thousands. :class:`IdClaims` reads them once, and afterwards
only the files that appeared in kb/bugs/ since, each time it takes the folder's lock.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator
from pathlib import Path

from kbgen.bugs.ids import id_parts, ids_in_file, make_id, stamp
from kbgen.errors import KbgenError
from kbgen.fileio import locked_folder
from kbgen.store import Project, entry_files


class IdClaims:
    """Take ids with :meth:`next_id` inside :meth:`batch`, which holds kb/bugs/' lock."""

    def __init__(self, project: Project) -> None:
        self.folder = project.folder("bug")
        self._read: set[str] = set()  # names of the files whose ids are known
        self._top: dict[str, int] = {}  # YYYYMMDD -> the highest number in use that day

    @contextlib.contextmanager
    def batch(self) -> Iterator[IdClaims]:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise KbgenError(f"{self.folder}: cannot create: {exc.strerror}") from None
        with locked_folder(self.folder):
            for path in entry_files(self.folder):
                if path.name not in self._read:
                    self._read.add(path.name)
                    for bug_id in ids_in_file(path):
                        self._take(bug_id)
            yield self

    def _take(self, bug_id: str) -> None:
        if parts := id_parts(bug_id):
            self._top[parts[0]] = max(self._top.get(parts[0], 0), parts[1])

    def next_id(self, day: dt.date) -> str:
        """The id after every id of ``day`` in use, now taken."""
        prefix = stamp(day)
        bug_id = make_id(prefix, self._top.get(prefix, 0) + 1)
        self._take(bug_id)
        return bug_id

    def release(self, bug_id: str) -> None:
        """Give back the id :meth:`next_id` just gave (nothing was written under it)."""
        parts = id_parts(bug_id)
        if parts and self._top.get(parts[0]) == parts[1]:
            self._top[parts[0]] -= 1

    def written(self, path: Path) -> None:
        """``path`` was created under an id from :meth:`next_id`: its ids are known."""
        self._read.add(path.name)
