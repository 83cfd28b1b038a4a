"""``kbgen probe``: run probes in the interpreter under test; print, export or fill a bug with them."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kbgen.cli.common import complete_bug_ids, complete_probe_ids, project_of

if TYPE_CHECKING:
    from kbgen.probes.report import ProbeReport
    from kbgen.probes.runner import ProbeSession
    from kbgen.store import Entry, Kb, Project

# Built-ins that never import torch: asking only for these does not start the torch worker early.
PLAIN_BUILTINS = frozenset({"system", "packages", "debug-env", "import-timing"})
COLOURS = {
    "pass": "green",
    "warn": "yellow",
    "fail": "red",
    "crash": "red",
    "timeout": "red",
    "error": "magenta",
}


@click.command()
@click.argument("ids", nargs=-1, metavar="[PROBE-ID]...", shell_complete=complete_probe_ids)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (versioned schema).")
@click.option(
    "--fill",
    "bug_id",
    metavar="BUG-ID",
    shell_complete=complete_bug_ids,
    help="Run the bug's probes and write the results into it.",
)
@click.option(
    "--python",
    "python",
    metavar="PATH",
    help="Interpreter to probe (the one with the failing torch). Default: $KBGEN_PYTHON, else this one.",
)
@click.option("--list", "list_only", is_flag=True, help="List every probe: what it checks and what it needs.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True, max=3600),
    metavar="SECONDS",
    help="Time limit for every probe, overriding each probe's own.",
)
@click.option("--redact-paths", is_flag=True, help="Write the home folder as ~ and the user name as <user>.")
@click.pass_context
def probe(
    ctx: click.Context,
    ids: tuple[str, ...],
    as_json: bool,
    bug_id: str | None,
    python: str | None,
    list_only: bool,
    timeout: float | None,
    redact_paths: bool,
) -> None:
    """Run probes: small checks of this machine, run in child processes.

    Without PROBE-IDs the default set runs. Each probe runs isolated: one that
    crashes, hangs or prints garbage becomes a result and the others still run.

    \b
    Examples:
      kbgen probe                          # the default probes, as a table
      kbgen probe gpu compat               # chosen probes
      kbgen probe --json                   # machine-readable report
      kbgen probe --fill BUG-20251109-002  # run the bug's probes, write the results into it
      kbgen probe --python .venv/bin/python --fill BUG-20251109-002
      kbgen probe --list                   # what each probe checks
    """
    if list_only:
        _print_list(ctx)
        return
    from kbgen.probes.runner import ProbeSession

    # Start the torch worker first: its import of torch then overlaps with loading the KB here.
    wants_torch = bug_id is not None or not ids or not set(ids) <= PLAIN_BUILTINS
    session = ProbeSession(python, torch=wants_torch, timeout=timeout)
    try:
        report, fill = _run(ctx, session, list(ids), bug_id, redact_paths)
    finally:
        session.close()
    _show(report, as_json)
    if report.interpreter_error:
        if as_json:
            ctx.exit(1)
        from kbgen.errors import ProbeError

        raise ProbeError(f"the interpreter cannot run probes: {report.interpreter_error}")
    if fill is not None:
        _fill(*fill, report, as_json)


def _run(
    ctx: click.Context, session: ProbeSession, ids: list[str], bug_id: str | None, redact_paths: bool
) -> tuple[ProbeReport, tuple[Entry, Any] | None]:
    from kbgen import clock
    from kbgen.probes.discovery import scan, select

    project = _project(ctx, required=bug_id is not None)
    specs, problems = scan(project)
    for problem in problems:
        click.echo(f"warning: {problem.format()} (probe skipped)", err=True)
    fill = None
    if bug_id is not None:
        assert project is not None
        from kbgen.fill import plan_fill
        from kbgen.store import load_kb

        kb = load_kb(project)
        entry = _bug_entry(kb, bug_id)
        plan = plan_fill(kb, entry.record, specs)
        for missing in plan.missing:
            click.echo(f"warning: {entry.record.id} names probe '{missing}', which does not exist", err=True)
        ids = ids or plan.probe_ids
        fill = (entry, plan)
    chosen = select(specs, ids, problems)
    report = session.run(chosen, redact_paths=redact_paths, now=clock.now(), host=clock.hostname())
    report.problems = [p.format() for p in problems]
    return report, fill


def _project(ctx: click.Context, *, required: bool) -> Project | None:
    """The project, or None when there is none and the command can run with built-ins only."""
    from kbgen.errors import KbNotFoundError

    try:
        return project_of(ctx)
    except KbNotFoundError:
        explicit = (ctx.find_root().obj or {}).get("kb_path")
        if required or explicit:
            raise
        return None


def _bug_entry(kb: Kb, bug_id: str) -> Entry:
    """The bug to fill; a broken bug file is reported as such, not as a missing bug."""
    from kbgen.errors import EntryError, UnknownIdError

    try:
        return kb.resolve_bug(bug_id)
    except UnknownIdError:
        broken = [p for p in kb.problems if Path(p.path).name.startswith(bug_id)]
        if broken:
            raise EntryError(broken, hint="fix the file, then run the command again") from None
        raise


def _show(report: ProbeReport, as_json: bool) -> None:
    if as_json:
        click.echo(report.model_dump_json(indent=2))
        return
    from kbgen.probes.text import format_table

    if report.interpreter_error is None:
        click.echo(format_table(report, lambda text, status: click.style(text, fg=COLOURS.get(status))))


def _fill(entry: Entry, plan: Any, report: ProbeReport, as_json: bool) -> None:
    from kbgen import clock
    from kbgen.errors import ConflictError
    from kbgen.fill import fill_bug

    try:
        outcome = fill_bug(entry, plan, report, now=clock.now(), by=clock.user())
    except ConflictError as exc:
        saved = _save_report(report, entry.record.id)
        raise ConflictError(
            f"{entry.path}: changed on disk while the probes ran; nothing was written to it",
            hint=f"the results are saved in {saved}; run the command again to fill the new version",
        ) from exc
    from kbgen.errors import relpath

    rel = relpath(entry.path)
    if not outcome.written:
        message = f"{outcome.bug_id}: nothing to change in {rel}"
    elif "history" not in outcome.changed:
        message = f"{outcome.bug_id}: same results as last time; updated the timestamps in {rel}"
    else:
        message = f"{outcome.bug_id}: wrote {', '.join(outcome.changed)} to {rel}"
        if outcome.status_change:
            message += f"; status {outcome.status_change[0]} -> {outcome.status_change[1]}"
    click.echo(message, err=as_json)


def _save_report(report: ProbeReport, bug_id: str) -> str:
    import tempfile

    with tempfile.NamedTemporaryFile(
        "w", prefix=f"kbgen-{bug_id}-", suffix=".json", delete=False, encoding="utf-8"
    ) as handle:
        handle.write(report.model_dump_json(indent=2))
    return handle.name


def _print_list(ctx: click.Context) -> None:
    from kbgen.probes.discovery import scan
    from kbgen.probes.text import format_list

    project = _project(ctx, required=False)
    specs, problems = scan(project)
    root = project.root if project else None
    click.echo(format_list(specs, lambda s: "built-in" if s.builtin else _rel(s.path, root)))
    for problem in problems:
        click.echo(f"warning: {problem.format()} (not listed)", err=True)


def _rel(path: Path, root: Path | None) -> str:
    from kbgen.errors import relpath

    return relpath(path, root)
