"""``kbgen triage``: name the error types a log shows, or say plainly what it shows instead."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from kbgen.cli.common import project_of

if TYPE_CHECKING:
    from kbgen.store import Kb
    from kbgen.triage import Match, TriageReport
    from kbgen.triage.verdict import Outcome

_LIKELIHOOD_ORDER = {"high": 0, "medium": 1, "low": 2}


@click.command()
@click.argument("log", metavar="LOG")
@click.option("--json", "as_json", is_flag=True, help="Print the ranking as JSON.")
@click.option("--top", default=5, show_default=True, type=click.IntRange(1, 100), help="Matches to show.")
@click.pass_context
def triage(ctx: click.Context, log: str, as_json: bool, top: int) -> None:
    """Name the error types a log shows, best first, and what to check next.

    LOG is a file, or - to read standard input. The log is streamed, so its size does
    not matter. Lines are matched against the signatures of every error type (the base
    layer's and the project's own in kb/errors/; `kbgen kb list --kind error`); an error that
    another error listed earlier in the log usually causes ranks below it.

    \b
    Examples:
      kbgen triage train.log
      python train.py 2>&1 | kbgen triage -
      kbgen triage --json train.log
    """
    from kbgen.envreport.rank import triage_with_environment
    from kbgen.store import load_kb

    kb = load_kb(project_of(ctx))
    if kb.problems:
        files = len({p.path for p in kb.problems})
        click.echo(f"warning: {files} KB file(s) could not be loaded; `kbgen validate` lists why", err=True)
    from kbgen.seen.known import known_for_report, seen_line
    from kbgen.triage.verdict import outcome_of

    done = triage_with_environment(log, kb)
    report = done.report
    for skipped in report.skipped:
        click.echo(f"warning: {skipped.where}: signature skipped: {skipped.reasons[0]}", err=True)
    known = known_for_report(kb, report)
    outcome = outcome_of(report, done.text, kb)
    if as_json:
        data = report.model_dump(mode="json", include={"source", "lines", "matches", "skipped"})
        data["matches"] = data["matches"][:top]
        data.update(outcome.as_dict())
        _add_environment(data, done, kb)
        data["known_bugs"] = [k.model_dump(mode="json") for k in known]
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    for k in known:
        if k.same:
            click.echo(seen_line(kb.bugs[k.id].record) + "\n")
    if report.matches:
        _print_report(report, kb, top, log)
    else:
        _print_unmatched(report, outcome, log)
    _print_environment(done, kb)


def _print_report(report: TriageReport, kb: Kb, top: int, log: str) -> None:
    lines = f"{report.lines:,} line{'s' if report.lines != 1 else ''}"
    count = len(report.matches)
    click.echo(f"{report.source}: {lines}; {count} error type{'s' if count != 1 else ''} match.")
    for rank, match in enumerate(report.matches[:top], start=1):
        click.echo("")
        _print_match(rank, match, kb, detailed=rank == 1)
        if rank == 1:
            click.echo(f"   Record it: kbgen new-bug --from-log {log if log != '-' else 'FILE'}")
    if count > top:
        click.echo(f"\n({count - top} more; --top {count} shows them all)")


def _print_unmatched(report: TriageReport, outcome: Outcome, log: str) -> None:
    from kbgen.redact import redact_text
    from kbgen.triage.verdict import NOT_GPU

    lines = f"{report.lines:,} line{'s' if report.lines != 1 else ''}"
    named = log if log != "-" else "FILE"
    failure = outcome.failure
    if outcome.verdict == NOT_GPU:
        assert failure is not None
        click.echo(f"Not a GPU failure: {report.source} ({lines}) ends with an error in the program itself.")
    else:
        click.echo(f"No error type in the KB matches {report.source} ({lines}).")
    if failure is not None:
        click.echo(f"   {_clip(redact_text(failure.line))}")
        if failure.library_frame:
            frame = failure.library_frame
            click.echo(f"   raised in {frame.package}: {_clip(redact_text(frame.where()))}")
        if failure.user_frame:
            click.echo(f"   your code: {_clip(redact_text(failure.user_frame.where()))}")
    elif outcome.line:
        click.echo(f"   last error line: {_clip(redact_text(outcome.line))}")
    if outcome.verdict == NOT_GPU:
        click.echo(
            "   Nothing in it points at the GPU, the driver or a CUDA library: fix the code or its data."
        )
        return
    if outcome.guesses:
        click.echo("   Nearest error types (guesses that share words with it; no signature matched):")
    for guess in outcome.guesses:
        click.echo(f"     ? {guess.error} ({guess.score:g}): {guess.title}; shares {', '.join(guess.shared)}")
    click.echo("To record it as a new bug:")
    click.echo(f"  kbgen new-bug --from-log {named}")
    click.echo("To teach kbgen this error (drafts kb/errors/<id>.md from the error line):")
    click.echo(f"  kbgen new-error --from-log {named}")


def _print_match(rank: int, match: Match, kb: Kb, *, detailed: bool) -> None:
    click.echo(f"{rank}. {match.error} (score {match.score:g}): {match.title}")
    if match.consequence_of:
        click.echo(f"   likely a consequence of {match.consequence_of}, which this log also shows")
    shown = match.lines if detailed else match.lines[:2]
    for hit in shown:
        click.echo(f"   line {hit.number}: {_clip(hit.text)}")
    if match.count > len(shown):
        click.echo(f"   ... {match.count - len(shown)} more matching line(s)")
    if detailed:
        _print_next_steps(match.error, kb)


def _print_next_steps(error_id: str, kb: Kb) -> None:
    error = kb.errors[error_id].record
    causes = sorted(error.causes, key=lambda c: _LIKELIHOOD_ORDER[c.likelihood.value])[:3]
    if causes:
        click.echo("   Likely causes:")
    for ref in causes:
        cause = kb.causes.get(ref.cause)
        title = cause.record.title if cause else ref.cause
        click.echo(f"     - {ref.cause} ({ref.likelihood.value}): {title}")
        for fix_id in (cause.record.fixes if cause else [])[:2]:
            fix = kb.fixes.get(fix_id)
            click.echo(f"         fix {fix_id}: {fix.record.title if fix else '(not in the KB)'}")
    steps = [step for step in error.diagnostics if step.probe][:4]
    if steps:
        click.echo("   Probes to run next:")
    for step in steps:
        click.echo(f"     - {step.probe}: {step.title}")


def _add_environment(data: dict[str, Any], done: Any, kb: Kb) -> None:
    """The environment the log shows, and each match's causes ranked with its verdicts."""
    from kbgen.envreport.rank import rank_causes

    verdicts = done.environment.verdicts
    if done.environment.found:
        full = done.environment.as_dict()
        data["environment"] = {
            "facts": full["facts"],
            "derived": full["derived"],
            "verdicts": full["verdicts"],
        }
    for match in data["matches"]:
        match["causes"] = rank_causes(match["error"], kb, verdicts)


def _print_environment(done: Any, kb: Kb) -> None:
    from kbgen.envreport.rank import rank_causes

    env = done.environment
    if not env.found:
        return
    click.echo(
        "\nEnvironment in the log: " + ", ".join(f"{k} {v}" for k, v in sorted(env.facts.items())[:12])
    )
    for verdict in env.verdicts:
        if verdict.status in ("fail", "warn"):
            click.echo(f"   {verdict.status.upper()} {verdict.check}: {verdict.message}")
    if done.report.matches:
        ranked = rank_causes(done.report.matches[0].error, kb, env.verdicts)
        names = [r["cause"] + (f" ({r['verdict']})" if r["verdict"] else "") for r in ranked[:4]]
        click.echo("   Causes ranked with the environment: " + ", ".join(names))


def _clip(text: str, width: int = 160) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
