"""``kbgen fleet``: probe every node through Slurm, Ray or ssh; merge reports; show the drift."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from kbgen.cli.common import one_line, project_of

if TYPE_CHECKING:
    from kbgen.fleet.engines import Task
    from kbgen.fleet.model import NodeAttempt, NodeRecord, NodeView
    from kbgen.store import Project


@click.group()
def fleet() -> None:
    """Probe many GPU nodes and show where they differ.

    \b
    Examples:
      kbgen fleet probe --slurm "-p gpu -N 16"   # one srun task per node
      kbgen fleet probe --ray auto                # one task per alive Ray node
      kbgen fleet probe --hosts nodes.txt         # ssh to every host in parallel
      kbgen fleet ingest reports/*.json           # reports made by any other engine
      kbgen fleet show --fail-on drift            # nodes x key facts, outliers marked
      kbgen probe --fill BUG-20251109-002 --from-fleet gpu07
    """


@fleet.command("probe")
@click.option("--slurm", "slurm_args", metavar="ARGS", help='srun arguments, e.g. "-p gpu -N 16".')
@click.option("--ray", "ray_address", metavar="ADDRESS", help="Ray cluster address ('auto' for the current).")
@click.option(
    "--hosts",
    "hosts_file",
    type=click.Path(dir_okay=False),
    help="ssh: '[user@]host[:port] [name]' per line.",
)
@click.option("--command", "command", metavar="CMD", help="What each node runs. Default: kbgen probe --json.")
@click.option(
    "--ship",
    is_flag=True,
    help="For nodes without kbgen: the probes and its runner travel with the task.",
)
@click.option(
    "--python",
    "python",
    metavar="PATH",
    help="With --ship: the node's interpreter (with the failing torch). Default: python3.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=1, max=86400),
    default=600,
    show_default=True,
    help="Seconds to wait for the nodes.",
)
@click.option(
    "--parallel",
    type=click.IntRange(min=1, max=1024),
    default=32,
    show_default=True,
    help="ssh: connections open at once.",
)
@click.option("--identity", type=click.Path(dir_okay=False), help="ssh: private key file.")
@click.option("--known-hosts", type=click.Path(dir_okay=False), help="ssh: known_hosts file to trust.")
@click.option("--json", "as_json", is_flag=True, help="Print the attempts as JSON.")
@click.pass_context
def probe(
    ctx: click.Context,
    slurm_args: str | None,
    ray_address: str | None,
    hosts_file: str | None,
    command: str | None,
    ship: bool,
    python: str | None,
    timeout: float,
    parallel: int,
    identity: str | None,
    known_hosts: str | None,
    as_json: bool,
) -> None:
    """Run the probes on every node and store each node's report under kb/fleet/.

    Each node runs `kbgen probe --json`; with --ship, nodes need only Python:
    the probes and kbgen's runner travel with the task. A node that fails,
    hangs or cannot be reached is recorded as such; its last good report
    stays. Exit 1 when any node was not probed.
    """
    from kbgen import clock
    from kbgen.errors import KbgenError
    from kbgen.fleet import engines
    from kbgen.fleet.store import save_attempts

    chosen = [x for x in (slurm_args, ray_address, hosts_file) if x is not None]
    if len(chosen) != 1:
        raise KbgenError("name one engine: --slurm ARGS, --ray ADDRESS or --hosts FILE")
    if ship and command:
        raise KbgenError("--ship sends the probes themselves; it cannot be combined with --command")
    project = project_of(ctx)
    task = _task(project, command, ship, python, default_python=None if ray_address else "python3")
    if slurm_args is not None:
        attempts = engines.probe_slurm(slurm_args, task or engines.Task(), timeout, clock.now)
    elif ray_address is not None:
        attempts = engines.probe_ray(ray_address, task, timeout, clock.now)
    else:
        assert hosts_file is not None
        targets = engines.parse_hosts(_read_text(hosts_file), hosts_file)
        options = engines.SshOptions(task or engines.Task(), timeout, parallel, identity, known_hosts)
        attempts = engines.probe_ssh(targets, options, clock.now)
    save_attempts(project, attempts)
    _print_attempts(attempts, as_json)
    if any(a.status != "ok" for a in attempts):
        ctx.exit(1)


def _task(
    project: Project, command: str | None, ship: bool, python: str | None, default_python: str | None
) -> Task | None:
    """What each node runs; None for the engine's default (``kbgen probe --json`` on the node)."""
    from kbgen.fleet import engines

    if not ship:
        return engines.Task(command=command) if command else None
    from kbgen.probes.discovery import scan, select

    specs, problems = scan(project)
    for problem in problems:
        click.echo(f"warning: {problem.format()} (probe not shipped)", err=True)
    return engines.shipped(select(specs, [], problems), python or default_python)


@fleet.command("ingest")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--engine", default="ingest", show_default=True, help="Name of the engine that made them.")
@click.pass_context
def ingest(ctx: click.Context, files: tuple[str, ...], engine: str) -> None:
    """Merge `kbgen probe --json` reports made by any engine (one per node).

    A node's report is the one collected last (of two collected at the same
    time, the one named last); the others stay in its history. When a node
    has several, ingest says which it kept.

    \b
    Example:
      for n in $(cat nodes); do ssh $n kbgen probe --json > reports/$n.json; done
      kbgen fleet ingest reports/*.json
    """
    from kbgen.fleet.model import NodeAttempt
    from kbgen.fleet.store import parse_report, save_attempts

    attempts = []
    for name in files:
        report = parse_report(_read_text(name), name)
        attempts.append(
            NodeAttempt(node=report.host, engine=engine, at=report.collected_at, status="ok", report=report)
        )
    records = save_attempts(project_of(ctx), attempts)
    for line in _kept(attempts, files, records):
        click.echo(line)
    click.echo(f"merged {len(attempts)} report{'s' if len(attempts) != 1 else ''} into kb/fleet/")


def _kept(attempts: list[NodeAttempt], files: tuple[str, ...], records: list[NodeRecord]) -> list[str]:
    """A line for each node given several reports, or one older than its stored report."""
    by_node: dict[str, list[int]] = {}
    for index, attempt in enumerate(attempts):
        by_node.setdefault(attempt.node, []).append(index)
    lines = []
    for node, indexes in by_node.items():
        newest = records[indexes[-1]].collected_at
        when = newest.isoformat() if newest else "?"
        names = ", ".join(one_line(files[i]) for i in indexes)
        won = [i for i in indexes if (r := attempts[i].report) is not None and r.collected_at == newest]
        if not won:
            lines.append(f"{one_line(node)}: kept its stored report (collected {when}), newer than {names}")
        elif len(indexes) > 1:
            lines.append(
                f"{one_line(node)}: {len(indexes)} reports ({names}); kept {one_line(files[won[-1]])}"
                f" (collected {when}, the newest; of equal times, the one named last)"
            )
    return lines


@fleet.command("show")
@click.option("--json", "as_json", is_flag=True, help='Print {"nodes": [...]} with facts and drift.')
@click.option(
    "--fail-on",
    type=click.Choice(["drift", "never"]),
    default="never",
    show_default=True,
    help="Exit 1 when any node drifts (for cron and CI).",
)
@click.pass_context
def show(ctx: click.Context, as_json: bool, fail_on: str) -> None:
    """Nodes x key facts; a value that differs from the fleet, or an unhealthy GPU, is marked."""
    import json

    from kbgen.fleet.facts import node_views
    from kbgen.fleet.store import load_nodes

    records, problems = load_nodes(project_of(ctx))
    for problem in problems:
        click.echo(f"warning: {problem}", err=True)
    views = node_views(records)
    if as_json:
        data = {"nodes": [v.model_dump(mode="json") for v in views]}
        click.echo(json.dumps(data, indent=2, allow_nan=False))
    else:
        click.echo(_table(views))
    if fail_on == "drift" and any(v.drift for v in views):
        ctx.exit(1)


_COLUMNS = ("driver", "cuda_runtime", "torch", "cudnn", "gpu", "gpu_count", "kernel")


def _table(views: list[NodeView]) -> str:
    if not views:
        return "no nodes yet: run `kbgen fleet probe` or `kbgen fleet ingest`"
    header = ("node", "status", *_COLUMNS, "drift")
    rows: list[tuple[str, ...]] = [header]
    for view in views:
        marked = {d.fact for d in view.drift}
        cells = [f"{view.facts.get(c, '-')}{' *' if c in marked else ''}" for c in _COLUMNS]
        notes = "; ".join(f"{d.fact}: {d.reason}" for d in view.drift) or ""
        host = f"{view.host} [{view.machine}]" if view.machine else view.host
        rows.append((host, view.status, *cells, notes))
    widths = [max(len(one_line(str(r[i]))) for r in rows) for i in range(len(header) - 1)]
    lines = [
        "  ".join(one_line(str(c)).ljust(w) for c, w in zip(r[:-1], widths, strict=True))
        + "  "
        + one_line(str(r[-1]))
        for r in rows
    ]
    drifting = sum(1 for v in views if v.drift)
    lines.append(f"{len(views)} nodes, {drifting} with drift (* marks the value that differs)")
    lines.extend(f"{one_line(f'{v.host} [{v.machine}]')}: {v.shared}" for v in views if v.shared)
    return "\n".join(line.rstrip() for line in lines)


def _print_attempts(attempts: list[NodeAttempt], as_json: bool) -> None:
    import json

    if as_json:
        click.echo(json.dumps([a.model_dump(mode="json", exclude={"report"}) for a in attempts], indent=2))
        return
    for a in sorted(attempts, key=lambda a: a.node):
        click.echo(f"{a.node}: {a.status}{': ' + a.error if a.error else ''}")
    ok = sum(a.status == "ok" for a in attempts)
    click.echo(f"{ok} of {len(attempts)} nodes probed; reports in kb/fleet/")


def _read_text(name: str) -> str:
    from kbgen.fleet.store import read_limited

    return read_limited(Path(name), 8 * 1024 * 1024, "a probe report").decode("utf-8", errors="replace")
