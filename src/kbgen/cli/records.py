"""Commands over the records themselves: validate, new-bug, list, renumber, schema."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kbgen.cli.common import (
    bug_template,
    complete_bug_ids,
    complete_error_ids,
    load_clean_kb,
    one_line,
    project_of,
)
from kbgen.kinds import BUG, KINDS
from kbgen.vocab import Severity, Status

if TYPE_CHECKING:
    from kbgen.errors import Problem

#: the choices offered on the command line are the models' own values (kbgen.vocab: no pydantic)
SEVERITIES = [s.value for s in Severity]
STATUSES = [s.value for s in Status]


# --------------------------------------------------------------------------- validate


@click.command()
@click.option("--strict", is_flag=True, help="Fail on warnings too.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "github"]),
    default="text",
    show_default=True,
    help="github prints workflow annotations.",
)
@click.pass_context
def validate(ctx: click.Context, strict: bool, fmt: str) -> None:
    """Check every KB file, report every problem, then fail once.

    Schema errors and unknown keys, dangling links between records, duplicate bug ids,
    template placeholders, sections that say nothing (the ones `kbgen import` drops),
    mojibake and statuses the record does not back up.
    Exit 0 when clean, 1 on errors (or on warnings with --strict).

    \b
    Example:
      kbgen validate --strict --format github
    """
    from kbgen.store import load_kb
    from kbgen.validate import validate_kb

    kb = load_kb(project_of(ctx))
    problems = validate_kb(kb)
    errors = [p for p in problems if p.severity == "error"]
    warnings = [p for p in problems if p.severity != "error"]
    counted = sum(len(kb.entries(kind)) for kind in KINDS.values())
    files = counted + len({p.path for p in kb.problems})
    overrides = [
        (kb.project.rel(kb.entries(KINDS[kind])[record_id].path), kind, kb.project.rel(base))
        for (kind, record_id), base in sorted(kb.overrides.items())
    ]
    _print_problems(problems, fmt, files, overrides)
    if fmt == "text":
        for path, kind, base in overrides:
            click.echo(f"{path}: overrides the base {kind} {base}")
    if errors or (strict and warnings):
        ctx.exit(1)


def _print_problems(
    problems: list[Problem], fmt: str, files: int, overrides: list[tuple[str, str, str]] | None = None
) -> None:
    errors = sum(p.severity == "error" for p in problems)
    warnings = len(problems) - errors
    if fmt == "json":
        rows = [
            {
                "path": p.path,
                "line": p.line,
                "field": p.field,
                "message": p.message,
                "severity": p.severity,
                "code": p.code,
            }
            for p in problems
        ]
        click.echo(
            json.dumps(
                {
                    "files": files,
                    "errors": errors,
                    "warnings": warnings,
                    "problems": rows,
                    "overrides": [{"path": p, "kind": k, "base": b} for p, k, b in overrides or []],
                },
                indent=2,
            )
        )
        return
    for p in problems:
        if fmt == "github":
            line = f",line={p.line}" if p.line else ""
            text = p.format().replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
            click.echo(f"::{p.severity} file={p.path}{line},title=kbgen validate::{text}")
        else:
            label = "" if p.severity == "error" else "warning: "
            click.echo(
                one_line(
                    f"{p.path}{':' + str(p.line) if p.line else ''}: {label}"
                    f"{p.field + ': ' if p.field else ''}{p.message}"
                )
            )
    if fmt == "text":
        if problems:
            click.echo(f"{errors} error(s), {warnings} warning(s) in {files} file(s)")
        else:
            click.echo(f"{files} file(s) checked: no problems")


# --------------------------------------------------------------------------- new-bug


@click.command("new-bug")
@click.option("--title", help="One line: what broke, where.")
@click.option(
    "--error",
    "error_id",
    metavar="ERROR-ID",
    shell_complete=complete_error_ids,
    help="Error type id (`kbgen kb list --kind error`); its diagnostic steps become the bug's checklist.",
)
@click.option("--severity", type=click.Choice(SEVERITIES, case_sensitive=False), help="Default: medium.")
@click.option("--tag", "tags", multiple=True, help="Repeat for several tags.")
@click.option("--assignee")
@click.option("--message", help="The error message or traceback excerpt.")
@click.option("--repro", metavar="PROBE-ID", help="A probe that reproduces the bug (kb/probes/<id>.py).")
@click.option("--date", "day", metavar="YYYY-MM-DD", help="Date part of the id. Default: today.")
@click.option(
    "--from-log",
    "from_log",
    metavar="FILE",
    help="Take error type, title and message from a log "
    "('-' for stdin); secrets and home paths are redacted.",
)
@click.option(
    "--open", "open_editor", is_flag=True, help="Open the new file in $EDITOR (in a terminal only)."
)
@click.option(
    "--duplicate-of", "duplicate_of", metavar="BUG-ID", help="File it closed, as a duplicate of this bug."
)
@click.option("--json", "as_json", is_flag=True, help="Print the new bug's id and file as JSON.")
@click.pass_context
def new_bug(ctx: click.Context, /, **opts: Any) -> None:
    """Write a new numbered bug report, BUG-YYYYMMDD-NNN.

    Prompts for what is missing when run in a terminal. The frontmatter is written from the
    bug's fields, the body from kbgen's bug template (a project's own templates/bug.md.j2
    overrides it), and the file passes `kbgen validate --strict` as written: the sections left
    for you hold `<!-- prompt: ... -->` comments.
    With --from-log the title names the error and where it failed (`CUDA illegal memory
    access in bce_loss.py:31 (forward)`).

    \b
    Examples:
      kbgen new-bug --title "Illegal memory access in BCE loss" --error cuda-illegal-memory-access
      python train.py 2>&1 | tail -200 > crash.log; kbgen new-bug --from-log crash.log
    """
    from kbgen.bugs.create import NewBug, create_bug, parse_date
    from kbgen.models import Severity

    kb = load_clean_kb(ctx)
    log = _fill_from_log(opts, kb) if opts["from_log"] else None
    from kbgen.seen.newbug import duplicate_target, warn_if_known

    target = duplicate_target(kb, opts["duplicate_of"])
    if target is None and opts["message"]:
        warn_if_known(kb, opts["message"], opts["error_id"])
    _ask_for_missing(opts, kb)
    new = NewBug(
        title=opts["title"].strip(),
        severity=Severity(opts["severity"] or "medium"),
        error=opts["error_id"] or None,
        tags=list(dict.fromkeys(opts["tags"])),
        assignee=opts["assignee"],
        message=opts["message"],
        repro=opts["repro"],
        date=parse_date(opts["day"]) if opts["day"] else None,
        duplicate_of=target,
    )
    bug_id, path = create_bug(kb, new, template=bug_template(kb.project))
    if log is not None and opts["from_log"] != "-":
        _add_pasted_environment(*log, path, kb)
    if opts["as_json"]:
        click.echo(json.dumps({"id": bug_id, "path": kb.project.rel(path)}))
    else:
        click.echo(f"{bug_id} {kb.project.rel(path)}")
    if opts["open_editor"]:
        if has_terminal():
            click.edit(filename=str(path))
        else:  # an editor without a terminal would hang a script or CI job
            click.echo("not opening an editor: no terminal", err=True)


def has_terminal() -> bool:
    """True when a person sits at this command: both stdin and stdout are terminals."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def _fill_from_log(opts: dict[str, Any], kb: Any) -> tuple[str, str]:
    """Take what the options leave empty (title, error, message) from the log; ``(text, name)``
    of the log, read once (a long one: its first and last 8 MiB)."""
    from kbgen.bugs.create import draft_new_bug
    from kbgen.envreport.rank import source_text

    text, name = source_text(opts["from_log"], refuse_binary=False)
    draft = draft_new_bug(kb, text, name=name)
    opts["title"] = opts["title"] or draft.title
    opts["error_id"] = opts["error_id"] or draft.error
    opts["message"] = opts["message"] or draft.message
    return text, name


