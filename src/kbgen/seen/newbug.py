"""``new-bug``: warn when the crash is a bug already filed, and file it as a duplicate."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from kbgen.fingerprint import fingerprint_of
from kbgen.seen.known import known_bugs

if TYPE_CHECKING:
    from kbgen.store import Kb

__all__ = ["duplicate_target", "warn_if_known"]


def duplicate_target(kb: Kb, given: str | None) -> str | None:
    """The id ``--duplicate-of`` names (an alias resolves), or None."""
    return kb.resolve_bug(given).record.id if given else None


def warn_if_known(kb: Kb, message: str, error: str | None) -> None:
    """Say on stderr which filed bug the crash looks like, and how to file it as its duplicate."""
    same = [k for k in known_bugs(kb, fingerprint_of(message), error) if k.same]
    if same:
        first = same[0]
        click.echo(
            f"warning: this crash looks like {first.id} ({first.status}; {first.why}); "
            f"file it with --duplicate-of {first.id}, or add to {first.id} instead",
            err=True,
        )
