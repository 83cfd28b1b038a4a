"""Commands on one bug: show, status (with cause and fix), fix, step, and migrate for old files."""

from __future__ import annotations

import json
from typing import Any

import click

from kbgen.cli.common import complete_bug_ids, load_clean_kb, one_line, project_of
from kbgen.cli.records import STATUSES
from kbgen.vocab import AttemptOutcome, StepState

OUTCOMES = [o.value for o in AttemptOutcome]
#: a step is ticked "done" on the command line and recorded as passed
STEP_STATES = ["done" if s is StepState.passed else s.value for s in StepState]
MARKS = {"passed": "[x]", "failed": "[!]", "skipped": "[-]", "pending": "[ ]"}


@click.command()
@click.argument("bug_id", metavar="BUG-ID", shell_complete=complete_bug_ids)
@click.option("--json", "as_json", is_flag=True, help="The whole record and its report text as JSON.")
@click.pass_context
def show(ctx: click.Context, bug_id: str, as_json: bool) -> None:
    """Show one bug in full: machines and their facts, findings, checklist, causes, fixes,
    history and the report text (an old id kept as an alias works too).

    \b
    Examples:
      kbgen show BUG-20251109-002
      kbgen show BUG-20251109-002 --json | jq .progress
    """
    kb = load_clean_kb(ctx)
    entry = kb.resolve_bug(bug_id)
    bug = entry.record
    if as_json:
        # through pydantic's JSON: NaN and infinity (JSON has no words for them) become null
        data = json.loads(bug.model_dump_json(by_alias=True))
        data["file"] = kb.project.rel(entry.path)
        data["body"] = entry.source.body
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    for line in _lines(kb, entry):
        click.echo(one_line(line))  # record text never brings terminal escapes to the screen


def _lines(kb: Any, entry: Any) -> list[str]:
    bug = entry.record
    out = [f"{bug.id}: {bug.title}", f"  file:      {kb.project.rel(entry.path)}"]
    out.append(f"  status:    {bug.status.value}    severity: {bug.severity.value}")
    if bug.error:
        title = kb.errors[bug.error].record.title if bug.error in kb.errors else "no such error type"
        out.append(f"  error:     {bug.error} ({title})")
    for label, value in (("repro", bug.repro), ("assignee", bug.assignee)):
        if value:
            out.append(f"  {label + ':':<10} {value}")
    for label, items in (("tags", bug.tags), ("related", bug.related), ("aliases", bug.aliases)):
        if items:
            out.append(f"  {label + ':':<10} {', '.join(items)}")
    if bug.message:
        out += ["", "Message:", *(f"  {line}" for line in bug.message.rstrip("\n").split("\n"))]
    out += _machines(bug)
    out += _checklist(bug)
    out += _causes_and_fixes(bug)
    if bug.history:
        out += ["", "History:"]
        for e in bug.history:
            change = f" {e.old or ''} -> {e.new or ''}" if (e.old or e.new) else ""
            out.append(f"  {e.at.isoformat()}  {e.kind.value}{change}  by {e.by or 'unknown'}")
            if e.note:
                out.append(f"      {e.note}")
    body = entry.source.body.strip()
    if body:
        out += ["", "Report:", *(f"  {line}" if line else "" for line in body.split("\n"))]
    return out


def _machines(bug: Any) -> list[str]:
    if not bug.environments:
        return ["", f"Machines: none yet (`kbgen probe --fill {bug.id}` on the machine that failed)"]
    out = []
    for i, env in enumerate(bug.environments):
        role = "failing machine" if i == 0 else "also probed"
        role = f"probed, but {env.cannot_reproduce}" if env.cannot_reproduce else role
        when = env.collected_at.isoformat() if env.collected_at else "time not recorded"
        out += ["", f"Machine {i + 1} ({role}): {env.host}, Python {env.python or 'not recorded'}, {when}"]
        if env.report:
            out.append(f"  full report: kb/bugs/{env.report}")
        out += [f"  {key}: {value}" for key, value in env.facts.items()]
        for f in env.findings:
            out.append(f"  finding {f.probe}: {f.status.value}" + (f" - {f.message}" if f.message else ""))
    return out


def _checklist(bug: Any) -> list[str]:
    if not bug.progress:
        return []
    out = ["", "Checklist:"]
    for step in bug.progress:
        out.append(f"  {MARKS[step.state.value]} {step.id}: {step.title}")
        if step.decided_by == "manual":
            helps = f"; probe {step.probe} helps" if step.probe else ""
            decides = f"by hand: kbgen step {bug.id} {step.id} done --note ...{helps}"
        else:
            decides = f"decided by {step.decided_by}" + (
                f"; fails if {step.fails_if}" if step.fails_if else ""
            )
        out.append(f"      {decides}")
        if step.evidence:
            out.append(f"      evidence: {step.evidence}")
    return out


def _causes_and_fixes(bug: Any) -> list[str]:
    out = []
    if bug.confirmed_causes or bug.suspected_causes:
        out += ["", "Causes:"]
        out += [f"  confirmed: {c}" for c in bug.confirmed_causes]
        out += [f"  suspected: {c}" for c in bug.suspected_causes if c not in bug.confirmed_causes]
    if bug.fixes_tried:
        out += ["", "Fixes tried:"]
        for a in bug.fixes_tried:
            date = f" ({a.date.isoformat()})" if a.date else ""
            out.append(f"  {a.fix}: {a.outcome.value}{date}" + (f" - {a.note}" if a.note else ""))
    return out


