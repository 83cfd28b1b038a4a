"""Turn bug reports written by hand in Markdown into kbgen bug records.

A report is read (mojibake repaired with ftfy), split into sections by heading, and the
sections kbgen has fields for are moved into the frontmatter: the id, severity, status (from
the frontmatter or a ticked status checklist), the environment list, the error message. Every
other section stays in the body as it was written, and frontmatter keys kbgen has no field for
are listed at the end of the body, so nothing is lost. A report whose template was pasted in
unfilled next to the real content loses only the sections that say nothing but placeholders.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbgen import clock
from kbgen.errors import KbgenError
from kbgen.importer.markdown import (
    Section,
    checklist,
    fenced_blocks,
    is_placeholder,
    label_lines,
    parse_sections,
    repair_mojibake,
)
from kbgen.models import BUG_ID_RE, Bug, Environment, Event, EventKind, Severity, Status
from kbgen.redact import redact_text
from kbgen.store import Kb

_SEVERITY_WORDS = {
    Severity.critical: ("critical", "blocker", "urgent", "p0", "highest"),
    Severity.high: ("high", "major", "p1", "important"),
    Severity.medium: ("medium", "normal", "moderate", "p2"),
    Severity.low: ("low", "minor", "trivial", "p3", "p4", "lowest"),
}
_STATUS_WORDS = {
    Status.open: ("open", "new", "draft", "todo", "reported", "triage", "pending"),
    Status.confirmed: ("confirmed", "reproduced", "accepted"),
    Status.investigating: ("investigating", "active", "in progress", "in-progress", "debugging", "ongoing"),
    Status.fix_in_progress: ("fix in progress", "fix-in-progress", "fixing"),
    Status.fixed: ("fixed", "resolved", "done", "closed", "complete", "completed"),
    Status.verified: ("verified",),
    Status.wontfix: ("wontfix", "won't fix", "wont fix", "rejected", "invalid"),
    Status.duplicate: ("duplicate",),
}
#: the order a status checklist is ticked in; the last ticked item is the status
_CHECKLIST_ORDER = [
    Status.confirmed,
    Status.investigating,
    Status.fix_in_progress,
    Status.fixed,
    Status.verified,
]
_ENV_KEYS = {
    "operating system": "os",
    "python version": "python",
    "pytorch": "torch",
    "pytorch version": "torch",
    "torch version": "torch",
    "cuda version": "cuda",
    "cudnn version": "cudnn",
    "nvidia driver": "driver",
    "driver version": "driver",
    "gpu model": "gpu",
}
_TITLE_PREFIX = re.compile(r"^(?:bug(?: report)?|BUG-\d{8}-\d+)\s*[:\-–]\s*", re.IGNORECASE)
_TZ = {"UTC": 0, "GMT": 0, "Z": 0, "KST": 9, "JST": 9, "CST": 8, "IST": 5.5, "CET": 1, "CEST": 2,
       "BST": 1, "EST": -5, "EDT": -4, "CDT": -5, "MST": -7, "MDT": -6, "PST": -8, "PDT": -7}  # fmt: skip
#: frontmatter keys a report may carry that become fields (or are the title/body itself)
_USED_KEYS = {"bug_id", "id", "title", "severity", "priority", "status", "tags", "date", "created",
              "timestamp", "assignee", "owner"}  # fmt: skip


@dataclass
class Draft:
    """What importing one report would write."""

    source: Path
    bug_id: str | None  # None: a new id is allocated when written
    values: dict[str, Any]
    body: str
    notes: list[str] = field(default_factory=list)
    day: dt.date | None = None

    def render(self, bug_id: str) -> str:
        """The bug file's text under ``bug_id``."""
        from kbgen.roundtrip import dump_keys

        return f"---\n{dump_keys({'id': bug_id, **self.values})}---\n{self.body}"


