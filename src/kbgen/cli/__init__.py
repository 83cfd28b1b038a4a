"""The ``kbgen`` command. Only ``kbgen.cli`` imports click.

Commands live in small modules beside this one and are imported only when they run (or when
``--help`` lists them), so ``kbgen --help`` starts without pydantic, mkdocs, rich or torch.
Every :class:`~kbgen.errors.KbgenError` is printed here as one message with exit status 1.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from kbgen import __version__
from kbgen.errors import KbgenError

#: command name -> "module:function" inside kbgen.cli
COMMANDS: dict[str, str] = {
    "validate": "records:validate",
    "new-bug": "records:new_bug",
    "list": "records:list_bugs",
    "show": "bug:show",
    "status": "bug:status",
    "fix": "bug:fix",
    "step": "bug:step",
    "migrate": "bug:migrate",
    "renumber": "records:renumber",
    "schema": "records:schema",
    "probe": "probe:probe",
    "serve": "site:serve",
    "build-pages": "site:build_pages",
    "triage": "triage:triage",
    "new-error": "newerror:new_error",
    "import": "import_reports:import_reports",
    "fleet": "fleet:fleet",
    "init": "project:init",
    "kb": "project:kb",
    "run": "run:run",
    "env": "env:env",
}


class UserError(click.ClickException):
    """A KbgenError on its way out: click prints ``Error: message`` to stderr, exit 1."""

    exit_code = 1


class LazyGroup(click.Group):
    """Imports a command's module only when that command is looked up."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        module = importlib.import_module(f"kbgen.cli.{module_name}")
        command: click.Command = getattr(module, attr)
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and name not in COMMANDS:
            from kbgen.errors import did_you_mean

            guess = did_you_mean(name, COMMANDS)
            guess = f" {guess[0].upper()}{guess[1:]}" if guess else ""
            ctx.fail(f"No such command '{name}'.{guess} `kbgen --help` lists the commands.")
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KbgenError as exc:
            raise UserError(str(exc)) from None
        except OSError as exc:  # a file or folder the system refused, never a traceback
            where = f"{exc.filename}: " if exc.filename else ""
            raise UserError(f"{where}{exc.strerror or exc}") from None
        except KeyboardInterrupt:
            click.echo("Interrupted.", err=True)
            ctx.exit(130)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kbgen")
@click.option(
    "--kb",
    "kb_path",
    metavar="PATH",
    envvar="KBGEN_KB",
    help="Project (or its kb/ folder) to use. Default: the first folder with a kb/, walking up.",
)
@click.pass_context
def cli(ctx: click.Context, kb_path: str | None) -> None:
    """kbgen: turn CUDA/PyTorch failures into a knowledge base that runs.

    \b
    Bug reports, error types, root causes and fixes live in kb/ as Markdown
    files with YAML frontmatter; probes fill reports with facts from this
    machine; `kbgen serve` shows it all as a site.
    """
    from pathlib import Path

    try:
        Path.cwd()
    except OSError:
        raise KbgenError(
            "the current folder no longer exists (it was deleted or moved)",
            hint="cd into your project again and rerun the command",
        ) from None
    ctx.obj = {"kb_path": kb_path}


def main() -> None:
    """Console-script entry point."""
    cli.main(prog_name="kbgen")


if __name__ == "__main__":  # pragma: no cover
    main()
