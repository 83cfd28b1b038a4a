"""Changes a person makes to a bug: status (with the cause and the fix), fixes tried, checklist
steps, and the upgrade of the old single-environment shape.

Every write goes through :func:`save_bug`, which also upgrades a file still in the old shape
(``environment`` + ``findings``), so the next write of any kind leaves the file current.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kbgen import clock
from kbgen.bugs.roundtrip import REMOVE, update_entry
from kbgen.errors import KbgenError, UnknownIdError, did_you_mean
from kbgen.keyfacts import KEY_FACT_KEYS
from kbgen.kinds import CAUSE, FIX, RecordKind
from kbgen.models import (
    AttemptOutcome,
    Bug,
    Environment,
    Event,
    EventKind,
    FixAttempt,
    ProgressStep,
    Record,
    Status,
    StepState,
    legacy_environment,
)
from kbgen.redact import redact_text

if TYPE_CHECKING:
    from kbgen.store import Entry, Kb

LEGACY_KEYS = ("environment", "findings")
STEP_STATES = {"done": StepState.passed, "passed": StepState.passed, "failed": StepState.failed}
STEP_STATES |= {"skipped": StepState.skipped, "pending": StepState.pending}


def history_event(kind: EventKind, **values: Any) -> Event:
    """A history entry of ``kind``, stamped now and by the person running kbgen."""
    return Event(at=clock.now(), kind=kind, by=clock.user(), **values)


def legacy_keys(entry: Entry[Bug]) -> list[str]:
    """The old single-environment keys still in the file (read fine, rewritten on the next write)."""
    return [k for k in LEGACY_KEYS if k in entry.source.parsed.data]


def save_bug(entry: Entry[Bug], make: Callable[[Entry[Bug]], dict[str, Any]]) -> bool:
    """Write ``make(fresh)``'s changes into the bug's file; False if nothing changed.

    The file is read again under its lock and ``make`` computes the changes from that fresh
    copy, so a change another kbgen writer made meanwhile is kept. A file still in the old
    shape is upgraded on the way.
    """

    def change(fresh: Entry[Bug]) -> dict[str, Any]:
        changes = make(fresh)
        if not changes:
            return {}
        writes = dict(changes)
        if legacy_keys(fresh):
            writes.update(dict.fromkeys(legacy_keys(fresh), REMOVE))
            writes.setdefault("environments", fresh.record.environments)
        bug = fresh.record
        Bug.model_validate({**bug.model_dump(by_alias=True), **changes})  # never write a bug that cannot load
        return writes

    _, written = update_entry(entry, change)
    return bool(written)


def _known(kb: Kb, kind: RecordKind[Record], record_id: str, option: str) -> None:
    if record_id not in kb.entries(kind):
        name = kind.name
        raise UnknownIdError(
            f"{option} {record_id!r}: no such {name} in the base layer or kb/{kind.folder}/",
            hint=did_you_mean(record_id, kb.entries(kind)) or f"`kbgen kb list --kind {name}` lists them",
        )


def with_fix(bug: Bug, fix: str, outcome: AttemptOutcome, note: str | None, day: dt.date) -> list[FixAttempt]:
    """``fixes_tried`` with ``fix`` recorded: an earlier attempt of the same fix is updated in place."""
    attempts = list(bug.fixes_tried)
    new = FixAttempt(fix=fix, outcome=outcome, date=day, **({"note": note} if note else {}))
    for i, attempt in enumerate(attempts):
        if attempt.fix == fix:
            kept = {"note": attempt.note} if attempt.note and not note else {}
            attempts[i] = new.model_copy(update=kept)
            return attempts
    return [*attempts, new]


def set_status(
    kb: Kb,
    entry: Entry[Bug],
    status: Status,
    note: str | None,
    *,
    cause: str | None = None,
    fix: str | None = None,
    outcome: AttemptOutcome | None = None,
) -> bool:
    """Move a bug to ``status`` with a history event, naming the cause and the fix when given.

    False when nothing changes. A ``--fix`` without ``--outcome`` on fixed/verified counts as worked.
    """
    if cause:
        _known(kb, CAUSE, cause, "--cause")
    if fix:
        _known(kb, FIX, fix, "--fix")
    note = None if note is None else redact_text(note, user="")

    def make(fresh: Entry[Bug]) -> dict[str, Any]:
        bug = fresh.record
        changes: dict[str, Any] = {}
        parts = [note] if note else []
        if cause:
            if cause not in bug.confirmed_causes:
                changes["confirmed_causes"] = [*bug.confirmed_causes, cause]
            parts.append(f"cause: {cause}")
        if fix:
            closing = status in (Status.fixed, Status.verified)
            how = outcome or (AttemptOutcome.worked if closing else AttemptOutcome.pending)
            changes["fixes_tried"] = with_fix(bug, fix, how, None, clock.now().date())
            parts.append(f"fix: {fix} ({how.value})")
        if bug.status == status and not parts:
            return {}
        kind = EventKind.status if bug.status != status else EventKind.note
        event = history_event(kind, old=bug.status.value, new=status.value, note="; ".join(parts) or None)
        return changes | {"status": status, "updated": event.at, "history": [*bug.history, event]}

    return save_bug(entry, make)


def record_fix(kb: Kb, entry: Entry[Bug], fix: str, outcome: AttemptOutcome, note: str | None) -> bool:
    """Record a fix tried (and how it went) while the bug is still open."""
    _known(kb, FIX, fix, "FIX-ID")

    def make(fresh: Entry[Bug]) -> dict[str, Any]:
        bug = fresh.record
        attempts = with_fix(bug, fix, outcome, note, clock.now().date())
        if attempts == bug.fixes_tried:
            return {}
        event = history_event(EventKind.fix, new=outcome.value, note=f"{fix}" + (f": {note}" if note else ""))
        return {"fixes_tried": attempts, "updated": event.at, "history": [*bug.history, event]}

    return save_bug(entry, make)


def checklist(kb: Kb, bug: Bug) -> list[ProgressStep]:
    """The bug's checklist, or its error type's steps when it has none yet."""
    if bug.progress or not bug.error or bug.error not in kb.errors:
        return list(bug.progress)
    from kbgen.bugs.create import steps_from

    return steps_from(kb.errors[bug.error].record.diagnostics)


def set_step(kb: Kb, entry: Entry[Bug], step_id: str, state: str, note: str | None) -> tuple[str, str]:
    """A person's verdict on one step; returns (old state, new state)."""
    new_state = STEP_STATES[state]
    seen: list[str] = []

    def make(fresh: Entry[Bug]) -> dict[str, Any]:
        bug = fresh.record
        steps = checklist(kb, bug)
        index = next((i for i, s in enumerate(steps) if s.id == step_id), None)
        if index is None:
            ids = ", ".join(s.id for s in steps) or "none"
            raise UnknownIdError(f"{bug.id} has no step {step_id!r}", hint=f"its steps: {ids}")
        old = steps[index]
        seen.append(old.state.value)
        now = clock.now()
        evidence = note or old.evidence if new_state != StepState.pending else note
        steps[index] = old.model_copy(
            update={"state": new_state, "evidence": evidence, "when": now, "host": None, "by": clock.user()}
        )
        note_text = f"step {step_id}" + (f": {note}" if note else "")
        event = history_event(EventKind.step, old=old.state.value, new=new_state.value, note=note_text)
        return {"progress": steps, "updated": now, "history": [*bug.history, event]}

    save_bug(entry, make)
    return seen[-1], new_state.value