def read_report(path: Path) -> tuple[dict[str, Any], str, list[str]]:
    """Frontmatter (may be empty), body and repair notes of a Markdown report; user errors raised."""
    from kbgen.fileio import Unreadable, read_limited
    from kbgen.yamlio import FrontmatterError, parse_document

    try:
        raw = read_limited(path, what="the report")
    except Unreadable as exc:
        raise KbgenError(f"{path}: {exc.message}; nothing was written") from None
    except OSError as exc:
        raise KbgenError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if b"\x00" in raw[:8192]:
        raise KbgenError(f"{path}: looks like a binary file, not a Markdown report; nothing was written")
    text = raw.decode("utf-8", errors="replace").removeprefix("\ufeff")
    text, notes = repair_mojibake(text)
    # Secrets and home folders go before anything is parsed, so no field or section keeps one.
    clean = redact_text(text, user="")
    if clean != text:
        text = clean
        notes.append("secrets or home paths redacted")
    if not text.strip():
        raise KbgenError(f"{path}: the file is empty; nothing was written")
    if not text.startswith("---"):
        return {}, text, notes
    try:
        parsed = parse_document(text)
    except FrontmatterError as exc:
        where = f"{path}:{exc.line}" if exc.line else str(path)
        raise KbgenError(
            f"{where}: {exc}; nothing was written",
            hint="fix the block between the '---' lines and import again",
        ) from None
    return parsed.data, parsed.body, notes


def draft_report(path: Path, kb: Kb) -> Draft:
    """Map one report onto a bug record; raises KbgenError when it cannot become a valid one."""
    meta, body, notes = read_report(path)
    sections, preamble = parse_sections(body)
    dropped = _drop_placeholders(sections)
    if dropped:
        notes.append(f"dropped {dropped} unfilled template section(s)")
    title = _title(meta, sections, path)
    values: dict[str, Any] = {"title": title}
    bug_id = _bug_id(meta, sections, notes)
    values["status"] = _status(meta, sections, notes)
    values["severity"] = _severity(meta, sections, notes)
    created = _created(meta) or clock.now()
    now = clock.now()
    values.update(created=created, updated=now)
    if tags := _tags(meta.get("tags")):
        values["tags"] = tags
    if assignee := _assignee(meta, sections):
        values["assignee"] = assignee
    if message := _message(sections):
        values["message"] = message
        if error := _error_type(message, kb, notes):
            from kbgen.bugs import progress_from

            values["error"] = error
            if steps := progress_from(kb, error):
                values["progress"] = steps
    if env := _environment(sections):
        values["environments"] = [Environment(facts=env)]
    note = f"imported from {path.name}" + (f" ({'; '.join(notes)})" if notes else "")
    values["history"] = [Event(at=now, kind=EventKind.imported, by=clock.user(), note=note)]
    text = _body(preamble, sections, {k: v for k, v in meta.items() if k not in _USED_KEYS}, meta, title)
    draft = Draft(path, bug_id, values, text, notes, created.date())
    _check(draft, path)
    return draft


def _check(draft: Draft, path: Path) -> None:
    from pydantic import ValidationError

    try:
        Bug.model_validate({"id": draft.bug_id or "BUG-20000101-001", **draft.values})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise KbgenError(f"{path}: {where}: {first['msg']}; nothing was written") from None


# --------------------------------------------------------------------------- fields


def _drop_placeholders(sections: list[Section]) -> int:
    """Mark sections that hold nothing but template placeholders as dropped."""
    count = 0
    for section in sections:
        if not section.dropped and section.placeholder_only():
            section.drop()
            count += 1
    return count


def _consume(section: Section) -> None:
    # a section with sub-sections keeps its heading, or they would land under the one before
    section.consumed = not section.children


def _find(sections: list[Section], *names: str) -> Section | None:
    wanted = {n.lower() for n in names}
    return next((s for s in sections if not s.dropped and s.key in wanted), None)


def _title(meta: dict[str, Any], sections: list[Section], path: Path) -> str:
    heading = next((s for s in sections if s.level == 1 and not s.dropped), None)
    if heading is not None:
        heading.heading_used = True
        title = _TITLE_PREFIX.sub("", heading.heading).strip()
    else:
        title = str(meta.get("title") or path.stem.replace("_", " ")).strip()
    return title[:300] or path.stem


def _bug_id(meta: dict[str, Any], sections: list[Section], notes: list[str]) -> str | None:
    candidates = [str(meta[k]).strip() for k in ("bug_id", "id") if meta.get(k)]
    section = _find(sections, "bug id", "id")
    if section is not None:
        candidates.append(section.own_text().strip().splitlines()[0] if section.own_text().strip() else "")
        _consume(section)
    for value in candidates:
        if re.fullmatch(BUG_ID_RE, value):
            return value
        if value:
            notes.append(f"id {value!r} is not of the form BUG-YYYYMMDD-NNN; a new id was given")
    return None


