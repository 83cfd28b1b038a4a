"""Bug lifecycle: mint a new numbered report, renumber a clashing one, change status.

Ids are ``BUG-YYYYMMDD-NNN``. A new file is created with a hard link from a finished temporary
file, which fails if the name exists: two processes can never get the same id on one machine,
and no reader ever sees a half-written report.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kbgen import clock
from kbgen.errors import ConflictError, KbgenError, UnknownIdError, relpath
from kbgen.models import BUG_ID_RE, Bug, Event, EventKind, ProgressStep, Severity, Status
from kbgen.roundtrip import plain, save_changes, splice
from kbgen.store import Entry, Kb, Project, atomic_write, check_id, encode, entry_files

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


def parse_date(value: str) -> dt.date:
    """Accept ``YYYY-MM-DD`` or ``YYYYMMDD``."""
    for fmt in ("%Y-%m-%d", "%Y%m%d"):
        try:
            return dt.datetime.strptime(value, fmt).date()
        except ValueError:
            continue
    raise KbgenError(f"--date {value!r}: expected YYYY-MM-DD")


def taken_ids(project: Project) -> set[str]:
    """Every bug id in use: file names, plus aliases (read cheaply, without validation)."""
    taken: set[str] = set()
    for path in entry_files(project.folder("bug")):
        if match := re.match(r"BUG-\d{8}-\d{3,}", path.stem):
            taken.add(match.group(0))
        try:
            head = path.read_text(encoding="utf-8", errors="replace")[:65536]
        except OSError:
            continue
        taken.update(re.findall(r"BUG-\d{8}-\d{3,}", _aliases_block(head)))
    return taken


def _aliases_block(text: str) -> str:
    match = re.search(r"^aliases:(.*?)(?=^\S|\Z)", text, re.MULTILINE | re.DOTALL)
    return match.group(1) if match else ""


def _candidates(day: dt.date, taken: set[str]) -> Any:
    stamp = day.strftime("%Y%m%d")
    used = [int(m.group(2)) for t in taken if (m := re.fullmatch(BUG_ID_RE, t)) and m.group(1) == stamp]
    start = max(used, default=0) + 1
    for number in range(start, start + _MAX_TRIES):
        yield f"BUG-{stamp}-{number:03d}"


def slugify(title: str, words: int = 6) -> str:
    """A short file-name tail from a title: ``CUDA OOM in val loop`` -> ``cuda-oom-in-val-loop``."""
    import unicodedata

    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    parts = re.findall(r"[a-z0-9]+", ascii_title.lower())[:words]
    return "-".join(parts)[:60].strip("-")


@contextmanager
def _allocation_lock(folder: Path) -> Iterator[None]:
    """Serialise id allocation between processes on this machine (flock where available)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: the exclusive link alone still protects
        yield
        return
    try:
        handle = open(folder / ".kbgen-alloc.lock", "a+b")  # noqa: SIM115
    except OSError as exc:
        raise KbgenError(
            f"{relpath(folder)}: cannot write here: {exc.strerror}", hint="check the folder's permissions"
        ) from None
    with handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


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
    with _allocation_lock(folder):
        taken = taken_ids(project)
        for bug_id in _candidates(day, taken):
            path = folder / (f"{bug_id}-{slug}.md" if slug else f"{bug_id}.md")
            try:
                atomic_write(path, encode(render(bug_id)), exclusive=True)
            except FileExistsError:
                continue
            return bug_id, path
    raise KbgenError(f"no free bug id left for {day}")  # pragma: no cover


def progress_from(kb: Kb, error_id: str | None) -> list[ProgressStep]:
    """The error type's diagnostic steps, as the new bug's (pending) checklist."""
    if not error_id:
        return []
    error = kb.errors[error_id].record
    return [ProgressStep(id=s.id, title=s.title, probe=s.probe) for s in error.diagnostics]


