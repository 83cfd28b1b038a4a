"""``kbgen init``, ``kbgen kb list|copy`` and ``kbgen run``: kbgen in any repository."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kbgen.cli.common import load_clean_kb, one_line, project_of
from kbgen.errors import KbgenError
from kbgen.kinds import KNOWLEDGE

if TYPE_CHECKING:
    from kbgen.init import Action

#: what kbgen init says of each action, before (--dry-run) and after
WOULD = {"create": "create", "hook": "add hook", "ignore": "add site/ to", "differs": "replace"}
DID = {
    "create": "created",
    "replace": "replaced",
    "hook": "added the kbgen-validate hook to",
    "ignore": "added site/ to",
}


@click.command()
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path), default=".")
@click.option(
    "--force", is_flag=True, help="Replace files that differ from kbgen's (their diff is printed first)."
)
@click.option("--dry-run", is_flag=True, help="Say what would be written; write nothing.")
def init(folder: Path, force: bool, dry_run: bool) -> None:
    """Set up a KB in FOLDER (default: here), a git repository or not.

    Writes kb/bugs/, kb/probes/ (with a README), mkdocs.yml, docs/getting-started.md, a GitHub
    workflow that validates the KB and builds the site, and an issue form for GPU failures; adds
    the kbgen-validate hook to an existing .pre-commit-config.yaml and site/ to .gitignore. A
    file already there is never replaced without --force, and nothing is ever written through a
    symbolic link (a link, FIFO or device in the way is reported and left alone).

    \b
    Examples:
      kbgen init
      kbgen init --dry-run
    """
    from kbgen import init as scaffold

    actions = scaffold.check(folder)
    for action in actions:
        if action.status == "differs":
            if force:
                click.echo("".join(one_line(line) + "\n" for line in action.diff.splitlines()), nl=False)
            else:
                click.echo(f"kept     {action.path} (differs from kbgen's; --force replaces it)")
    if dry_run:
        for action in actions:
            if action.status in ("create", "hook", "ignore") or (action.status == "differs" and force):
                click.echo(f"would {WOULD[action.status]} {action.path}")
        _fail_on_skips(actions, written=False)
        return
    done = scaffold.apply(folder, actions, force=force)
    for action in done:
        if action.status != "skip":
            click.echo(f"{DID[action.status]} {action.path}")
    if any(action.status != "skip" for action in done):
        click.echo("Next: `kbgen validate`, then `kbgen serve` to read the KB.")
    elif not any(action.status == "skip" for action in actions):
        click.echo("Nothing to do: every file is in place.")
    _fail_on_skips(actions + done, written=True)


def _fail_on_skips(actions: list[Action], *, written: bool) -> None:
    """One error naming every place kbgen init left alone (once each), and why; exit status 1."""
    skipped = {action.path: action.reason for action in actions if action.status == "skip"}
    if skipped:
        rest = "the rest was written" if written else "kbgen init would write the rest"
        places = "".join(f"\n  {path}: {one_line(reason)}" for path, reason in skipped.items())
        raise KbgenError(
            f"kbgen init left {len(skipped)} place(s) alone:{places}",
            hint=f"nothing was written there; {rest}. Make each a plain file or folder, or add "
            "kbgen's part by hand",
        )


@click.group()
def kb() -> None:
    """The knowledge the KB holds: the base layer shipped with kbgen, and the project's own."""


@kb.command("list")
@click.option("--layer", type=click.Choice(["base", "project", "all"]), default="all", show_default=True)
@click.option("--kind", type=click.Choice(list(KNOWLEDGE)), help="Only this kind of record.")
@click.pass_context
def kb_list(ctx: click.Context, layer: str, kind: str | None) -> None:
    """List the error types, causes and fixes and the layer each comes from.

    \b
    Examples:
      kbgen kb list --layer base --kind error
      kbgen kb list --layer project
    """
    loaded = load_clean_kb(ctx)
    for each in [kind] if kind else list(KNOWLEDGE):
        for record_id in sorted(loaded.entries(KNOWLEDGE[each])):
            key = (each, record_id)
            origin = "base" if key in loaded.base else "project"
            if layer in ("all", origin):
                note = "  (overrides base)" if key in loaded.overrides else ""
                click.echo(f"{origin:<8} {each:<6} {record_id}{note}")


@kb.command("copy")
@click.argument("record_id", metavar="ID")
@click.pass_context
def kb_copy(ctx: click.Context, record_id: str) -> None:
    """Copy a base record into kb/ to change it for this project; the copy overrides it.

    \b
    Example:
      kbgen kb copy cuda-out-of-memory    # writes kb/errors/cuda-out-of-memory.md
    """
    from kbgen.errors import KbgenError, UnknownIdError

    loaded = load_clean_kb(ctx)
    found = [kind for name, kind in KNOWLEDGE.items() if (name, record_id) in loaded.base]
    if not found:
        where = [kind for kind in KNOWLEDGE.values() if record_id in loaded.entries(kind)]
        if where:
            path = loaded.project.rel(loaded.entries(where[0])[record_id].path)
            raise KbgenError(f"{record_id}: already a project record ({path})")
        raise UnknownIdError(f"no base record '{record_id}'", hint="`kbgen kb list --layer base` lists them")
    kind = found[0]
    source = loaded.entries(kind)[record_id].path
    target = loaded.project.folder(kind) / source.name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    click.echo(f"copied {loaded.project.rel(source)} to {loaded.project.rel(target)}; edit it there")


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
    from kbgen import runcmd

    argv = list(command)
    outcome = runcmd.run(argv, grace=grace)
    how = f"killed by {outcome.signal}" if outcome.signal else f"exit status {outcome.status}"
    if outcome.stopped_by:
        click.echo(f"\nkbgen: stopped by {outcome.stopped_by}; the command ended ({how}).", err=True)
        ctx.exit(outcome.status)
    if outcome.status == 0:
        ctx.exit(0)
    click.echo(f"\nkbgen: the command failed ({how}).", err=True)
    if outcome.error_file.note:
        from kbgen.errorfile import VARIABLE

        note = outcome.error_file.note
        click.echo(f"kbgen: ignored the torchrun error file ({VARIABLE}): {note}", err=True)
    from kbgen.errors import KbgenError

    try:
        file_by_default = not outcome.interrupted  # after Ctrl-C filing is offered, not assumed
        text = outcome.report_text()
        ran = (argv, outcome.status)
        _after_failure(ctx, text, file_bug, runcmd.python_of(argv) or python, ran, file_by_default)
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
