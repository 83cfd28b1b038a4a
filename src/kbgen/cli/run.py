"""``kbgen run COMMAND``: run a command; when it fails, name the error and file a bug."""

from __future__ import annotations

import sys
from typing import Any

import click

from kbgen.cli.common import load_clean_kb, project_of


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@click.option("--file-bug", is_flag=True, help="On failure, file the bug without asking (for CI).")
@click.option("--python", metavar="PATH", help="Interpreter to probe when COMMAND is not a Python command.")
@click.option(
    "--grace",
    metavar="SECONDS",
    type=click.FloatRange(min=0),
    default=30.0,
    show_default=True,
    help="When kbgen is stopped, how long COMMAND has to exit after the signal before it is killed.",
)
@click.pass_context
def run(
    ctx: click.Context, command: tuple[str, ...], file_bug: bool, python: str | None, grace: float
) -> None:
    """Run COMMAND; when it fails, name the error and file a bug with the machine's facts.

    The output passes through unchanged (a pseudo-terminal on a terminal keeps colours and
    progress bars). On success nothing is kept. On failure (non-zero exit or a signal) the
    end of the output is triaged; after a confirmation (or with --file-bug) a bug is written
    from it and filled by the probes, run in the command's Python. Exits with COMMAND's status.

    When kbgen is stopped (SIGTERM, SIGHUP, or SIGINT without a terminal) it passes the signal
    on, waits for COMMAND (killing it after --grace seconds) and exits with its status; nothing
    is triaged. Ctrl-C at a terminal reaches COMMAND directly; kbgen waits for it, then triages
    a failure as usual but files the bug only when told to.

    \b
    Examples:
      kbgen run -- python train.py --epochs 3
      kbgen run --file-bug -- torchrun --nproc-per-node 2 train.py
    """
    from kbgen.run import command as run_command

    argv = list(command)
    outcome = run_command.run(argv, grace=grace)
    how = f"killed by {outcome.signal}" if outcome.signal else f"exit status {outcome.status}"
    if outcome.stopped_by:
        click.echo(f"\nkbgen: stopped by {outcome.stopped_by}; the command ended ({how}).", err=True)
        ctx.exit(outcome.status)
    if outcome.status == 0:
        ctx.exit(0)
    click.echo(f"\nkbgen: the command failed ({how}).", err=True)
    if outcome.error_file.note:
        from kbgen.run.errorfile import VARIABLE

        note = outcome.error_file.note
        click.echo(f"kbgen: ignored the torchrun error file ({VARIABLE}): {note}", err=True)
    from kbgen.errors import KbgenError

    try:
        file_by_default = not outcome.interrupted  # after Ctrl-C filing is offered, not assumed
        text = outcome.report_text()
        ran = (argv, outcome.status)
        _after_failure(ctx, text, file_bug, run_command.python_of(argv) or python, ran, file_by_default)
    except KbgenError as exc:  # the command's own status still wins
        click.echo(f"Error: {exc}", err=True)
    ctx.exit(outcome.status)


def _after_failure(
    ctx: click.Context,
    text: str,
    file_bug: bool,
    python: str | None,
    ran: tuple[list[str], int | None] = ([], None),
    default: bool = True,
) -> None:
    from kbgen.seen.run import seen_before
    from kbgen.triage import triage_text

    loaded = load_clean_kb(ctx)
    report = triage_text(text, loaded, "the command's output")
    if report.matches:
        best = report.matches[0]
        click.echo(f"kbgen: looks like {best.error} ({best.title}).", err=True)
    elif _no_gpu_failure(loaded, report, text):
        return
    if seen_before(loaded, report, file_bug, ran):
        return
    if not file_bug:
        if not sys.stdin.isatty():
            click.echo("kbgen: run with --file-bug to write a bug report for it.", err=True)
            return
        try:
            if not click.confirm("File a bug and fill it with the probes?", default=default, err=True):
                return
        except click.Abort:  # Ctrl-D or Ctrl-C at the question: file nothing
            return
    bug_id = _new_bug(ctx, loaded, text)
    from kbgen.cli.probe import probe

    ctx.invoke(
        probe,
        ids=(),
        as_json=False,
        bug_id=bug_id,
        python=python,
        list_only=False,
        timeout=None,
        redact_paths=False,
    )


def _no_gpu_failure(loaded: Any, report: Any, text: str) -> bool:
    """Say what an unmatched failure is; True when it is the program's own error (no bug filed:
    the KB is for GPU failures)."""
    from kbgen.redact import redact_text
    from kbgen.triage.verdict import NOT_GPU, outcome_of

    outcome = outcome_of(report, text, loaded)
    if outcome.verdict == NOT_GPU and outcome.failure is not None:
        where = outcome.failure.user_frame
        at = f" (your code: {redact_text(where.where())})" if where else ""
        click.echo(f"kbgen: not a GPU failure: {redact_text(outcome.failure.line)}{at}", err=True)
        click.echo("kbgen: no bug filed; fix the program or its data.", err=True)
        return True
    click.echo("kbgen: no known error type matches the output.", err=True)
    if outcome.guesses:
        shown = ", ".join(g.error for g in outcome.guesses)
        click.echo(f"kbgen: nearest error types, as guesses: {shown}", err=True)
    return False


def _new_bug(ctx: click.Context, loaded: Any, text: str) -> str:
    """The `new-bug --from-log` path, on the kept output."""
    from kbgen.bugs.create import create_bug, draft_new_bug
    from kbgen.cli.common import bug_template

    new = draft_new_bug(loaded, text, name="the command's output")
    bug_id, path = create_bug(loaded, new, template=bug_template(project_of(ctx)))
    click.echo(f"{bug_id} {loaded.project.rel(path)}", err=True)
    return bug_id
