"""What an interrupted ``kbgen renumber`` leaves behind: the old copy of a bug beside the new one.

Loading sets the old copy aside (reported, left out of ``kb.bugs``); ``kbgen renumber`` removes
it when it holds nothing the new copy lacks.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from kbgen.errors import Problem

if TYPE_CHECKING:
    from kbgen.models import Bug


# What this module needs of kbgen.store's Entry and Kb, said here so that the store, which sets
# leftovers aside while it loads, is not imported back (not even for its types).
class _Source(Protocol):
    @property
    def body(self) -> str: ...
    @property
    def rel(self) -> str: ...
    @property
    def parsed(self) -> Any: ...


class BugFile(Protocol):
    """A loaded bug and the file it came from (a :class:`kbgen.store.Entry` of a Bug)."""

    @property
    def record(self) -> Bug: ...
    @property
    def source(self) -> _Source: ...
    @property
    def path(self) -> Path: ...


E = TypeVar("E", bound=BugFile)


class Loaded(Protocol, Generic[E]):
    """The parts of a loaded KB (a :class:`kbgen.store.Kb`) that leftovers are kept in."""

    @property
    def bugs(self) -> dict[str, E]: ...

    problems: list[Problem]
    claims: dict[str, list[Path]]
    leftovers: dict[str, list[tuple[E, E]]]


def renumbered_copy(kb: Loaded[E], old: E) -> E | None:
    """The bug that `kbgen renumber` made of ``old`` (same creation time, a renumber event from
    its id, the id kept as an alias), when one is loaded under another id."""
    bug = old.record
    for entry in kb.bugs.values():
        new = entry.record
        if entry is old or bug.id not in new.aliases or new.created != bug.created:
            continue
        if any(e.kind.value == "renumber" and e.old == bug.id for e in new.history):
            return entry
    return None


def is_unchanged_copy(old: BugFile, new: BugFile) -> bool:
    """``old`` holds nothing ``new`` lacks: the same body and values, save what renumber changed
    (id, aliases, updated, one more history event)."""
    moved = {"id", "aliases", "updated", "history"}
    history = old.record.history
    return (
        new.record.history[: len(history)] == history
        and old.record.model_dump(exclude=moved) == new.record.model_dump(exclude=moved)
        and old.source.body == new.source.body
    )


def set_aside_leftovers(kb: Loaded[E], claimed: list[E]) -> None:
    """An interrupted renumber leaves the bug twice: the old file and the new one, whose alias is
    the old id. The old copy is reported and left out, so no command shows the bug twice."""
    aliases = {a for e in kb.bugs.values() for a in e.record.aliases}
    for old in [e for e in claimed if e.record.id in aliases]:
        new = renumbered_copy(kb, old)
        if new is None:
            continue
        bug_id = old.record.id
        kb.leftovers.setdefault(bug_id, []).append((old, new))
        kb.claims[bug_id].remove(old.path)
        if not kb.claims[bug_id]:
            del kb.claims[bug_id]
        if kb.bugs.get(bug_id) is old:
            del kb.bugs[bug_id]
            if bug_id in kb.claims:  # a second file claims the id (the merge renumber was for)
                kb.bugs[bug_id] = next(e for e in claimed if e.path == kb.claims[bug_id][0])
        if is_unchanged_copy(old, new):
            message = (
                f"an interrupted `kbgen renumber` left this old copy of {new.record.id} "
                f"({new.source.rel}); run `kbgen renumber {bug_id}` to finish it"
            )
        else:
            message = (
                f"an old copy of {new.record.id} ({new.source.rel}) left by an interrupted "
                "`kbgen renumber`, edited since: copy those edits into that file, then delete this one"
            )
        line = old.source.parsed.line_of(("id",))
        kb.problems.append(Problem(old.source.rel, line, "id", message, code="renumber-leftover"))
