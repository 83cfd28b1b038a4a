"""Write what probes found into a bug, one machine at a time, without erasing another machine's evidence.

How results map onto a bug:

- ``environments`` holds one entry per machine (host and interpreter). A fill on a machine the bug
  already knows updates that entry; on a new machine it adds one. The first entry is the failing
  machine; ``primary=True`` moves this machine to the front. An entry keeps the key facts
  (keyfacts.KEY_FACTS, never a null) and its own findings; the full report is written beside the bug
  as ``kb/bugs/<BUG-ID>/env-<host>-<tag>.json`` and named in ``report``.
- findings: this run's replace the same probe's older ones of *this* machine; other machines'
  findings are never touched.
- a step changes only when the probe that decides it (``decided_by`` / ``fails_if``, see
  kbgen.checks) ran here: the condition true -> ``passed``; ``fails_if`` true -> ``failed``; the
  probe skipped -> ``skipped``, but only for a step still pending. A pass or fail is replaced only
  by a later pass or fail from the same host (the old state goes into history); evidence from
  another machine stays in that machine's findings. Manual steps are never touched.
- the repro probe: failing or crashing on an ``open`` bug -> ``confirmed``; passing on the failing
  machine of a ``fixed`` bug -> ``verified``, and each fix that ``worked`` gets ``last_verified``.
- a ``probe-fill`` event is added when the results differ from what the machine's entry held.

The write splices just these keys into the file (body and other lines untouched) and refuses,
with ConflictError, when the file changed on disk while the probes ran.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbgen.bugs.create import steps_from
from kbgen.bugs.edit import save_bug
from kbgen.bugs.roundtrip import save_changes
from kbgen.checks import parse_check
from kbgen.errors import ConflictError, ProbeError
from kbgen.keyfacts import KEY_FACT_KEYS
from kbgen.models import (
    Bug,
    Environment,
    Event,
    EventKind,
    Finding,
    ProbeStatus,
    ProgressStep,
    Status,
    StepState,
)
from kbgen.reproduce import STEP_ID, cannot_reproduce, cuda_error, gpu_step

if TYPE_CHECKING:
    from kbgen.models import Fix
    from kbgen.probes.discovery import ProbeSpec
    from kbgen.probes.report import ProbeReport, ProbeResult
    from kbgen.store import Entry, Kb

EVIDENCE_LIMIT = 500
FAILING = {ProbeStatus.fail, ProbeStatus.crash, ProbeStatus.timeout}
DECIDED = {StepState.passed, StepState.failed}


@dataclass
class FillPlan:
    """Which probes a bug asks for, and the checklist they fill."""

    probe_ids: list[str]
    steps: list[ProgressStep]
    missing: list[str] = field(default_factory=list)
    #: the bug's error type when only a machine whose torch drives a CUDA GPU shows it
    cuda_error: str | None = None


@dataclass
class FillOutcome:
    bug_id: str
    path: Path
    written: bool
    changed: list[str]
    status_change: tuple[str, str] | None = None
    report_path: Path | None = None
    verified_fixes: list[str] = field(default_factory=list)
    cannot_reproduce: str | None = None  # why this machine cannot show the bug's (CUDA) error


def plan_fill(kb: Kb, bug: Bug, specs: list[ProbeSpec]) -> FillPlan:
    """The default probes, then those named by the bug's steps, then its repro probe.

    A bug with no checklist yet inherits its error type's diagnostic steps.
    """
    steps = list(bug.progress)
    if not steps and bug.error and bug.error in kb.errors:
        steps = steps_from(kb.errors[bug.error].record.diagnostics)
    known = {s.id for s in specs}
    wanted = [s.id for s in specs if s.meta.default]
    wanted += [s.probe for s in steps if s.probe]
    wanted += [bug.repro] if bug.repro else []
    ordered = list(dict.fromkeys(wanted))
    probe_ids, missing = [i for i in ordered if i in known], [i for i in ordered if i not in known]
    return FillPlan(probe_ids, steps, missing, cuda_error(kb, bug))


def _evidence(result: ProbeResult, host: str = "") -> str:
    text = f"{result.status.value}: {result.message}".strip().rstrip(":")
    if result.signal:
        text += f" [{result.signal}]"
    if host:
        text = f"on {host}: {text}"
    return text if len(text) <= EVIDENCE_LIMIT else text[: EVIDENCE_LIMIT - 1] + "…"


def _missing_finding(probe_id: str, when: dt.datetime) -> Finding:
    message = f"no probe with this id; add kb/probes/{probe_id}.py or fix the name"
    return Finding(probe=probe_id, status=ProbeStatus.error, message=message, when=when)


def new_findings(
    old: list[Finding], report: ProbeReport, missing: list[str], when: dt.datetime
) -> list[Finding]:
    """This run's findings first (in run order), then this machine's older ones of probes not run now."""
    fresh = [Finding(probe=r.id, status=r.status, message=r.message, when=when) for r in report.results]
    fresh += [_missing_finding(i, when) for i in missing]
    ran = {f.probe for f in fresh}
    return fresh + [f for f in old if f.probe not in ran]


def step_verdict(step: ProgressStep, result: ProbeResult) -> StepState | None:
    """What this probe result says about ``step``: passed, failed, skipped, or None (nothing)."""
    if result.status == ProbeStatus.skip:
        return StepState.skipped
    if result.status == ProbeStatus.error:
        return None
    facts = dict(result.facts)
    if (passes := parse_check(step.decided_by)) and passes.evaluate(result.status.value, facts):
        return StepState.passed
    if (fails := parse_check(step.fails_if)) and fails.evaluate(result.status.value, facts):
        return StepState.failed
    return None


def _why_not(step: ProgressStep, result: ProbeResult) -> str:
    check = parse_check(step.decided_by)
    assert check is not None
    shown = ", ".join(f"{n}={result.facts.get(n, 'not reported')}" for n in check.names() if n != "status")
    return f"not yet: {check.condition} does not hold ({shown or 'status=' + result.status.value})"


def update_step(
    step: ProgressStep,
    report: ProbeReport,
    host: str,
    when: dt.datetime,
    missing: list[str] = [],  # noqa: B006
) -> tuple[ProgressStep, ProgressStep | None]:
    """The step after this run, and the step it replaced when a decided state changed on this host."""
    result = report.result(step.probe) if step.probe and parse_check(step.decided_by) else None
    if result is None:
        if step.probe in missing and step.state == StepState.pending:
            return step.model_copy(
                update={"evidence": f"error: no probe '{step.probe}' to run", "when": when}
            ), None
        return step, None
    verdict = step_verdict(step, result)
    mine = step.host == host
    if verdict in DECIDED and (step.state not in DECIDED or mine):
        update = {"state": verdict, "evidence": _evidence(result, host), "when": when, "host": host}
        new = step.model_copy(update=update)
        replaced = step if step.state in DECIDED and step.state != verdict else None
        return new, replaced
    if step.state == StepState.pending or (step.state == StepState.skipped and mine):
        state = StepState.skipped if verdict == StepState.skipped else StepState.pending
        evidence = (
            _evidence(result, host) if state == StepState.skipped else f"on {host}: {_why_not(step, result)}"
        )
        return step.model_copy(
            update={"state": state, "evidence": evidence, "when": when, "host": host}
        ), None
    return step, None


def status_after(bug: Bug, report: ProbeReport, *, primary: bool) -> tuple[Status, str] | None:
    """The status the repro result moves the bug to, with the reason; None when it stays."""
    result = report.result(bug.repro) if bug.repro else None
    if result is None:
        return None
    if bug.status == Status.open and result.status in FAILING:
        return (
            Status.confirmed,
            f"repro probe {result.id} reproduced it on {report.host}: {_evidence(result)}",
        )
    if bug.status == Status.fixed and result.status == ProbeStatus.pass_ and primary:
        return Status.verified, f"repro probe {result.id} passes on {report.host}: {_evidence(result)}"
    return None


def _summary(
    report: ProbeReport, missing: list[str], repro: str | None, new_machine: bool, cannot: str | None
) -> str:
    counts = ", ".join(f"{n} {s}" for s, n in sorted(report.counts().items()))
    where = ("new machine " if new_machine else "") + report.host
    text = f"on {where}: {len(report.results)} probes ({counts}) in Python {report.python.version}"
    result = report.result(repro) if repro else None
    if result is not None and result.status in FAILING:
        text += f"; reproduced on {report.host}"
    elif result is not None and result.status == ProbeStatus.pass_:
        text += f"; does not reproduce on {report.host}"
    text += f"; {cannot}" if cannot else ""
    return text + (f"; not found: {', '.join(missing)}" if missing else "")


def python_label(report: ProbeReport) -> str:
    version = report.python.version or "unknown version"
    return f"{version} ({report.python.executable})"


def report_name(bug_id: str, host: str, python: str) -> str:
    """``<BUG-ID>/env-<host>-<tag>.json``: one file per machine, stable across fills."""
    tag = hashlib.sha256(python.encode()).hexdigest()[:6]
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", host).strip("-.")[:60] or "host"
    return f"{bug_id}/env-{safe}-{tag}.json"


def new_environment(old: Environment | None, bug: Bug, plan: FillPlan, report: ProbeReport) -> Environment:
    python = python_label(report)
    facts = {k: v for k, v in report.facts().items() if k in KEY_FACT_KEYS and v is not None}
    if (cpu := report.result("cpu")) is not None and cpu.status != ProbeStatus.skip:
        facts["cpu.verdict"] = cpu.status.value  # the cpu probe's verdict on the flags torch needs
    return Environment(
        host=report.host,
        python=python,
        collected_at=report.collected_at,
        facts=facts,
        report=report_name(bug.id, report.host, python),
        findings=new_findings(old.findings if old else [], report, plan.missing, report.collected_at),
        cannot_reproduce=cannot_reproduce(plan.cuda_error, report),
    )


def place(envs: list[Environment], env: Environment, *, primary: bool) -> tuple[list[Environment], bool]:
    """The environments with ``env`` in its machine's place (or added); True when the machine is new."""
    index = next((i for i, e in enumerate(envs) if e.same_machine(env.host, env.python)), None)
    out = list(envs)
    if index is None:
        out.append(env)
        index = len(out) - 1
    else:
        out[index] = env
    if primary and index:
        out.insert(0, out.pop(index))
    return out, index == len(envs)


