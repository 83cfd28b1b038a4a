"""``kbgen run`` on a crash the project has filed: an occurrence instead of a copy."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from kbgen.seen.known import known_for_report, seen_line
from kbgen.seen.occurrences import is_closed, record_occurrence

if TYPE_CHECKING:
    from kbgen.store import Kb
    from kbgen.triage import TriageReport

__all__ = ["seen_before"]


def seen_before(kb: Kb, report: TriageReport, file_bug: bool, ran: tuple[list[str], int | None]) -> bool:
    """Tell the user the crash is a bug already filed and record it there; True when it was
    handled so (no new bug is to be filed)."""
    same = [k for k in known_for_report(kb, report) if k.same]
    if not same:
        return False
    entry = kb.bugs[same[0].id]
    bug = entry.record
    click.echo(f"kbgen: {seen_line(bug)}", err=True)
    argv, status = ran
    if not is_closed(bug):
        record_occurrence(entry, argv, status)
        click.echo(f"kbgen: recorded an occurrence in {bug.id} instead of filing a copy.", err=True)
        return True
    click.echo(
        f"kbgen: {bug.id} is {bug.status.value}, but the crash is back: the fix did not hold.", err=True
    )
    if not file_bug:
        if not sys.stdin.isatty():
            click.echo(f"kbgen: run with --file-bug to reopen {bug.id} and record this.", err=True)
            return True
        try:
            if not click.confirm(f"Reopen {bug.id} and record this occurrence?", default=True, err=True):
                return True
        except click.Abort:
            return True
    from kbgen.bugs.edit import set_status
    from kbgen.models import Status

    set_status(kb, entry, Status.open, f"reopened by kbgen run: the crash came back after {bug.status.value}")
    record_occurrence(entry, argv, status)
    click.echo(f"kbgen: reopened {bug.id} and recorded the occurrence.", err=True)
    return True