def create_bug(kb: Kb, new: NewBug, *, template: Any) -> tuple[str, Path]:
    """Render ``template`` for a new bug, claim the next id and write it; returns (id, path)."""
    if new.error and new.error not in kb.errors:
        import difflib

        close = difflib.get_close_matches(new.error, list(kb.errors), n=1, cutoff=0.5)
        guess = f"; did you mean '{close[0]}'?" if close else ""
        raise UnknownIdError(
            f"--error {new.error!r}: no such error type{guess}",
            hint="`kbgen triage LOG` suggests one; the error types are in kb/errors/",
        )
    now = clock.now()
    day = new.date or now.date()
    steps = progress_from(kb, new.error)

    def render(bug_id: str) -> str:
        bug = Bug(
            id=bug_id,
            title=new.title,
            created=now,
            updated=now,
            severity=new.severity,
            error=new.error,
            message=new.message,
            repro=new.repro,
            tags=new.tags,
            assignee=new.assignee,
            progress=steps,
            history=[Event(at=now, kind=EventKind.created, by=clock.user())],
        )
        return str(template.render(bug=bug, error=kb.errors[new.error].record if new.error else None))

    return claim_id(kb.project, day, render, slugify(new.title))


def _event(kind: EventKind, **values: Any) -> Event:
    return Event(at=clock.now(), kind=kind, by=clock.user(), **values)


def set_status(entry: Entry, status: Status, note: str | None) -> bool:
    """Move a bug to ``status`` with a history event; False when it already has it and no note."""
    bug: Bug = entry.record
    if bug.status == status and not note:
        return False
    kind = EventKind.status if bug.status != status else EventKind.note
    event = _event(kind, old=bug.status.value, new=status.value, note=note)
    history = [*bug.history, event]
    save_changes(entry.source, {"status": status, "updated": event.at, "history": history})
    return True


def renumber(kb: Kb, bug_id: str, day: dt.date | None = None) -> tuple[str, Path]:
    """Move a bug to the next free id (of its own date), keeping the old id as an alias."""
    check_id(bug_id, "bug")
    paths = kb.claims.get(bug_id) or []
    if not paths:
        raise UnknownIdError(f"no bug file claims {bug_id}")
    # after a merge two files claim the id: move the one created last, keep the first in place
    from kbgen.store import read_entry

    entries = sorted(
        (read_entry(p, "bug", kb.project) for p in paths), key=lambda e: (e.record.created, e.path.name)
    )
    entry = entries[-1]
    path = entry.path
    bug: Bug = entry.record
    slug = path.stem[len(bug_id) + 1 :]
    event = _event(EventKind.renumber, old=bug_id)
    target_day = day or dt.datetime.strptime(bug.date, "%Y%m%d").date()

    def render(new_id: str) -> str:
        event.new = new_id
        changes = {
            "id": new_id,
            "aliases": sorted({*bug.aliases, bug_id}),
            "updated": event.at,
            "history": [*bug.history, event],
        }
        return splice(entry.source, changes)

    new_id, new_path = claim_id(kb.project, target_day, render, slug)
    if _digest(path) != entry.source.digest:  # edited meanwhile: keep the person's version
        new_path.unlink()
        raise ConflictError(
            f"{kb.project.rel(path)}: changed on disk since kbgen read it; nothing was renumbered",
            hint="run the command again to work from the new version",
        )
    try:
        path.unlink()
    except OSError as exc:
        raise KbgenError(
            f"{kb.project.rel(path)}: wrote {new_id} but could not remove: {exc.strerror}"
        ) from None
    return new_id, new_path


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def yaml_scalar(value: Any) -> str:
    """One YAML value on one line (or a literal block for multi-line text), safe for any input."""
    value = plain(value)
    if isinstance(value, dt.datetime):
        return value.isoformat(timespec="seconds")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, str) and "\n" in value:
        dumped = yaml.safe_dump(value, default_style="|", allow_unicode=True, width=10_000)
        return dumped.rstrip("\n").removesuffix("\n...")
    dumped = yaml.safe_dump(value, default_flow_style=True, allow_unicode=True, width=10_000)
    return dumped.rstrip("\n").removesuffix("\n...").rstrip("\n")