def _add_pasted_environment(text: str, name: str, path: Path, kb: Any) -> None:
    """The environment the log shows (collect_env, nvidia-smi, ...), as the bug's pasted environment."""
    from kbgen.envreport.pasted import add_pasted, pasted_environment

    env = pasted_environment(text, f"pasted in {Path(name).name}")
    if env is not None:
        add_pasted(path, kb.project, env)


def _ask_for_missing(opts: dict[str, Any], kb: Any) -> None:
    from kbgen.errors import KbgenError

    if opts["title"] and opts["title"].strip():
        return
    if not sys.stdin.isatty():
        raise KbgenError(
            "--title is required when stdin is not a terminal",
            hint='kbgen new-bug --title "what broke, where" [--error ID] [--severity high]',
        )
    opts["title"] = click.prompt("Title (what broke, where)").strip()
    if not opts["error_id"]:
        choices = click.Choice(["", *sorted(kb.errors)])
        opts["error_id"] = click.prompt(
            "Error type (empty if unknown; `kbgen triage LOG` suggests one)",
            default="",
            type=choices,
            show_choices=False,
        )
    if not opts["severity"]:
        opts["severity"] = click.prompt("Severity", default="medium", type=click.Choice(SEVERITIES))


# --------------------------------------------------------------------------- list


