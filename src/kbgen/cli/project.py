"""``kbgen init`` and ``kbgen kb list|copy``: kbgen in a team's repository, over the base layer."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from kbgen.cli.common import load_clean_kb, one_line
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
    from kbgen.errors import UnknownIdError
    from kbgen.fileio import atomic_write, read_limited

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
    try:  # create only: a file or link already at the name is never written through
        atomic_write(target, read_limited(source), exclusive=True)
    except FileExistsError:
        raise KbgenError(
            f"{loaded.project.rel(target)}: already exists and is not the record {record_id}",
            hint="move it out of the way, then copy again",
        ) from None
    click.echo(f"copied {loaded.project.rel(source)} to {loaded.project.rel(target)}; edit it there")