def _content(env: Environment | None) -> Any:
    if env is None:
        return None
    return (env.facts, [f.model_dump(exclude={"when"}) for f in env.findings])


def fill_steps(
    plan: FillPlan, report: ProbeReport, history: list[Event], *, now: dt.datetime, by: str | None
) -> list[ProgressStep]:
    """The checklist after this run; a decided state replaced on this host adds a ``step`` event."""
    progress = []
    for step in plan.steps:
        new, replaced = update_step(step, report, report.host, report.collected_at, plan.missing)
        progress.append(new)
        if replaced is not None:
            was = f"{replaced.state.value} ({replaced.evidence or 'no evidence'})"
            note = f"step {step.id} on {report.host}: was {was}"
            old, state = replaced.state.value, new.state.value
            history.append(Event(at=now, kind=EventKind.step, by=by, old=old, new=state, note=note))
    return progress


def compute_changes(
    bug: Bug, plan: FillPlan, report: ProbeReport, *, now: dt.datetime, by: str | None, primary: bool = False
) -> dict[str, Any]:
    """The frontmatter keys to write, with their new values (only keys whose value changes)."""
    python = python_label(report)
    old = next((e for e in bug.environments if e.same_machine(report.host, python)), None)
    env = new_environment(old, bug, plan, report)
    # a machine that shows the error goes ahead of those that cannot: it is the failing machine
    first_cannot = bool(bug.environments) and bool(bug.environments[0].cannot_reproduce)
    envs, new_machine = place(
        bug.environments, env, primary=primary or (first_cannot and not env.cannot_reproduce)
    )
    if env.cannot_reproduce and all(s.id != STEP_ID for s in plan.steps):
        plan = dataclasses.replace(plan, steps=[*plan.steps, gpu_step()])  # ask for a GPU machine
    history = list(bug.history)
    progress = fill_steps(plan, report, history, now=now, by=by)
    moved = status_after(bug, report, primary=envs[0] is env)
    proposed: dict[str, Any] = {"environments": envs, "progress": progress}
    if moved is not None:
        proposed["status"] = moved[0]
        event = Event(
            at=now, kind=EventKind.status, by=by, old=bug.status.value, new=moved[0].value, note=moved[1]
        )
        history.append(event)
    steps_changed = [s.model_dump(exclude={"when"}) for s in progress] != [
        s.model_dump(exclude={"when"}) for s in bug.progress
    ]
    moved_up = primary and bool(bug.environments) and bug.environments[0].host != env.host
    if moved is not None or new_machine or moved_up or steps_changed or _content(env) != _content(old):
        note = _summary(report, plan.missing, bug.repro, new_machine, env.cannot_reproduce)
        history.append(Event(at=now, kind=EventKind.probe_fill, by=by, note=note))
    proposed["history"] = history
    proposed["updated"] = now
    changes = {k: v for k, v in proposed.items() if getattr(bug, k) != v}
    return changes


