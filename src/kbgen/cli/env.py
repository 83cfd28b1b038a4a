"""``kbgen env FILE|-``: read the environment a pasted report or a log shows, and judge it."""

from __future__ import annotations

import json

import click

_MARK = {"pass": "ok  ", "warn": "WARN", "fail": "FAIL", "unknown": "  ? "}


@click.command("env")
@click.argument("source", metavar="FILE|-")
@click.option("--json", "as_json", is_flag=True, help="Print facts and verdicts as JSON.")
def env(source: str, as_json: bool) -> None:
    """Read an environment report from text and judge it as the probes would.

    FILE is any text: the output of `python -m torch.utils.collect_env`, `nvidia-smi` (or
    `-q`), `pip list`/`pip freeze`/`conda list`, `nvcc --version`, `lscpu`, a `kbgen probe
    --json` report, or a whole log with some of these inside; - reads standard input.
    Facts carry the probes' names (gpu.name, torch-build.cuda, ...); facts that follow from
    them (the compute capability of a named GPU, an official build's arch list) are marked
    derived. Each check says pass, warn, fail or unknown (a fact it needs is missing).

    \b
    Examples:
      python -m torch.utils.collect_env | kbgen env -
      kbgen env --json issue-1234.md
    """
    from kbgen.envreport import environment_of
    from kbgen.envreport.rank import source_text

    text, name = source_text(source)
    found = environment_of(text)
    if as_json:
        click.echo(json.dumps({"source": name, **found.as_dict()}, indent=2, ensure_ascii=False))
        return
    if not found.found:
        click.echo(f"No environment report found in {name}.")
        click.echo("kbgen reads collect_env, nvidia-smi, pip/conda lists, nvcc --version and lscpu output.")
        return
    click.echo(f"{name}: {', '.join(found.formats)}")
    width = max(len(k) for k in found.facts)
    for key, value in sorted(found.facts.items()):
        how = found.derived.get(key)
        click.echo(f"  {key.ljust(width)}  {value}" + (f"  (derived: {how})" if how else ""))
    click.echo("Verdicts:")
    for verdict in found.verdicts:
        cause = f" [{verdict.cause}]" if verdict.cause and verdict.status in ("fail", "warn") else ""
        click.echo(f"  {_MARK[verdict.status]} {verdict.check}: {verdict.message}{cause}")
