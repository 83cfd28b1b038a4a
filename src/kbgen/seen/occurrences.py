"""Writes for seen-before bugs: one more occurrence of a crash, a bug marked a duplicate."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kbgen import clock
from kbgen.bugs.edit import history_event, save_bug
from kbgen.models import CLOSED_STATUSES, EventKind, Occurrence, Status
from kbgen.redact import redact_text

if TYPE_CHECKING:
    from kbgen.models import Bug
    from kbgen.store import Entry, Kb

__all__ = ["is_closed", "mark_duplicate", "record_occurrence"]

#: the most occurrences a bug keeps: the oldest are dropped (the count on the page stays honest
#: about what is kept, and a bug file stays far below its size limit)
MAX_OCCURRENCES = 500


def is_closed(bug: Bug) -> bool:
    return bug.status in CLOSED_STATUSES


def record_occurrence(entry: Entry[Bug], command: list[str], exit_status: int | None) -> bool:
    """Add one occurrence (this machine, now, the command, its exit status) to the bug."""
    occurrence = Occurrence(
        at=clock.now(),
        host=clock.hostname()[:200],
        command=redact_text(" ".join(command), user="")[:2000] or None,
        exit_status=exit_status,
        by=clock.user(),
    )

    def make(fresh: Entry[Bug]) -> dict[str, Any]:
        kept = [*fresh.record.occurrences, occurrence][-MAX_OCCURRENCES:]
        return {"occurrences": kept, "updated": occurrence.at}

    return save_bug(entry, make)


def mark_duplicate(kb: Kb, entry: Entry[Bug], original: str, note: str | None) -> bool:
    """Close the bug as a duplicate of ``original`` and link the two."""
    target = kb.resolve_bug(original).record.id
    if target == entry.record.id:
        from kbgen.errors import KbgenError

        raise KbgenError(f"--of {original}: a bug cannot be a duplicate of itself")

    def make(fresh: Entry[Bug]) -> dict[str, Any]:
        bug = fresh.record
        if bug.duplicate_of == target and bug.status == Status.duplicate:
            return {}
        text = f"duplicate of {target}" + (f": {redact_text(note, user='')}" if note else "")
        kind = EventKind.status if bug.status != Status.duplicate else EventKind.note
        event = history_event(kind, note=text, **{"from": bug.status.value, "to": Status.duplicate.value})
        related = bug.related if target in bug.related else [*bug.related, target]
        return {
            "status": Status.duplicate,
            "duplicate_of": target,
            "related": related,
            "updated": event.at,
            "history": [*bug.history, event],
        }

    return save_bug(entry, make)