def _unchanged_since(entry: Entry[Bug], fresh: Entry[Bug], changes: dict[str, Any]) -> dict[str, Any]:
    """``changes`` were computed from ``entry``: refuse to apply them to a file edited since."""
    if fresh.source.digest != entry.source.digest:
        raise ConflictError(f"{entry.source.rel}: changed on disk since kbgen read it; nothing was written")
    return changes


def fill_bug(
    entry: Entry[Bug],
    plan: FillPlan,
    report: ProbeReport,
    *,
    now: dt.datetime,
    by: str | None = None,
    primary: bool = False,
    fixes: dict[str, Entry[Fix]] | None = None,
) -> FillOutcome:
    """Write ``report`` into the bug of ``entry``; raises ConflictError if the file changed meanwhile."""
    bug = entry.record
    if report.interpreter_error:
        raise _not_run(report)
    changes = compute_changes(bug, plan, report, now=now, by=by, primary=primary)
    cannot = cannot_reproduce(plan.cuda_error, report)
    report_path = _write_report(entry, bug, report)
    written = save_bug(entry, lambda fresh: _unchanged_since(entry, fresh, changes)) if changes else False
    moved = (bug.status.value, changes["status"].value) if "status" in changes else None
    verified = (
        mark_verified(bug, fixes or {}, now.date()) if moved and moved[1] == Status.verified.value else []
    )
    return FillOutcome(bug.id, entry.path, written, sorted(changes), moved, report_path, verified, cannot)


def mark_verified(bug: Bug, fixes: dict[str, Entry[Fix]], day: dt.date) -> list[str]:
    """Set ``last_verified`` on each fix that worked for ``bug``; the ids of those written."""
    done = []
    for attempt in bug.fixes_tried:
        fix = fixes.get(attempt.fix)
        if attempt.outcome.value == "worked" and fix is not None and fix.record.last_verified != day:
            save_changes(fix.source, {"last_verified": day})
            done.append(attempt.fix)
    return done


def _write_report(entry: Entry[Bug], bug: Bug, report: ProbeReport) -> Path:
    from kbgen.store import atomic_write

    path = entry.path.parent / report_name(bug.id, report.host, python_label(report))
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, (report.model_dump_json(indent=2) + "\n").encode("utf-8"))
    return path


def _not_run(report: ProbeReport) -> ProbeError:
    return ProbeError(f"no probe ran, so nothing was written: {report.interpreter_error}")
