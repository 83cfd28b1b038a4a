"""``kbgen probe``: run probes in the interpreter under test; print, export or fill a bug with them."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import click

from kbgen.cli.common import complete_bug_ids, complete_probe_ids, project_of

if TYPE_CHECKING:
    from kbgen.models import Bug
    from kbgen.probes.discovery import ProbeSpec
    from kbgen.probes.record import ProbeRun
    from kbgen.probes.report import ProbeReport
    from kbgen.probes.runner import ProbeSession
    from kbgen.store import Entry, Kb, Project

# Built-ins that never import torch: asking only for these does not start the torch worker early.
PLAIN_BUILTINS = frozenset({"system", "packages", "debug-env", "dist-env", "import-timing"})
COLOURS = {
    "pass": "green",
    "warn": "yellow",
    "fail": "red",
    "crash": "red",
    "timeout": "red",
    "error": "magenta",
}
MIN_MEMORY = 64 * 2**20  # below this a worker cannot even read its job list


if TYPE_CHECKING:
    _IntType = click.ParamType[int]  # generic from click 8.4 on; kbgen runs with click 8.1 too
else:
    _IntType = click.ParamType


class Size(_IntType):
    """A size in bytes written as 512M, 4G, 1.5G or 0 (no limit)."""

    name = "size"
    UNITS: ClassVar[dict[str, int]] = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        text = str(value).strip().lower()
        found = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?", text)
        if text in ("none", "0") or (found and float(found[1]) == 0):
            return 0
        if not found:
            self.fail(f"{value!r} is not a size such as 512M or 4G (0 for no limit)", param, ctx)
        size = int(float(found[1]) * self.UNITS[found[2]])
        if size < MIN_MEMORY:
            self.fail(f"{value} is too small for a Python process; give at least 64M", param, ctx)
        return size


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
@click.option(
    "--from-fleet",
    "node",
    metavar="NODE",
    help="With --fill: take the results from NODE's newest fleet report instead of running probes here.",
)
@click.option("--redact-paths", is_flag=True, help="Write the home folder as ~ and the user name as <user>.")
@click.option(
    "--memory-limit",
    "memory",
    type=Size(),
    metavar="SIZE",
    help="Memory cap for each probe and what it starts, e.g. 4G (default: half of this machine's; 0: none).",
)
@click.option(
    "--primary",
    is_flag=True,
    help="With --fill: this machine is the failing one (listed first on the bug). Default: the first filled.",
)
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
    memory: int | None,
    node: str | None,
    primary: bool,
) -> None:
    """Run probes: small checks of this machine, run in child processes.

    Without PROBE-IDs the default set runs. Each probe runs isolated: one that
    crashes, hangs, prints garbage or runs out of memory becomes a result and
    the others still run. On a terminal each probe shows as it finishes.

    \b
    Examples:
      kbgen probe                          # the default probes, as a table
      kbgen probe gpu compat               # chosen probes
      kbgen probe --json                   # machine-readable report
      kbgen probe --fill BUG-20251109-002  # run the bug's probes, write this machine's results into it
      kbgen probe --python .venv/bin/python --fill BUG-20251109-002
      kbgen probe --list                   # what each probe checks
      kbgen probe --memory-limit 4G        # cap each probe's memory at 4 GiB
      kbgen probe --fill BUG-20251109-002 --from-fleet gpu07  # facts from a fleet node
    """
    if list_only:
        _print_list(ctx)
        return
    if node is not None:
        _fill_from_fleet(ctx, node, bug_id, as_json, primary)
        return
    from kbgen.probes.process import Interrupted, stop_on_signals

    try:
        with stop_on_signals():
            report, fill = _run_session(
                ctx, list(ids), bug_id, python, timeout, memory, redact_paths, as_json
            )
    except Interrupted as stop:
        click.echo(f"Interrupted by {stop.name}: stopped every probe.", err=True)
        ctx.exit(128 + stop.signum)
    _show(report, as_json)
    if report.interpreter_error:
        if as_json:
            ctx.exit(1)
        from kbgen.errors import ProbeError

        raise ProbeError(f"the interpreter cannot run probes: {report.interpreter_error}")
    if fill is not None:
        _fill(*fill, report, as_json, primary)


def _run_session(
    ctx: click.Context,
    ids: list[str],
    bug_id: str | None,
    python: str | None,
    timeout: float | None,
    memory: int | None,
    redact_paths: bool,
    as_json: bool,
) -> tuple[ProbeReport, tuple[Entry[Bug], Any, Any] | None]:
    """Start the session, run the probes and always stop every worker, whatever happens."""
    from kbgen.probes.runner import ProbeSession

    # Start the torch worker first: its import of torch then overlaps with loading the KB here.
    wants_torch = bug_id is not None or not ids or not set(ids) <= PLAIN_BUILTINS
    live = not as_json and sys.stdout.isatty()
    session = ProbeSession(python, torch=wants_torch, timeout=timeout, memory=memory)
    try:
        return _run(ctx, session, ids, bug_id, redact_paths, live)
    finally:
        session.close()


def _run(
    ctx: click.Context,
    session: ProbeSession,
    ids: list[str],
    bug_id: str | None,
    redact_paths: bool,
    live: bool,
) -> tuple[ProbeReport, tuple[Entry[Bug], Any, Any] | None]:
    from kbgen import clock
    from kbgen.probes.build import build_report
    from kbgen.probes.discovery import scan, select

    project = _project(ctx, required=bug_id is not None)
    specs, problems = scan(project)
    for problem in problems:
        click.echo(f"warning: {problem.format()} (probe skipped)", err=True)
    fill = None
    if bug_id is not None:
        assert project is not None
        from kbgen.bugs.fill import plan_fill
        from kbgen.store import load_kb

        kb = load_kb(project)
        entry = _bug_entry(kb, bug_id)
        plan = plan_fill(kb, entry.record, specs)
        for missing in plan.missing:
            click.echo(f"warning: {entry.record.id} names probe '{missing}', which does not exist", err=True)
        ids = ids or plan.probe_ids
        fill = (entry, plan, kb.fixes)
    chosen = select(specs, ids, problems)
    run = _run_live(session, chosen) if live else session.run(chosen)
    report = build_report(run, chosen, redact_paths=redact_paths, now=clock.now(), host=clock.hostname())
    report.problems = [p.format() for p in problems]
    return report, fill


def _run_live(session: ProbeSession, chosen: list[ProbeSpec]) -> ProbeRun:
    """Run with a table on the terminal that fills in as probes finish (the full report follows)."""
    from kbgen.probes.progress import LiveTable

    with LiveTable(chosen, COLOURS) as table:
        return session.run(chosen, on_result=table.finished)


def _fill_from_fleet(ctx: click.Context, node: str, bug_id: str | None, as_json: bool, primary: bool) -> None:
    """Fill a bug from a node's newest fleet report: the facts of the machine that failed."""
    from kbgen.bugs.fill import plan_fill
    from kbgen.errors import KbgenError
    from kbgen.fleet.store import node_report
    from kbgen.probes.discovery import scan
    from kbgen.store import load_kb

    if bug_id is None:
        raise KbgenError("--from-fleet needs --fill BUG-ID")
    project = project_of(ctx)
    report = node_report(project, node)
    kb = load_kb(project)
    entry = _bug_entry(kb, bug_id)
    specs, _ = scan(project)
    plan = plan_fill(kb, entry.record, specs)
    _show(report, as_json)
    _fill(entry, plan, kb.fixes, report, as_json, primary)


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


