"""What an interrupted ``kbgen renumber`` leaves behind: the old copy of a bug beside the new one.

Loading sets the old copy aside (reported, left out of ``kb.bugs``); ``kbgen renumber`` removes
it when it holds nothing the new copy lacks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbgen.errors import Problem

if TYPE_CHECKING:
    from kbgen.models import Bug
    from kbgen.store import Entry, Kb


def renumbered_copy(kb: Kb, old: Entry[Bug]) -> Entry[Bug] | None:
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


def is_unchanged_copy(old: Entry[Bug], new: Entry[Bug]) -> bool:
    """``old`` holds nothing ``new`` lacks: the same body and values, save what renumber changed
    (id, aliases, updated, one more history event)."""
    moved = {"id", "aliases", "updated", "history"}
    history = old.record.history
    return (
        new.record.history[: len(history)] == history
        and old.record.model_dump(exclude=moved) == new.record.model_dump(exclude=moved)
        and old.source.body == new.source.body
    )


def set_aside_leftovers(kb: Kb, claimed: list[Entry[Bug]]) -> None:
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