@click.command()
@click.argument("bug_id", metavar="BUG-ID", shell_complete=complete_bug_ids)
@click.argument("new_status", metavar="STATUS", type=click.Choice(STATUSES, case_sensitive=False))
@click.option("--note", help="Why; kept in the bug's history.")
@click.option(
    "--cause",
    metavar="CAUSE-ID",
    help="The root cause found (`kbgen kb list --kind cause`); added to confirmed_causes.",
)
@click.option(
    "--fix",
    "fix_id",
    metavar="FIX-ID",
    help="The fix applied (`kbgen kb list --kind fix`); recorded in fixes_tried.",
)
@click.option(
    "--outcome",
    type=click.Choice(OUTCOMES),
    help="How the --fix went. Default: worked for fixed/verified, pending otherwise.",
)
@click.option("--of", "of", metavar="BUG-ID", help="With duplicate: the bug this one duplicates.")
@click.option("--json", "as_json", is_flag=True, help="Print the bug's id and old and new status as JSON.")
@click.pass_context
def status(ctx: click.Context, /, bug_id: str, new_status: str, **opts: Any) -> None:
    """Change a bug's status and record it in its history.

    Closing a bug should say why: name the cause and the fix that worked.

    \b
    STATUS is one of (in any case):
      open, confirmed, investigating, fix-in-progress   (the bug is open)
      fixed, verified, wontfix, duplicate               (the bug is closed)

    \b
    Example:
      kbgen status BUG-20251109-002 fixed --cause out-of-range-labels-or-indices \\
          --fix validate-labels-and-indices --note "labels clamped in the dataset"
    """
    from kbgen.bugs.edit import set_status
    from kbgen.models import AttemptOutcome, Status

    if opts["outcome"] and not opts["fix_id"]:
        raise click.UsageError("--outcome goes with --fix FIX-ID")
    if opts["of"] and new_status.lower() != "duplicate":
        raise click.UsageError("--of BUG-ID goes with the status duplicate")
    kb = load_clean_kb(ctx)
    entry = kb.resolve_bug(bug_id)
    old = entry.record.status.value
    outcome = AttemptOutcome(opts["outcome"]) if opts["outcome"] else None
    if opts["of"]:
        from kbgen.seen.occurrences import mark_duplicate

        changed = mark_duplicate(kb, entry, opts["of"], opts["note"])
    else:
        changed = set_status(
            kb,
            entry,
            Status(new_status),
            opts["note"],
            cause=opts["cause"],
            fix=opts["fix_id"],
            outcome=outcome,
        )
    if opts["as_json"]:
        click.echo(json.dumps({"id": entry.record.id, "from": old, "to": new_status, "changed": changed}))
    elif not changed:
        click.echo(f"{entry.record.id}: already {new_status}")
    elif old == new_status:
        click.echo(f"{entry.record.id}: still {new_status}; recorded the cause/fix")
    else:
        click.echo(f"{entry.record.id}: {old} -> {new_status}")


@click.command()
@click.argument("bug_id", metavar="BUG-ID", shell_complete=complete_bug_ids)
@click.argument("fix_id", metavar="FIX-ID")
@click.option("--outcome", type=click.Choice(OUTCOMES), required=True, help="How it went.")
@click.option("--note", help="What was done and what happened.")
@click.pass_context
def fix(ctx: click.Context, bug_id: str, fix_id: str, outcome: str, note: str | None) -> None:
    """Record a fix tried on a bug (FIX-ID from `kbgen kb list --kind fix`) and how it went.

    \b
    Example:
      kbgen fix BUG-20251109-002 enable-sync-debugging --outcome failed --note "still fails at the loss"
    """
    from kbgen.bugs.edit import record_fix
    from kbgen.models import AttemptOutcome

    kb = load_clean_kb(ctx)
    entry = kb.resolve_bug(bug_id)
    if record_fix(kb, entry, fix_id, AttemptOutcome(outcome), note):
        click.echo(f"{entry.record.id}: {fix_id} {outcome}")
    else:
        click.echo(f"{entry.record.id}: {fix_id} already recorded as {outcome}")


@click.command()
@click.argument("bug_id", metavar="BUG-ID", shell_complete=complete_bug_ids)
@click.argument("step_id", metavar="STEP")
@click.argument("state", type=click.Choice(STEP_STATES))
@click.option("--note", help="The evidence: what you ran and what you saw.")
@click.pass_context
def step(ctx: click.Context, bug_id: str, step_id: str, state: str, note: str | None) -> None:
    """Tick a checklist step by hand (the way to decide a `manual` step).

    \b
    Example:
      kbgen step BUG-20251109-002 index-ranges done --note "labels in [0, 1] for the failing batch"
    """
    from kbgen.bugs.edit import set_step

    kb = load_clean_kb(ctx)
    entry = kb.resolve_bug(bug_id)
    old, new = set_step(kb, entry, step_id, state, note)
    click.echo(f"{entry.record.id}: step {step_id} {old} -> {new}")


@click.command()
@click.pass_context
def migrate(ctx: click.Context) -> None:
    """Upgrade bug files written by older kbgen versions, in place.

    Moves the old single `environment` and `findings` into `environments` (one entry per
    machine; facts beyond the key ones go to kb/bugs/BUG-ID/env-*.json) and copies from the
    error type what decides each checklist step. States, notes and the report text are kept.
    """
    from kbgen.bugs.edit import migrate_bug
    from kbgen.store import load_kb

    kb = load_kb(project_of(ctx))
    count = 0
    for bug_id, entry in sorted(kb.bugs.items()):
        changed = migrate_bug(kb, entry)
        if changed:
            count += 1
            click.echo(f"{bug_id}: upgraded {', '.join(changed)} in {kb.project.rel(entry.path)}")
    click.echo(f"{count} bug file(s) upgraded" if count else "every bug file is current")
