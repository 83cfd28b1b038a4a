"""Commands for the site: serve it with live reload, or write its pages to a folder."""

from __future__ import annotations

import logging
import signal
from pathlib import Path

import click

from kbgen.cli.common import project_of


class _Echo(logging.Handler):
    """mkdocs' log lines on stderr, as its own command prints them."""

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if not message.startswith("A 'dirty' build is being performed"):  # chosen on purpose; said once
            click.echo(f"{record.levelname:<8}-  {message}", err=True)


@click.command()
@click.option(
    "-a",
    "--dev-addr",
    default="127.0.0.1:8000",
    show_default=True,
    metavar="IP:PORT",
    help="Address to serve on.",
)
@click.option(
    "--full-reload",
    is_flag=True,
    help="Read and render every page again on each change (much slower on a large KB); by "
    "default only the pages whose content changed are, and the others keep what they showed.",
)
@click.option(
    "-f",
    "--config-file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="mkdocs configuration. Default: mkdocs.yml beside kb/.",
)
@click.option("-o", "--open", "open_browser", is_flag=True, help="Open the site in a web browser.")
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="Also answer requests that reach the server by this host name or address (repeatable). "
    "By default only localhost, 127.0.0.1, [::1] and the --dev-addr host are answered, so that no "
    "other web site can read the preview through a name of its own (DNS rebinding).",
)
@click.pass_context
def serve(
    ctx: click.Context,
    dev_addr: str,
    full_reload: bool,
    config_file: Path | None,
    open_browser: bool,
    allow_hosts: tuple[str, ...],
) -> None:
    """Serve the KB site and reload the browser when kb/, docs/ or the project's own templates/
    change.

    Only the pages whose content changed are rebuilt (mkdocs' dirty reload), yet every page
    shows what a full build would: editing one bug of a thousand is served in about half a
    second. Stop with Ctrl+C.

    \b
    Example:
      kbgen serve --dev-addr 127.0.0.1:8000
      kbgen serve --dev-addr 0.0.0.0:8000 --allow-host kb.lab.example   # for the team
    """
    from mkdocs.commands.serve import serve as mkdocs_serve
    from mkdocs.exceptions import MkDocsException

    from kbgen.errors import KbgenError
    from kbgen.site import devserver

    devserver.allow_hosts(allow_hosts)  # the kbgen plugin's on_serve puts the guard in place

    config = config_file or _config_of(ctx)
    if taken := devserver.address_taken(dev_addr):
        port = dev_addr.rpartition(":")[2]
        bumped = str(int(port) + 1) if port.isdigit() else "8001"
        raise KbgenError(
            taken, hint=f"stop it, or serve elsewhere: kbgen serve --dev-addr 127.0.0.1:{bumped}"
        )
    logger = logging.getLogger("mkdocs")
    logger.setLevel(logging.INFO)
    logger.addHandler(_Echo())
    # Stopped by a process manager: shut down as on Ctrl+C, so temporary folders are removed.
    signal.signal(signal.SIGTERM, _interrupt)
    if not full_reload:
        click.echo("kbgen: rebuilding only the pages that change (--full-reload rebuilds all)", err=True)
    try:
        # livereload=True explicitly: mkdocs 1.6.1's own flag is off by default with click > 8.2.1.
        mkdocs_serve(
            config_file=str(config),
            livereload=True,
            build_type=None if full_reload else "dirty",
            dev_addr=dev_addr,
            open_in_browser=open_browser,
        )
    except (MkDocsException, OSError) as exc:
        raise KbgenError(f"serving {config} failed: {exc}") from None


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _config_of(ctx: click.Context) -> Path:
    from kbgen.errors import KbgenError

    config = project_of(ctx).root / "mkdocs.yml"
    if not config.is_file():
        raise KbgenError(
            f"no mkdocs.yml in {config.parent}",
            hint="pass --config-file, or add one with the kbgen plugin (see kbgen's own mkdocs.yml)",
        )
    return config


@click.command("build-pages")
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
@click.option("--pages-only", is_flag=True, help="Leave out the hand-written pages and assets of docs/.")
@click.pass_context
def build_pages(ctx: click.Context, out: Path, pages_only: bool) -> None:
    """Write the site's pages into OUT as plain Markdown, for an engine that runs no mkdocs plugins.

    The pages are those the kbgen plugin adds to a mkdocs build, plus the files of docs/. Only
    files whose content changed are written, and pages an earlier run wrote that no longer exist
    are removed; nothing else in OUT is touched.

    \b
    Example:
      kbgen build-pages build/pages    # then point docs_dir at build/pages
    """
    from kbgen import clock, templating
    from kbgen.errors import KbgenError
    from kbgen.site import output, pages, render

    project = project_of(ctx)
    options = pages.site_options(project.root / "mkdocs.yml")
    docs = project.root / options.docs_dir
    if out.resolve() == docs.resolve():
        raise KbgenError(
            f"{out}: this is the site's docs_dir; the kbgen plugin already adds these pages there",
            hint="write them to another folder, e.g. build/pages",
        )
    template_dirs = templating.template_dirs(project.root)
    output.refuse_unsafe_out(out, project.kb, template_dirs, docs)
    site, warnings = pages.load_site(project, today=clock.now().date(), stale_days=options.stale_days)
    for problem in warnings:
        click.echo(f"warning: {problem.format()}", err=True)
    env = render.make_environment(template_dirs)
    files = {page.uri: page.text.encode("utf-8") for page in pages.generate(site, env)}
    files.update({uri: path.read_bytes() for uri, path in pages.report_files(project).items()})
    if not pages_only:
        files = {**pages.asset_files(), **output.folder_files(docs), **files}
    report = output.write_pages(files, out)
    click.echo(
        f"{out}: {len(report.written)} written, {report.unchanged} unchanged, {len(report.removed)} removed"
    )
