"""A new bug: the record made from what a person (or a log) says, written under a fresh id
(:mod:`kbgen.bugs.ids`) by the one writer of record files (:mod:`kbgen.bugs.roundtrip`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbgen import clock
from kbgen.bugs.ids import claim_id, slugify, stamp
from kbgen.bugs.roundtrip import compose
from kbgen.errors import KbgenError, UnknownIdError, did_you_mean
from kbgen.fieldwords import describe_error
from kbgen.fingerprint import fingerprint_of
from kbgen.models import Bug, Event, EventKind, ProgressStep, Severity, Status, StepState
from kbgen.redact import redact_text
from kbgen.store import Kb

if TYPE_CHECKING:
    from kbgen.bugs.body import BodyTemplate
    from kbgen.triage import Compiled


@dataclass
class NewBug:
    """What a person (or a log) tells kbgen about a new bug."""

    title: str
    severity: Severity = Severity.medium
    error: str | None = None
    tags: list[str] = field(default_factory=list)
    assignee: str | None = None
    message: str | None = None
    repro: str | None = None
    date: dt.date | None = None
    duplicate_of: str | None = None


def parse_date(value: str) -> dt.date:
    """Accept ``YYYY-MM-DD`` or ``YYYYMMDD`` (ASCII digits only: the date becomes part of an id)."""
    for fmt in ("%Y-%m-%d", "%Y%m%d"):
        try:
            if value.isascii():
                return dt.datetime.strptime(value, fmt).date()
        except ValueError:
            continue
    raise KbgenError(f"--date {value!r}: expected YYYY-MM-DD")


def draft_new_bug(kb: Kb, text: str, *, name: str = "<text>", compiled: Compiled | None = None) -> NewBug:
    """A new bug from a log held in memory (``new-bug --from-log``, the output ``kbgen run`` kept,
    an imported issue's log): the title names the primary error type and where it failed, the
    error is that type, the message the redacted excerpt; ``name`` stands for the log in a title
    that finds no error type. ``compiled``: the KB's signatures, built once for many logs."""
    from kbgen.triage import draft_from_text

    log = draft_from_text(text, kb, name, compiled)
    return NewBug(title=log.title, error=log.error, message=log.message)


def steps_from(diagnostics: list[Any]) -> list[ProgressStep]:
    """An error type's diagnostic steps as a pending checklist (what decides each comes along)."""
    keys = ("id", "title", "probe", "decided_by", "fails_if")
    return [ProgressStep(**{k: v for k in keys if (v := getattr(d, k)) is not None}) for d in diagnostics]


def progress_from(kb: Kb, error_id: str | None) -> list[ProgressStep]:
    """The error type's diagnostic steps, as the new bug's (pending) checklist."""
    if not error_id:
        return []
    steps = steps_from(kb.errors[error_id].record.diagnostics)
    for step in steps:
        step.state = StepState.pending  # set, so the file says so: a checklist to work through
    return steps


@dataclass
class BugDraft:
    """A new bug before it has an id: the day its id is stamped with, the tail of its file name,
    and ``render(id)``, the text of its file under that id (KbgenError for a value refused)."""

    day: dt.date
    slug: str
    render: Callable[[str], str]


def create_bug(kb: Kb, new: NewBug, *, template: BodyTemplate) -> tuple[str, Path]:
    """Write a new bug under the next free id: the frontmatter from its fields, the body from
    ``template`` (see :mod:`kbgen.bugs.body`); returns (id, path)."""
    draft = draft_bug(kb, new, template=template)
    draft.render(f"BUG-{stamp(draft.day)}-001")  # refuse bad values before an id is claimed
    return claim_id(kb.project, draft.day, draft.render, draft.slug)


def draft_bug(
    kb: Kb, new: NewBug, *, template: BodyTemplate, adjust: Callable[[Bug], Bug] | None = None
) -> BugDraft:
    """The new bug :func:`create_bug` writes, not yet written; ``adjust`` changes the record
    (once it has its id) before its frontmatter is written, the body staying the template's."""
    if new.error and new.error not in kb.errors:
        guess = did_you_mean(new.error, kb.errors, cutoff=0.5)
        guess = f"; {guess}" if guess else ""
        raise UnknownIdError(
            f"--error {new.error!r}: no such error type{guess}",
            hint="`kbgen triage LOG` suggests one; `kbgen kb list --kind error` lists them",
        )
    now = clock.now()
    steps = progress_from(kb, new.error)

    title = redact_text(new.title, user="")
    message = None if new.message is None else redact_text(new.message, user="")

    def render(bug_id: str) -> str:
        bug = _new_record(
            id=bug_id,
            title=title,
            created=now,
            updated=now,
            status=Status.duplicate if new.duplicate_of else Status.open,
            severity=new.severity,
            error=new.error,
            message=message,
            fingerprint=fingerprint_of(message) if message else None,
            duplicate_of=new.duplicate_of,
            repro=new.repro,
            tags=new.tags,
            assignee=new.assignee,
            progress=steps,
            history=[Event(at=now, kind=EventKind.created, by=clock.user())],
        )
        body = template.body(bug, kb.errors[new.error].record if new.error else None)
        return compose(adjust(bug) if adjust is not None else bug, body)

    return BugDraft(new.date or now.date(), slugify(title), render)


#: the command-line option behind each field a person gives new-bug
_OPTIONS = {
    "title": "--title",
    "error": "--error",
    "message": "--message",
    "repro": "--repro",
    "tags": "--tag",
    "assignee": "--assignee",
    "id": "--date",
}


def _new_record(**values: Any) -> Bug:
    """The Bug for new-bug; a value it refuses is a message naming the option, not a traceback."""
    from pydantic import ValidationError

    try:
        return Bug(**values)
    except ValidationError as exc:
        first = exc.errors()[0]
        name = str(first["loc"][0]) if first["loc"] else ""
        value = values.get(name)
        shown = (
            repr(value) if not isinstance(value, str) or len(value) <= 60 else f"({len(value)} characters)"
        )
        option = _OPTIONS.get(name, name)
        reason = describe_error(first)
        if first["type"] == "string_pattern_mismatch":
            reason = "not an id (lowercase letters, digits and dashes, like kb/probes/<id>.py)"
        raise KbgenError(f"{option} {shown}: {reason}") from None