def _word_match(value: str, table: dict[Any, tuple[str, ...]]) -> Any:
    text = re.sub(r"[*_`]", "", value).strip().lower()
    for result, words in table.items():
        if text in words:
            return result
    return None


def _status(meta: dict[str, Any], sections: list[Section], notes: list[str]) -> Status:
    status = Status.open
    raw = str(meta.get("status") or "").strip()
    if raw:
        found = _word_match(raw, _STATUS_WORDS)
        if found is None:
            notes.append(f"status {raw!r} is not one kbgen knows; set to open")
        status = found or Status.open
    section = _find(sections, "status")
    ticked = _checklist_status(section) if section is not None else None
    if ticked is not None:
        status = ticked
        assert section is not None
        _consume(section)
    if status == Status.verified:
        notes.append("marked verified by hand; kept as fixed until a repro probe passes")
        status = Status.fixed
    return status


def _checklist_status(section: Section) -> Status | None:
    items = checklist(section.own_text())
    if not items or any(_word_match(label, _STATUS_WORDS) is None for label, _ in items):
        return None
    ticked = [_word_match(label, _STATUS_WORDS) for label, done in items if done]
    ranked = [s for s in _CHECKLIST_ORDER if s in ticked]
    return ranked[-1] if ranked else None  # nothing ticked says nothing


def _severity(meta: dict[str, Any], sections: list[Section], notes: list[str]) -> Severity:
    for key in ("severity", "priority"):
        if meta.get(key):
            found = _word_match(str(meta[key]), _SEVERITY_WORDS)
            if found is not None:
                return found
            notes.append(f"{key} {meta[key]!r} is not one kbgen knows")
    for section in sections:
        if section.dropped:
            continue
        for label, value in label_lines(section.own_text()):
            if label.lower() in ("severity", "priority") and (found := _word_match(value, _SEVERITY_WORDS)):
                return found
    return Severity.medium


def _created(meta: dict[str, Any]) -> dt.datetime | None:
    for key in ("created", "timestamp", "date"):
        value = meta.get(key)
        if isinstance(value, dt.datetime):
            return value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
        if isinstance(value, dt.date):
            return dt.datetime(value.year, value.month, value.day, tzinfo=dt.timezone.utc)
        if isinstance(value, str) and (parsed := _parse_time(value)):
            return parsed
    return None


def _parse_time(text: str) -> dt.datetime | None:
    match = re.fullmatch(
        r"\s*(\d{4}-\d\d-\d\d)(?:[ T](\d\d?:\d\d(?::\d\d)?))?\s*\(?([A-Za-z]{1,5}|[+-]\d\d:?\d\d)?\)?\s*",
        text,
    )
    if not match:
        return None
    day, time, zone = match.groups()
    try:
        value = dt.datetime.fromisoformat(f"{day}T{time or '00:00'}")
    except ValueError:
        return None
    if zone and zone.upper() in _TZ:
        return value.replace(tzinfo=dt.timezone(dt.timedelta(hours=_TZ[zone.upper()])))
    if zone and zone[0] in "+-":
        try:
            return dt.datetime.fromisoformat(f"{day}T{time or '00:00'}{zone}")
        except ValueError:  # +24:00 and beyond
            return None
    return value.replace(tzinfo=dt.timezone.utc)


def _tags(value: Any) -> list[str]:
    items = value if isinstance(value, list) else re.split(r"[,\s]+", str(value or ""))
    return list(dict.fromkeys(str(t).strip() for t in items if str(t).strip()))


def _assignee(meta: dict[str, Any], sections: list[Section]) -> str | None:
    for key in ("assignee", "owner"):
        if meta.get(key):
            return str(meta[key]).strip()
    section = _find(sections, "assignee", "owner")
    text = section.own_text().strip() if section is not None else ""
    if section is not None and text and "\n" not in text and not is_placeholder(text):
        _consume(section)
        return text
    return None


def _message(sections: list[Section]) -> str | None:
    section = _find(sections, "error messages", "error message", "error")
    if section is not None:
        blocks = fenced_blocks(section.own_text())
        text = "\n\n".join(blocks) if blocks else section.own_text().strip()
        if text and not is_placeholder(text):
            if blocks or "\n" not in text:
                _consume(section)
            return text
    behaviour = _find(sections, "actual behavior", "actual behaviour")
    for candidate in [behaviour, *(behaviour.children if behaviour else [])]:
        for block in fenced_blocks(candidate.own_text()) if candidate else []:
            if re.search(r"Error|Exception", block):
                return block  # the section stays in the body as well
    return None


