"""Reading a hand-written report's fields: title, id, status, severity, dates, people, the error."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any, TypeVar

from kbgen.errors import KbgenError
from kbgen.importer.markdown import Section, checklist, fenced_blocks, label_lines
from kbgen.mdtext import is_placeholder
from kbgen.models import BUG_ID, BUG_ID_RE, Severity, Status
from kbgen.store import Kb

W = TypeVar("W", Severity, Status)
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
_TITLE_PREFIX = re.compile(rf"^(?:bug(?: report)?|{BUG_ID})\s*[:\-–]\s*", re.IGNORECASE)
_TZ = {"UTC": 0, "GMT": 0, "Z": 0, "KST": 9, "JST": 9, "CST": 8, "IST": 5.5, "CET": 1, "CEST": 2,
       "BST": 1, "EST": -5, "EDT": -4, "CDT": -5, "MST": -7, "MDT": -6, "PST": -8, "PDT": -7}  # fmt: skip
#: frontmatter keys a report may carry that become fields (or are the title/body itself)
USED_KEYS = {"bug_id", "id", "title", "severity", "priority", "status", "tags", "date", "created",
              "timestamp", "assignee", "owner"}  # fmt: skip


def drop_placeholders(sections: list[Section]) -> int:
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


def title_of(meta: dict[str, Any], sections: list[Section], path: Path) -> str:
    heading = next((s for s in sections if s.level == 1 and not s.dropped), None)
    if heading is not None:
        heading.heading_used = True
        title = _TITLE_PREFIX.sub("", heading.heading).strip()
    else:
        title = str(meta.get("title") or path.stem.replace("_", " ")).strip()
    return title[:300] or path.stem


def bug_id_of(meta: dict[str, Any], sections: list[Section], notes: list[str]) -> str | None:
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


def _word_match(value: str, table: dict[W, tuple[str, ...]]) -> W | None:
    text = re.sub(r"[*_`]", "", value).strip().lower()
    for result, words in table.items():
        if text in words:
            return result
    return None


def status_of(meta: dict[str, Any], sections: list[Section], notes: list[str]) -> Status:
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


def severity_of(meta: dict[str, Any], sections: list[Section], notes: list[str]) -> Severity:
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


def created_of(meta: dict[str, Any]) -> dt.datetime | None:
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


def tags_of(value: Any) -> list[str]:
    items = value if isinstance(value, list) else re.split(r"[,\s]+", str(value or ""))
    return list(dict.fromkeys(str(t).strip() for t in items if str(t).strip()))


def assignee_of(meta: dict[str, Any], sections: list[Section]) -> str | None:
    for key in ("assignee", "owner"):
        if meta.get(key):
            return str(meta[key]).strip()
    section = _find(sections, "assignee", "owner")
    text = section.own_text().strip() if section is not None else ""
    if section is not None and text and "\n" not in text and not is_placeholder(text):
        _consume(section)
        return text
    return None


def message_of(sections: list[Section]) -> str | None:
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


def error_type_of(message: str, kb: Kb, notes: list[str]) -> str | None:
    from kbgen.triage import triage_text

    try:
        found = triage_text(message, kb).matches
    except KbgenError:
        return None
    if found:
        notes.append(f"error type {found[0].error} recognised in the error message")
        return found[0].error
    return None


def environment_of(sections: list[Section]) -> dict[str, str]:
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