# --------------------------------------------------------------------------- migrate


def migrate_bug(kb: Kb, entry: Entry[Bug]) -> list[str]:
    """Upgrade one bug file to the current shape; the keys rewritten (empty when already current)."""
    rewritten: list[str] = []

    def make(fresh: Entry[Bug]) -> dict[str, Any]:
        bug = fresh.record
        changes: dict[str, Any] = {}
        if legacy_keys(fresh):
            changes["environments"] = _migrated_environments(fresh)
        progress = _decided_steps(kb, bug)
        if progress != bug.progress:
            changes["progress"] = progress
        if bug.fingerprint is None and bug.message:
            from kbgen.fingerprint import fingerprint_of

            changes["fingerprint"] = fingerprint_of(bug.message)
        if not changes:
            return {}
        what = " and ".join(
            (["one environment per machine"] if "environments" in changes else [])
            + (["what decides each step"] if "progress" in changes else [])
            + (["a fingerprint"] if "fingerprint" in changes else [])
        )
        event = history_event(EventKind.migrated, note=f"upgraded by kbgen migrate: {what}")
        rewritten[:] = sorted(changes)
        return changes | {"updated": event.at, "history": [*bug.history, event]}

    save_bug(entry, make)
    return rewritten


def _migrated_environments(entry: Entry[Bug]) -> list[Environment]:
    data = entry.source.parsed.data
    old = data.get("environment") or {}
    if not isinstance(old, dict):
        raise KbgenError(f"{entry.source.rel}: `environment` is not a mapping; fix it by hand")
    env = Environment.model_validate(legacy_environment(old, data.get("findings") or []))
    rest = {k: v for k, v in (old.get("values") or {}).items() if k not in KEY_FACT_KEYS and v is not None}
    if rest:
        name = f"{entry.record.id}/env-{env.host}-migrated.json"
        path = entry.path.parent / name
        path.parent.mkdir(parents=True, exist_ok=True)
        body = {"note": "facts of the old single-environment record beyond the key facts", "facts": rest}
        from kbgen.store import atomic_write

        atomic_write(path, (json.dumps(body, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
        env = env.model_copy(update={"report": name})
    return [env] if (env.facts or env.findings or env.report) else []


def _decided_steps(kb: Kb, bug: Bug) -> list[ProgressStep]:
    """Steps that came from the error type get what decides them from it (states are kept)."""
    error = kb.errors[bug.error].record if bug.error and bug.error in kb.errors else None
    known = {d.id: d for d in error.diagnostics} if error else {}
    out = []
    for step in bug.progress:
        diag = known.get(step.id)
        same = diag is not None and step.probe in (None, diag.probe) and step.decided_by == "manual"
        if same and diag is not None and diag.decided_by != "manual":
            update = {"decided_by": diag.decided_by, "probe": diag.probe}
            update |= {"fails_if": diag.fails_if} if diag.fails_if else {}
            step = step.model_copy(update=update)
        out.append(step)
    return out
