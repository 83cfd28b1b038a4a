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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbgen import clock
from kbgen.errors import KbgenError
from kbgen.fieldwords import describe_error
from kbgen.importer.fields import (
    USED_KEYS,
    assignee_of,
    bug_id_of,
    created_of,
    drop_placeholders,
    environment_of,
    error_type_of,
    message_of,
    severity_of,
    status_of,
    tags_of,
    title_of,
)
from kbgen.importer.markdown import (
    Section,
    parse_sections,
    repair_mojibake,
)
from kbgen.models import Bug, Environment, Event, EventKind
from kbgen.redact import redact_text
from kbgen.store import Kb


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
        """The bug file's text under ``bug_id``, written as every bug file is (see roundtrip.compose)."""
        from kbgen.bugs.roundtrip import compose

        return compose(Bug.model_validate({"id": bug_id, **self.values}), self.body)


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
    dropped = drop_placeholders(sections)
    if dropped:
        notes.append(f"dropped {dropped} unfilled template section(s)")
    title = title_of(meta, sections, path)
    values: dict[str, Any] = {"title": title}
    bug_id = bug_id_of(meta, sections, notes)
    values["status"] = status_of(meta, sections, notes)
    values["severity"] = severity_of(meta, sections, notes)
    created = created_of(meta) or clock.now()
    now = clock.now()
    values.update(created=created, updated=now)
    if tags := tags_of(meta.get("tags")):
        values["tags"] = tags
    if assignee := assignee_of(meta, sections):
        values["assignee"] = assignee
    if message := message_of(sections):
        values["message"] = message
        if error := error_type_of(message, kb, notes):
            from kbgen.bugs.create import progress_from

            values["error"] = error
            if steps := progress_from(kb, error):
                values["progress"] = steps
    if env := environment_of(sections):
        values["environments"] = [Environment(facts=env)]
    elif pasted := _pasted(body, path):  # a pasted collect_env, nvidia-smi, ...: the probes' fact names
        values["environments"] = [pasted]
    note = f"imported from {path.name}" + (f" ({'; '.join(notes)})" if notes else "")
    values["history"] = [Event(at=now, kind=EventKind.imported, by=clock.user(), note=note)]
    text = _body(preamble, sections, {k: v for k, v in meta.items() if k not in USED_KEYS}, meta, title)
    draft = Draft(path, bug_id, values, text, notes, created.date())
    _check(draft, path)
    return draft


def _pasted(body: str, path: Path) -> Environment | None:
    from kbgen.envreport.pasted import pasted_environment

    return pasted_environment(body, f"pasted in {path.name}")


def _check(draft: Draft, path: Path) -> None:
    from pydantic import ValidationError

    try:
        Bug.model_validate({"id": draft.bug_id or "BUG-20000101-001", **draft.values})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise KbgenError(f"{path}: {where}: {describe_error(first)}; nothing was written") from None


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
    from kbgen.bugs.ids import claim_id, next_id, slugify, taken_ids

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
        bug_id = draft.bug_id or next_id(draft.day or clock.now().date(), taken)
        return ImportOutcome(path, "would-write", bug_id, folder / f"{bug_id}-{slug}.md", draft=draft)
    if draft.bug_id is None:
        bug_id, written = claim_id(kb.project, draft.day or clock.now().date(), draft.render, slug)
        return ImportOutcome(path, "written", bug_id, written, draft=draft)
    return _write_as(draft, draft.bug_id, folder / f"{draft.bug_id}-{slug}.md", kb)


def _write_as(draft: Draft, bug_id: str, target: Path, kb: Kb) -> ImportOutcome:
    """Write the report under the id it names, holding kb/bugs' lock as :func:`claim_id` does, so
    no new bug takes that id (as its name or an alias) between the check and the write."""
    from kbgen.bugs.ids import taken_ids
    from kbgen.fileio import locked_folder
    from kbgen.store import atomic_write, encode

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with locked_folder(target.parent):
            if bug_id in taken_ids(kb.project):
                raise FileExistsError(target)
            atomic_write(target, encode(draft.render(bug_id)), exclusive=True)
    except FileExistsError:
        return ImportOutcome(
            draft.source, "exists", bug_id, target, f"{kb.project.rel(target)} already exists", draft
        )
    except OSError as exc:
        return ImportOutcome(draft.source, "error", message=f"{target}: cannot write: {exc.strerror}")
    return ImportOutcome(draft.source, "written", bug_id, target, draft=draft)
