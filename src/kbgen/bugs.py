"""Bug lifecycle: mint a new numbered report, renumber a clashing one, change status.

Ids are ``BUG-YYYYMMDD-NNN``. A new file is created with a hard link from a finished temporary
file, which fails if the name exists: two processes can never get the same id on one machine,
and no reader ever sees a half-written report.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbgen import clock
from kbgen.errors import ConflictError, EntryError, KbgenError, UnknownIdError
from kbgen.fieldwords import describe_error
from kbgen.fileio import Unreadable, locked, locked_folder, read_limited
from kbgen.models import BUG_ID_RE, Bug, Event, EventKind, ProgressStep, Severity, Status, StepState
from kbgen.redact import redact_text
from kbgen.roundtrip import compose, key_order, splice
from kbgen.seen.fingerprint import fingerprint_of
from kbgen.store import Entry, Kb, Project, atomic_write, check_id, encode, entry_files

if TYPE_CHECKING:
    from kbgen.bugfile import BodyTemplate

_MAX_TRIES = 10_000


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


def stamp(day: dt.date) -> str:
    """``YYYYMMDD`` with the year in four digits (strftime writes year 1 as ``1``)."""
    return f"{day.year:04d}{day.month:02d}{day.day:02d}"


_ID_IN_TEXT = re.compile(r"BUG-[0-9]{8}-[0-9]{3,}")


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
    return ids | set(_ID_IN_TEXT.findall(_aliases_block(head)))


def _aliases_block(text: str) -> str:
    match = re.search(r"^aliases:(.*?)(?=^\S|\Z)", text, re.MULTILINE | re.DOTALL)
    return match.group(1) if match else ""


def _candidates(day: dt.date, taken: set[str]) -> Any:
    prefix = stamp(day)
    used = [int(m.group(2)) for t in taken if (m := re.fullmatch(BUG_ID_RE, t)) and m.group(1) == prefix]
    start = max(used, default=0) + 1
    for number in range(start, start + _MAX_TRIES):
        yield f"BUG-{prefix}-{number:03d}"


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
    ``template`` (see :mod:`kbgen.bugfile`); returns (id, path)."""
    draft = draft_bug(kb, new, template=template)
    draft.render(f"BUG-{stamp(draft.day)}-001")  # refuse bad values before an id is claimed
    return claim_id(kb.project, draft.day, draft.render, draft.slug)


def draft_bug(
    kb: Kb, new: NewBug, *, template: BodyTemplate, adjust: Callable[[Bug], Bug] | None = None
) -> BugDraft:
    """The new bug :func:`create_bug` writes, not yet written; ``adjust`` changes the record
    (once it has its id) before its frontmatter is written, the body staying the template's."""
    if new.error and new.error not in kb.errors:
        import difflib

        close = difflib.get_close_matches(new.error, list(kb.errors), n=1, cutoff=0.5)
        guess = f"; did you mean '{close[0]}'?" if close else ""
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


def _event(kind: EventKind, **values: Any) -> Event:
    return Event(at=clock.now(), kind=kind, by=clock.user(), **values)


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
    event = _event(EventKind.renumber, old=bug_id)
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
    from kbgen.leftovers import is_unchanged_copy

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