@click.command("list")
@click.option(
    "--status",
    "statuses",
    multiple=True,
    type=click.Choice(STATUSES, case_sensitive=False),
    help="Repeatable.",
)
@click.option(
    "--severity",
    "severities",
    multiple=True,
    type=click.Choice(SEVERITIES, case_sensitive=False),
    help="Repeatable.",
)
@click.option(
    "--error",
    "errors",
    multiple=True,
    metavar="ERROR-ID",
    shell_complete=complete_error_ids,
    help="Repeatable.",
)
@click.option("--tag", "tags", multiple=True, help="Repeatable; a bug must carry every tag given.")
@click.option("--json", "as_json", is_flag=True, help="One JSON array of bug records.")
@click.pass_context
def list_bugs(
    ctx: click.Context,
    statuses: tuple[str, ...],
    severities: tuple[str, ...],
    errors: tuple[str, ...],
    tags: tuple[str, ...],
    as_json: bool,
) -> None:
    """List bugs, newest first, optionally filtered.

    \b
    Example:
      kbgen list --status open --severity high --severity critical
    """
    kb = load_clean_kb(ctx)
    bugs = [
        b
        for b in kb.records(BUG).values()
        if (not statuses or b.status.value in statuses)
        and (not severities or b.severity.value in severities)
        and (not errors or b.error in errors)
        and set(tags) <= set(b.tags)
    ]
    bugs.sort(key=lambda b: (b.updated, b.id), reverse=True)
    if as_json:
        click.echo(json.dumps([_json_of(b) for b in bugs], indent=2))
        return
    if not bugs:
        click.echo("no bugs match")
        return
    width = max(len(b.status.value) for b in bugs)
    for b in bugs:
        title = one_line(b.title)
        click.echo(f"{b.id}  {b.status.value:<{width}}  {b.severity.value:<8}  {b.error or '-':<28}  {title}")


def _json_of(bug: Any) -> Any:
    """A bug as plain JSON values; NaN and infinity (which JSON has no words for) become null."""
    return json.loads(bug.model_dump_json(by_alias=True))


# --------------------------------------------------------------------------- renumber / schema


@click.command()
@click.argument("bug_id", metavar="BUG-ID", shell_complete=complete_bug_ids)
@click.option(
    "--date", "day", metavar="YYYY-MM-DD", help="Date part of the new id. Default: the old id's date."
)
@click.pass_context
def renumber(ctx: click.Context, bug_id: str, day: str | None) -> None:
    """Move a bug to a free id, keeping the old one as an alias.

    When two branches minted the same id, this moves the newer report; links to the
    old id still resolve through the alias.

    \b
    Examples:
      kbgen renumber BUG-20251109-002                    # the next free id of the same day
      kbgen renumber BUG-20251109-002 --date 2025-11-10  # a free id of another day
    """
    from kbgen.bugs.create import parse_date
    from kbgen.bugs.renumber import renumber as do_renumber
    from kbgen.store import load_kb

    kb = load_kb(project_of(ctx))
    done = do_renumber(kb, bug_id, parse_date(day) if day else None)
    note = f" ({done.note})" if done.note else ""
    click.echo(f"{bug_id} -> {done.new_id} {kb.project.rel(done.path)}{note}")


@click.command()
@click.argument("kind", required=False, type=click.Choice([*KINDS, "probe"]))
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write <kind>.schema.json files here instead of printing.",
)
def schema(kind: str | None, out_dir: Path | None) -> None:
    """Print (or write) the JSON Schema of each record kind, for editors and other tools.

    \b
    Examples:
      kbgen schema bug                  # the bug schema on stdout
      kbgen schema --out .schemas       # one <kind>.schema.json per kind, for an editor's YAML support
    """
    from pydantic import BaseModel

    from kbgen.models import ProbeMeta

    models: dict[str, type[BaseModel]] = {**{name: k.model for name, k in KINDS.items()}, "probe": ProbeMeta}
    chosen = [kind] if kind else list(models)
    schemas = {k: models[k].model_json_schema(by_alias=True) for k in chosen}
    if out_dir is None:
        click.echo(json.dumps(schemas[chosen[0]] if kind else schemas, indent=2))
        return
    from kbgen.errors import KbgenError

    for name, body in schemas.items():
        target = out_dir / f"{name}.schema.json"
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            raise KbgenError(f"{exc.filename or target}: cannot write: {exc.strerror or exc}") from None
        click.echo(str(target))
