"""``kbgen import``: bring bug reports written elsewhere (Markdown, GitHub issues) into kb/bugs/."""

from __future__ import annotations

import click

from kbgen.cli.common import project_of

# --------------------------------------------------------------------------- import


@click.command("import")
@click.argument("paths", nargs=-1, metavar="PATH...")
@click.option("--dry-run", is_flag=True, help="Show what would be written; write nothing.")
@click.option(
    "--github",
    "github",
    metavar="FILE.json",
    help="Import GitHub issues filed through the gpu-failure form, from the JSON "
    "`gh issue list --json number,title,body,labels,createdAt,author,url` prints (- reads standard input; "
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
      gh issue list --json number,title,body,labels,createdAt,author,url > issues.json
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
    from kbgen.cli.common import bug_template, load_clean_kb, one_line
    from kbgen.importer.github import GithubImport
    from kbgen.importer.issues import read_issue_list

    items = read_issue_list(source)
    kb = load_clean_kb(ctx)
    refused = 0
    for done in GithubImport(kb, bug_template(kb.project)).run(items, dry_run=dry_run):
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
        for note in done.notes:  # a value of the issue that is not what gh prints
            click.echo(f"{done.name}: {one_line(note)}", err=True)
    if refused:
        click.echo(f"{refused} of {len(items)} issue(s) not imported", err=True)
        ctx.exit(1)
    if not items:
        click.echo(f"{source}: the list holds no issues; nothing to import")


def _indent(text: str) -> str:
    return "\n".join(f"    {line}" if line else "" for line in text.splitlines())