def _error_type(message: str, kb: Kb, notes: list[str]) -> str | None:
    from kbgen.triage import triage_text

    try:
        found = triage_text(message, kb).matches
    except KbgenError:
        return None
    if found:
        notes.append(f"error type {found[0].error} recognised in the error message")
        return found[0].error
    return None


def _environment(sections: list[Section]) -> dict[str, str]:
    section = _find(sections, "environment", "system information", "system info")
    if section is None:
        return {}
    values: dict[str, str] = {}
    lines = label_lines(section.own_text(), nested=True)
    for label, value in lines:
        if not value or is_placeholder(value):
            continue
        key = label.strip().lower()
        key = _ENV_KEYS.get(key, re.sub(r"[^a-z0-9]+", "_", key).strip("_"))
        values.setdefault(key or "value", value)
    if lines and section.only_labels():
        _consume(section)
    return values


# --------------------------------------------------------------------------- body


def _body(
    preamble: str, sections: list[Section], extra: dict[str, Any], meta: dict[str, Any], title: str
) -> str:
    parts = [preamble.strip("\n")] if preamble.strip() else []
    parts.extend(text for s in sections if (text := s.render()))
    if meta.get("title") and str(meta["title"]).strip() != title:
        extra = {"title": meta["title"], **extra}
    if extra:
        listed = "\n".join(f"- **{k}:** {_plain(v)}" for k, v in extra.items())
        parts.append(
            f"## Imported metadata\n\nKeys of the original frontmatter kbgen has no field for:\n\n{listed}"
        )
    return "\n\n".join(parts).strip("\n") + "\n"


def _plain(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "(empty)"
    return str(value)


# --------------------------------------------------------------------------- writing


@dataclass
class ImportOutcome:
    """What happened to one report: ``written``, ``would-write``, ``exists`` or ``error``."""

    source: Path
    state: str
    bug_id: str | None = None
    path: Path | None = None
    message: str = ""
    draft: Draft | None = None


def import_report(path: Path, kb: Kb, *, dry_run: bool = False) -> ImportOutcome:
    """Import one report into kb/bugs/ (or, with ``dry_run``, say what would be written)."""
    from kbgen.bugs import claim_id, slugify, taken_ids

    try:
        draft = draft_report(path, kb)
    except KbgenError as exc:
        return ImportOutcome(path, "error", message=str(exc))
    folder = kb.project.folder("bug")
    slug = slugify(draft.values["title"])
    taken = taken_ids(kb.project)
    if draft.bug_id is not None and draft.bug_id in taken:
        holder = next((p for p in kb.claims.get(draft.bug_id, [])), None)
        where = f" ({kb.project.rel(holder)})" if holder else ""
        return ImportOutcome(
            path, "exists", draft.bug_id, holder, f"{draft.bug_id} already exists{where}", draft
        )
    if dry_run:
        bug_id = draft.bug_id or _next_id(draft.day or clock.now().date(), taken)
        return ImportOutcome(path, "would-write", bug_id, folder / f"{bug_id}-{slug}.md", draft=draft)
    if draft.bug_id is None:
        bug_id, written = claim_id(kb.project, draft.day or clock.now().date(), draft.render, slug)
        return ImportOutcome(path, "written", bug_id, written, draft=draft)
    return _write_as(draft, draft.bug_id, folder / f"{draft.bug_id}-{slug}.md", kb)


def _write_as(draft: Draft, bug_id: str, target: Path, kb: Kb) -> ImportOutcome:
    from kbgen.store import atomic_write, encode

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, encode(draft.render(bug_id)), exclusive=True)
    except FileExistsError:
        return ImportOutcome(
            draft.source, "exists", bug_id, target, f"{kb.project.rel(target)} already exists", draft
        )
    except OSError as exc:
        return ImportOutcome(draft.source, "error", message=f"{target}: cannot write: {exc.strerror}")
    return ImportOutcome(draft.source, "written", bug_id, target, draft=draft)


def _next_id(day: dt.date, taken: set[str]) -> str:
    from kbgen.bugs import stamp

    prefix = stamp(day)
    used = [int(m.group(2)) for t in taken if (m := re.fullmatch(BUG_ID_RE, t)) and m.group(1) == prefix]
    return f"BUG-{prefix}-{max(used, default=0) + 1:03d}"
