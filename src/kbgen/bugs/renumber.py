"""``kbgen renumber``: move a bug whose id clashes (after a merge) to the next free id of its
day, the old id kept as an alias; safe to run again after an interrupted run."""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass
from pathlib import Path

from kbgen.bugs.edit import history_event
from kbgen.bugs.ids import claim_id
from kbgen.bugs.roundtrip import key_order, splice
from kbgen.errors import ConflictError, EntryError, KbgenError, UnknownIdError
from kbgen.fileio import Unreadable, locked, read_limited
from kbgen.models import Bug, EventKind
from kbgen.store import Entry, Kb, check_id


@dataclass
class Renumbered:
    new_id: str
    path: Path
    note: str = ""  # said when the command had nothing left to do, or finished an earlier run


def renumber(kb: Kb, bug_id: str, day: dt.date | None = None) -> Renumbered:
    """Move a bug to the next free id (of its own date), keeping the old id as an alias.

    Safe to run again: after an interrupted run it removes the old copy the new file replaces;
    after a finished one it says so and changes nothing.
    """
    check_id(bug_id, "bug")
    if bug_id in kb.leftovers:
        return _finish_renumber(kb, bug_id)
    paths = kb.claims.get(bug_id) or []
    done = _renumbered_from(kb, bug_id)
    if done is not None and len(paths) <= 1:
        where = f"; {bug_id} stays with {kb.project.rel(paths[0])}" if paths else ""
        return Renumbered(done.record.id, done.path, f"already renumbered{where}")
    if not paths:
        broken = [p for p in kb.problems if Path(p.path).name.startswith(bug_id)]
        if broken:  # the file is there but cannot be read: say why, not "no such bug"
            raise EntryError(broken, hint="fix the file, then run the renumber again")
        raise UnknownIdError(f"no bug file claims {bug_id}")
    # after a merge two files claim the id: move the one created last, keep the first in place
    from kbgen.kinds import BUG
    from kbgen.store import read_entry

    entries = sorted(
        (read_entry(p, BUG, kb.project) for p in paths), key=lambda e: (e.record.created, e.path.name)
    )
    # the old id stays with the first file, so the moved one keeps it in its history, not as an
    # alias: an alias equal to a live id would name two bugs
    return _move(kb, entries[-1], bug_id, day, keep_alias=len(paths) == 1)


def _renumbered_from(kb: Kb, bug_id: str) -> Entry[Bug] | None:
    for entry in kb.bugs.values():
        if any(e.kind == EventKind.renumber and e.old == bug_id for e in entry.record.history):
            return entry
    return None


def _move(kb: Kb, entry: Entry[Bug], bug_id: str, day: dt.date | None, *, keep_alias: bool) -> Renumbered:
    path = entry.path
    bug = entry.record
    slug = path.stem[len(bug_id) + 1 :]
    event = history_event(EventKind.renumber, old=bug_id)
    target_day = day or dt.datetime.strptime(bug.date, "%Y%m%d").date()

    def render(new_id: str) -> str:
        event.new = new_id
        changes = {
            "id": new_id,
            "aliases": sorted({*bug.aliases, bug_id} if keep_alias else set(bug.aliases) - {bug_id}),
            "updated": event.at,
            "history": [*bug.history, event],
        }
        return splice(entry.source, changes, key_order(Bug))

    with locked(path):  # no other kbgen writer changes the old file until it is gone
        new_id, new_path = claim_id(kb.project, target_day, render, slug)
        if _digest(path) != entry.source.digest:  # edited meanwhile: keep the person's version
            new_path.unlink()
            raise ConflictError(
                f"{kb.project.rel(path)}: changed on disk since kbgen read it; nothing was renumbered",
                hint="run the command again to work from the new version",
            )
        _remove_old(kb, path, new_id)
    return Renumbered(new_id, new_path)


def _finish_renumber(kb: Kb, bug_id: str) -> Renumbered:
    """Remove the old copies an interrupted renumber left, when each is exactly what was copied."""
    from kbgen.store.leftovers import is_unchanged_copy

    pairs = kb.leftovers[bug_id]
    for old, new in pairs:
        if not is_unchanged_copy(old, new):
            raise KbgenError(
                f"{old.source.rel}: an old copy of {new.record.id} edited after an interrupted renumber; "
                "nothing was removed",
                hint=f"copy its edits into {new.source.rel}, then delete {old.source.rel}",
            )
    for old, new in pairs:
        with locked(old.path):
            if _digest(old.path) != old.source.digest:
                raise ConflictError(
                    f"{old.source.rel}: changed on disk since kbgen read it; nothing was removed"
                )
            _remove_old(kb, old.path, new.record.id)
    new = pairs[-1][1]
    return Renumbered(new.record.id, new.path, "finished an interrupted renumber")


def _remove_old(kb: Kb, path: Path, new_id: str) -> None:
    try:
        path.unlink()
    except OSError as exc:
        raise KbgenError(
            f"{kb.project.rel(path)}: wrote {new_id} but could not remove: {exc.strerror}",
            hint="delete it by hand, or run the same renumber again",
        ) from None


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(read_limited(path)).hexdigest()
    except (OSError, Unreadable):
        return None
