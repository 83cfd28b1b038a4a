"""``kbgen new-error``: teach kbgen an error it does not know, from a log that shows it."""

from __future__ import annotations

import json

import click

from kbgen.cli.common import load_clean_kb


@click.command("new-error")
@click.option("--from-log", "from_log", metavar="FILE", required=True, help="The log ('-' for stdin).")
@click.option("--id", "error_id", metavar="ID", help="The new error type's id. Default: from the error line.")
@click.option("--title", help="One line. Default: the error line with its numbers and paths as N.")
@click.option("--anyway", is_flag=True, help="Draft one even when an error type matches the log already.")
@click.option("--dry-run", is_flag=True, help="Print the draft; write nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the draft's id, file and signature as JSON.")
@click.pass_context
def new_error(
    ctx: click.Context,
    from_log: str,
    error_id: str | None,
    title: str | None,
    anyway: bool,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Draft an error type in kb/errors/ from the error line of a log.

    The line (the last Python exception, else the last line that says error or failed) becomes
    the signature, with hex addresses, paths, sizes and numbers as wildcards. kbgen refuses a
    signature that also matches a line of its negative logs (real errors that are no GPU
    failure): too generic to name this error. The draft has the sections to fill (causes,
    diagnostics, sources); `kbgen validate` checks it like any record.

    \b
    Example:
      kbgen new-error --from-log train.log
      kbgen new-error --from-log train.log --id fused-adam-step-error --dry-run
    """
    from kbgen.envreport.rank import source_text
    from kbgen.errordraft import draft_error, write_draft
    from kbgen.errors import KbgenError
    from kbgen.store import load_kb
    from kbgen.triage import triage_text

    kb = load_clean_kb(ctx)
    text, source = source_text(from_log, refuse_binary=False)
    matches = triage_text(text, kb, name=source).matches  # its environment is not needed here
    if matches and not anyway:
        top = matches[0].error
        raise KbgenError(
            f"{source}: kbgen names this error already: {top}",
            hint=f"`kbgen kb copy {top}` lets this project change that type; --anyway drafts a new one",
        )
    draft = draft_error(kb, text, source, error_id=error_id, title=title)
    path = None if dry_run else write_draft(kb, draft)
    if as_json:
        shown = {"id": draft.id, "file": kb.project.rel(path) if path else None, "regex": draft.regex}
        click.echo(json.dumps({**shown, "line": draft.line, "written": path is not None}, indent=2))
        return
    if path is None:
        click.echo(draft.text, nl=False)
        return
    named = triage_text(text, load_kb(kb.project), name=source).matches
    click.echo(f"wrote {kb.project.rel(path)}: a draft of the error type '{draft.id}'")
    click.echo(f"  signature: {draft.regex}")
    if named and named[0].error == draft.id:
        click.echo(f"  `kbgen triage {from_log if from_log != '-' else 'FILE'}` now names it.")
    click.echo(
        "Fill in its summary, causes, diagnostics and sources; `kbgen validate` lists what is missing."
    )