def _bug_entry(kb: Kb, bug_id: str) -> Entry[Bug]:
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
    from kbgen.probes.terminal import format_table

    if report.interpreter_error is None:
        click.echo(format_table(report, lambda text, status: click.style(text, fg=COLOURS.get(status))))


def _fill(
    entry: Entry[Bug], plan: Any, fixes: Any, report: ProbeReport, as_json: bool, primary: bool
) -> None:
    from kbgen import clock
    from kbgen.bugs.fill import fill_bug
    from kbgen.errors import ConflictError

    try:
        outcome = fill_bug(
            entry, plan, report, now=clock.now(), by=clock.user(), primary=primary, fixes=fixes
        )
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
    if outcome.verified_fixes:
        message += f"; last_verified set on {', '.join(outcome.verified_fixes)}"
    click.echo(message, err=as_json)
    if outcome.cannot_reproduce:
        click.echo(
            f"{outcome.bug_id}: this machine {outcome.cannot_reproduce}. Its facts are kept, marked so; "
            f"run `kbgen probe --fill {outcome.bug_id}` where torch sees a CUDA GPU (or add "
            "--from-fleet NODE) for the failing machine's facts.",
            err=as_json,
        )


def _save_report(report: ProbeReport, bug_id: str) -> str:
    import tempfile

    with tempfile.NamedTemporaryFile(
        "w", prefix=f"kbgen-{bug_id}-", suffix=".json", delete=False, encoding="utf-8"
    ) as handle:
        handle.write(report.model_dump_json(indent=2))
    return handle.name


def _print_list(ctx: click.Context) -> None:
    from kbgen.probes.discovery import scan
    from kbgen.probes.terminal import format_list

    project = _project(ctx, required=False)
    specs, problems = scan(project)
    root = project.root if project else None
    click.echo(format_list(specs, lambda s: "built-in" if s.builtin else _rel(s.path, root)))
    for problem in problems:
        click.echo(f"warning: {problem.format()} (not listed)", err=True)


def _rel(path: Path, root: Path | None) -> str:
    from kbgen.errors import relpath

    return relpath(path, root)
