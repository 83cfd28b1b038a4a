"""Write what probes found into a bug: environment, findings, progress steps, status and history.

How results map onto a bug:

- ``environment`` is replaced by this run's facts (``<probe-id>.<fact>``), host, interpreter and time.
- ``findings`` hold one entry per probe: this run's replace older ones of the same probe; findings of
  probes that did not run this time are kept.
- each progress step whose probe ran: pass or warn -> ``passed`` (a warning is kept in the
  evidence), fail, crash or timeout -> ``failed``, skip -> ``skipped``; an ``error`` (the probe
  could not decide) leaves the state as it was and records why in the evidence.
- the repro probe (``repro``): failing or crashing on an ``open`` bug -> ``confirmed``; passing on a
  ``fixed`` bug -> ``verified``; each change adds a ``status`` event.
- a ``probe-fill`` history event is added when the results differ from what the bug already holds,
  so running ``--fill`` again with the same results only moves the timestamps.

The write splices just these keys into the file (body and other lines untouched) and refuses,
with ConflictError, when the file changed on disk while the probes ran.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbgen.errors import ProbeError
from kbgen.models import Bug, Event, EventKind, Facts, Finding, ProbeStatus, ProgressStep, Status, StepState
from kbgen.roundtrip import save_changes

if TYPE_CHECKING:
    from kbgen.probes.discovery import ProbeSpec
    from kbgen.probes.report import ProbeReport, ProbeResult
    from kbgen.store import Entry, Kb

EVIDENCE_LIMIT = 500
FAILING = {ProbeStatus.fail, ProbeStatus.crash, ProbeStatus.timeout}
STEP_STATE = {
    ProbeStatus.pass_: StepState.passed,
    ProbeStatus.warn: StepState.passed,
    ProbeStatus.fail: StepState.failed,
    ProbeStatus.crash: StepState.failed,
    ProbeStatus.timeout: StepState.failed,
    ProbeStatus.skip: StepState.skipped,
}


@dataclass
class FillPlan:
    """Which probes a bug asks for, and the checklist they fill."""

    probe_ids: list[str]
    steps: list[ProgressStep]
    missing: list[str] = field(default_factory=list)


@dataclass
class FillOutcome:
    bug_id: str
    path: Path
    written: bool
    changed: list[str]
    status_change: tuple[str, str] | None = None


def plan_fill(kb: Kb, bug: Bug, specs: list[ProbeSpec]) -> FillPlan:
    """The default probes, then those named by the bug's steps, then its repro probe.

    A bug with no checklist yet inherits its error type's diagnostic steps.
    """
    steps = list(bug.progress)
    if not steps and bug.error and bug.error in kb.errors:
        steps = [
            ProgressStep(id=d.id, title=d.title, probe=d.probe)
            for d in kb.errors[bug.error].record.diagnostics
        ]
    known = {s.id for s in specs}
    wanted = [s.id for s in specs if s.meta.default]
    wanted += [s.probe for s in steps if s.probe]
    wanted += [bug.repro] if bug.repro else []
    ordered = list(dict.fromkeys(wanted))
    return FillPlan([i for i in ordered if i in known], steps, [i for i in ordered if i not in known])


def _evidence(result: ProbeResult) -> str:
    text = f"{result.status.value}: {result.message}".strip().rstrip(":")
    if result.signal:
        text += f" [{result.signal}]"
    return text if len(text) <= EVIDENCE_LIMIT else text[: EVIDENCE_LIMIT - 1] + "…"


def _missing_finding(probe_id: str, when: dt.datetime) -> Finding:
    message = f"no probe with this id; add kb/probes/{probe_id}.py or fix the name"
    return Finding(probe=probe_id, status=ProbeStatus.error, message=message, when=when)


def new_findings(bug: Bug, report: ProbeReport, missing: list[str], when: dt.datetime) -> list[Finding]:
    """This run's findings first (in run order), then older findings of probes that did not run."""
    fresh = [Finding(probe=r.id, status=r.status, message=r.message, when=when) for r in report.results]
    fresh += [_missing_finding(i, when) for i in missing]
    ran = {f.probe for f in fresh}
    return fresh + [f for f in bug.findings if f.probe not in ran]


