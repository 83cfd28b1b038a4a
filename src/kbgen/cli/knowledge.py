"""Commands that bring outside material into the KB: triage a log, import Markdown reports."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from kbgen.cli.common import project_of

if TYPE_CHECKING:
    from kbgen.store import Kb
    from kbgen.triage import Match, TriageReport

_LIKELIHOOD_ORDER = {"high": 0, "medium": 1, "low": 2}


# --------------------------------------------------------------------------- triage


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

    done = triage_with_environment(log, kb)
    report = done.report
    for skipped in report.skipped:
        click.echo(f"warning: {skipped.where}: signature skipped: {skipped.reasons[0]}", err=True)
    known = known_for_report(kb, report)
    if as_json:
        data = report.model_dump(mode="json", include={"source", "lines", "matches", "skipped"})
        data["matches"] = data["matches"][:top]
        _add_environment(data, done, kb)
        data["known_bugs"] = [k.model_dump(mode="json") for k in known]
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    for k in known:
        if k.same:
            click.echo(seen_line(kb.bugs[k.id].record) + "\n")
    _print_report(report, kb, top, log)
    _print_environment(done, kb)


def _print_report(report: TriageReport, kb: Kb, top: int, log: str) -> None:
    lines = f"{report.lines:,} line{'s' if report.lines != 1 else ''}"
    if not report.matches:
        click.echo(f"No error type in the KB matches {report.source} ({lines}).")
        click.echo("To record it as a new bug (and start a new error type from it):")
        click.echo(f"  kbgen new-bug --from-log {log if log != '-' else 'FILE'}")
        return
    count = len(report.matches)
    click.echo(f"{report.source}: {lines}; {count} error type{'s' if count != 1 else ''} match.")
    for rank, match in enumerate(report.matches[:top], start=1):
        click.echo("")
        _print_match(rank, match, kb, detailed=rank == 1)
        if rank == 1:
            click.echo(f"   Record it: kbgen new-bug --from-log {log if log != '-' else 'FILE'}")
    if count > top:
        click.echo(f"\n({count - top} more; --top {count} shows them all)")


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


# --------------------------------------------------------------------------- import


@click.command("import")
@click.argument("paths", nargs=-1, metavar="PATH...")
@click.option("--dry-run", is_flag=True, help="Show what would be written; write nothing.")
@click.option(
    "--github",
    "github",
    metavar="FILE.json",
    help="Import GitHub issues filed through the gpu-failure form, from the JSON "
    "`gh issue list --json number,title,body,labels,createdAt` prints (- reads standard input; "
    "at most 64 MiB). Each issue is imported once; exit status 1 when one is refused.",
)
@click.pass_context
def import_reports(ctx: click.Context, paths: tuple[str, ...], dry_run: bool, github: str | None) -> None:
    """Turn Markdown bug reports written by hand into bugs in kb/bugs/.

    Frontmatter (bug_id, severity, status, tags, date) and the sections kbgen has fields
    for (Bug ID, Environment, Error Messages, a Status checklist) become the record's
    fields; every other section stays in the body as written. Mojibake is repaired and
    sections that say nothing (empty, or only template text such as "n/a") are dropped.
    A report without an id gets a new one; an id that is already in kb/bugs/ is reported
    and left alone.
    Exit status 1 when any report was not imported.

    \b
    Example:
      kbgen import --dry-run old-reports/*.md
      kbgen import old-reports/*.md
      gh issue list --json number,title,body,labels,createdAt > issues.json
      kbgen import --github issues.json
    """
    from pathlib import Path

    from kbgen.importer import import_report
    from kbgen.store import load_kb

    if github:
        if paths:
            raise click.UsageError("--github reads one issue list; name the Markdown reports in another run")
        _import_github(ctx, github, dry_run)
        return
    if not paths:
        raise click.UsageError("name the reports to import, or --github FILE.json")
    kb = load_kb(project_of(ctx))
    failed = 0
    for name in paths:
        outcome = import_report(Path(name), kb, dry_run=dry_run)
        if outcome.state in ("error", "exists"):
            failed += 1
            what = "skipped" if outcome.state == "exists" else "not imported"
            click.echo(f"{name}: {what}: {outcome.message}", err=True)
            continue
        assert outcome.path is not None and outcome.draft is not None
        where = kb.project.rel(outcome.path)
        verb = "would write" if dry_run else "wrote"
        click.echo(f"{name}: {verb} {where}")
        for note in outcome.draft.notes:
            click.echo(f"  {note}")
        if dry_run:
            assert outcome.bug_id is not None
            click.echo(_indent(outcome.draft.render(outcome.bug_id)))
    if failed:
        ctx.exit(1)


def _import_github(ctx: click.Context, source: str, dry_run: bool) -> None:
    from kbgen.cli.common import load_clean_kb, one_line
    from kbgen.cli.core import _bug_template
    from kbgen.importer.github import GithubImport
    from kbgen.importer.issues import read_issue_list

    items = read_issue_list(source)
    kb = load_clean_kb(ctx)
    refused = 0
    for done in GithubImport(kb, _bug_template(kb.project)).run(items, dry_run=dry_run):
        if done.state == "refused":
            refused += 1
            click.echo(f"{done.name}: not imported: {one_line(done.message)}", err=True)
        elif done.state == "repeat":
            click.echo(f"{done.name}: {done.message}", err=True)
        elif done.state == "exists":
            assert done.path is not None
            click.echo(f"{done.name}: already imported as {done.bug_id} ({kb.project.rel(done.path)})")
        elif done.state == "would-write":
            click.echo(f"{done.name}: would write a bug")
        else:
            assert done.path is not None
            filled = "; environment filled from its probe report" if done.filled else ""
            click.echo(f"{done.name}: wrote {done.bug_id} {kb.project.rel(done.path)}{filled}")
    if refused:
        click.echo(f"{refused} of {len(items)} issue(s) not imported", err=True)
        ctx.exit(1)
    if not items:
        click.echo(f"{source}: the list holds no issues; nothing to import")


def _indent(text: str) -> str:
    return "\n".join(f"    {line}" if line else "" for line in text.splitlines())