def new_progress(
    steps: list[ProgressStep], report: ProbeReport, missing: list[str], when: dt.datetime
) -> list[ProgressStep]:
    """Each step decided by the probe it names, when that probe ran."""
    out = []
    for step in steps:
        result = report.result(step.probe) if step.probe else None
        if result is not None:
            state = STEP_STATE.get(result.status, step.state)
            step = step.model_copy(update={"state": state, "evidence": _evidence(result), "when": when})
        elif step.probe in missing:
            step = step.model_copy(
                update={"evidence": f"error: no probe '{step.probe}' to run", "when": when}
            )
        out.append(step)
    return out


def status_after(bug: Bug, report: ProbeReport) -> tuple[Status, str] | None:
    """The status the repro result moves the bug to, with the reason; None when it stays."""
    result = report.result(bug.repro) if bug.repro else None
    if result is None:
        return None
    if bug.status == Status.open and result.status in FAILING:
        return Status.confirmed, f"repro probe {result.id} reproduced it: {_evidence(result)}"
    if bug.status == Status.fixed and result.status == ProbeStatus.pass_:
        return Status.verified, f"repro probe {result.id} passes: {_evidence(result)}"
    return None


def _summary(report: ProbeReport, missing: list[str]) -> str:
    counts = ", ".join(f"{n} {s}" for s, n in sorted(report.counts().items()))
    text = f"{len(report.results)} probes ({counts}) in Python {report.python.version}"
    return text + (f"; not found: {', '.join(missing)}" if missing else "")


def _content(value: Any) -> Any:
    """A record's value without its timestamps, to tell a real change from a re-run."""
    if isinstance(value, Facts):
        return (value.host, value.python, sorted(value.values.items(), key=lambda kv: kv[0]))
    if isinstance(value, list):
        return [v.model_dump(exclude={"when"}) for v in value]
    return value


def compute_changes(
    bug: Bug, plan: FillPlan, report: ProbeReport, *, now: dt.datetime, by: str | None
) -> dict[str, Any]:
    """The frontmatter keys to write, with their new values (only keys whose value changes)."""
    when = report.collected_at
    environment = Facts(collected_at=when, host=report.host, python=_python(report), values=report.facts())
    proposed: dict[str, Any] = {
        "environment": environment,
        "findings": new_findings(bug, report, plan.missing, when),
        "progress": new_progress(plan.steps, report, plan.missing, when),
    }
    history = list(bug.history)
    moved = status_after(bug, report)
    if moved is not None:
        proposed["status"] = moved[0]
        history.append(
            Event(
                at=now, kind=EventKind.status, by=by, old=bug.status.value, new=moved[0].value, note=moved[1]
            )
        )
    current = {"environment": bug.environment, "findings": bug.findings, "progress": bug.progress}
    if moved is not None or any(_content(proposed[k]) != _content(current[k]) for k in current):
        history.append(Event(at=now, kind=EventKind.probe_fill, by=by, note=_summary(report, plan.missing)))
    proposed["history"] = history
    proposed["updated"] = now
    changes = {k: v for k, v in proposed.items() if getattr(bug, k) != v}
    Bug.model_validate({**bug.model_dump(by_alias=True), **changes})  # never write a bug that cannot load
    return changes


def _python(report: ProbeReport) -> str:
    version = report.python.version or "unknown version"
    return f"{version} ({report.python.executable})"


def fill_bug(
    entry: Entry, plan: FillPlan, report: ProbeReport, *, now: dt.datetime, by: str | None = None
) -> FillOutcome:
    """Write ``report`` into the bug of ``entry``; raises ConflictError if the file changed meanwhile."""
    bug: Bug = entry.record
    if report.interpreter_error:
        raise _not_run(report)
    changes = compute_changes(bug, plan, report, now=now, by=by)
    written = save_changes(entry.source, changes) if changes else False
    moved = (bug.status.value, changes["status"].value) if "status" in changes else None
    return FillOutcome(bug.id, entry.path, written, sorted(changes), moved)


def _not_run(report: ProbeReport) -> ProbeError:
    return ProbeError(f"no probe ran, so nothing was written: {report.interpreter_error}")
