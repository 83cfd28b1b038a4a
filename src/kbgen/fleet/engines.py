"""Run ``kbgen probe --json`` on every node through the engine that already runs the team's jobs.

- Slurm: one ``srun`` step, one task per node, output labelled by task.
- Ray: one task per alive node, pinned to it with node affinity.
- ssh: asyncssh, every host in parallel, with a per-host time limit.

Whatever happens on a node (it fails, hangs or cannot be reached) becomes a :class:`NodeAttempt`;
only a failure of the engine itself (srun cannot allocate, Ray cannot connect) is an error.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kbgen.errors import KbgenError
from kbgen.fleet.model import AttemptStatus, NodeAttempt
from kbgen.fleet.store import parse_report

if TYPE_CHECKING:
    from kbgen.probes.discovery import ProbeSpec
    from kbgen.probes.report import ProbeReport

DEFAULT_COMMAND = "kbgen probe --json"
_TAIL = 400
Clock = Callable[[], dt.datetime]
#: turns what a node printed into its report: (output, origin for messages) -> report
Parse = Callable[[str, str], "ProbeReport"]


@dataclass(frozen=True)
class Task:
    """What every node runs: a command, what it reads on stdin, and how its output is read."""

    command: str = DEFAULT_COMMAND
    stdin: str | None = None
    parse: Parse = parse_report


def shipped(specs: list[ProbeSpec], python: str | None) -> Task:
    """The probes themselves, for nodes without kbgen: ``python -`` reads the program on stdin.

    ``python`` None leaves the choice to the engine (Ray: the node's own worker Python)."""
    from kbgen.fleet import ship

    return Task(
        command=f"{shlex.quote(python)} -" if python else "",
        stdin=ship.program(specs),
        parse=lambda out, origin: ship.report_from_output(out, specs, origin),
    )


def attempt_from_output(
    node: str,
    engine: str,
    code: int | None,
    out: str,
    err: str,
    now: dt.datetime,
    parse: Parse = parse_report,
) -> NodeAttempt:
    """A node's attempt from what its command printed; ``code`` None means it ran out of time."""
    if code is None:
        return NodeAttempt(node=node, engine=engine, at=now, status="timeout", error="no answer in time")
    try:
        report = parse(out, f"{node} ({engine})")
    except KbgenError as exc:
        why = err.strip()[-_TAIL:] or str(exc)
        return NodeAttempt(node=node, engine=engine, at=now, status="failed", error=f"exit {code}: {why}")
    return NodeAttempt(node=node, engine=engine, at=now, status="ok", report=report)


# --------------------------------------------------------------------------- ssh


@dataclass(frozen=True)
class SshTarget:
    name: str
    host: str
    port: int | None = None
    user: str | None = None


def parse_hosts(text: str, origin: str) -> list[SshTarget]:
    """``[user@]host[:port] [name]`` per line; ``#`` starts a comment."""
    targets = []
    for number, raw in enumerate(text.splitlines(), 1):
        words = raw.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) > 2:
            raise KbgenError(f"{origin}:{number}: expected '[user@]host[:port] [name]', got {raw.strip()!r}")
        user, _, hostport = words[0].rpartition("@")
        host, _, port = hostport.partition(":")
        if not host or (port and not port.isdigit()):
            raise KbgenError(f"{origin}:{number}: not a host: {words[0]!r}")
        name = words[1] if len(words) > 1 else host
        targets.append(SshTarget(name=name, host=host, port=int(port) if port else None, user=user or None))
    if not targets:
        raise KbgenError(f"{origin}: no hosts listed")
    return targets


@dataclass(frozen=True)
class SshOptions:
    task: Task = Task()
    timeout: float = 300.0
    parallel: int = 32
    identity: str | None = None
    known_hosts: str | None = None


def probe_ssh(targets: list[SshTarget], options: SshOptions, now: Clock) -> list[NodeAttempt]:
    """Probe every host over ssh at once (at most ``parallel`` connections open)."""
    return asyncio.run(_ssh_all(targets, options, now))


async def _ssh_all(targets: list[SshTarget], options: SshOptions, now: Clock) -> list[NodeAttempt]:
    gate = asyncio.Semaphore(max(1, options.parallel))

    async def one(target: SshTarget) -> NodeAttempt:
        async with gate:
            return await _ssh_one(target, options, now)

    return list(await asyncio.gather(*(one(t) for t in targets)))


async def _ssh_one(target: SshTarget, options: SshOptions, now: Clock) -> NodeAttempt:
    import asyncssh

    def failed(status: AttemptStatus, error: str) -> NodeAttempt:
        return NodeAttempt(node=target.name, engine="ssh", at=now(), status=status, error=error)

    connect: dict[str, object] = {"port": target.port or 22}
    if target.user:
        connect["username"] = target.user
    if options.identity:
        connect["client_keys"] = [options.identity]
    if options.known_hosts:
        connect["known_hosts"] = options.known_hosts

    async def run() -> asyncssh.SSHCompletedProcess:
        async with asyncssh.connect(target.host, **connect) as conn:
            return await conn.run(options.task.command, input=options.task.stdin, check=False)

    try:
        done = await asyncio.wait_for(run(), options.timeout)
    except asyncio.TimeoutError:
        return failed("timeout", f"no answer within {options.timeout:g} s")
    except (OSError, asyncssh.Error) as exc:
        return failed("unreachable", f"{type(exc).__name__}: {exc}".strip())
    out, err = str(done.stdout or ""), str(done.stderr or "")
    code = done.exit_status if done.exit_status is not None else 128 + 9
    return attempt_from_output(target.name, "ssh", code, out, err, now(), options.task.parse)


# --------------------------------------------------------------------------- Slurm

_NODE_MARK = "@@kbgen-node "
_EXIT_MARK = "@@kbgen-exit "


def srun_argv(slurm_args: str, command: str, stdin: bool = False) -> list[str]:
    """One task per node; each prints its node name, the report, then its exit status.

    With ``stdin``, what srun reads is sent to every task (the shipped probes)."""
    script = f'echo "{_NODE_MARK}${{SLURMD_NODENAME:-$(hostname)}}"; ( {command} ); echo "{_EXIT_MARK}$?"'
    given = ["--input=all"] if stdin else []
    return ["srun", "--label", "--ntasks-per-node=1", *given, *shlex.split(slurm_args), "sh", "-c", script]


def split_labelled(output: str) -> dict[str, list[str]]:
    """``srun --label`` output ("3: text") grouped by task number, in order."""
    tasks: dict[str, list[str]] = {}
    for line in output.splitlines():
        label, sep, text = line.partition(": ")
        if sep and label.strip().isdigit():
            tasks.setdefault(label.strip(), []).append(text)
    return tasks


def attempts_from_srun(
    output: str, err: str, timed_out: bool, now: dt.datetime, parse: Parse = parse_report
) -> list[NodeAttempt]:
    attempts = []
    for task, lines in sorted(split_labelled(output).items(), key=lambda item: int(item[0])):
        node = next((x[len(_NODE_MARK) :].strip() for x in lines if x.startswith(_NODE_MARK)), f"task-{task}")
        codes = [x[len(_EXIT_MARK) :].strip() for x in lines if x.startswith(_EXIT_MARK)]
        body = "\n".join(x for x in lines if not x.startswith((_NODE_MARK, _EXIT_MARK)))
        code = int(codes[-1]) if codes and codes[-1].isdigit() else None
        if code is None and not timed_out:
            code = 1  # the task ended without reaching the end of its script
        attempts.append(attempt_from_output(node, "slurm", code, body, err, now, parse))
    return attempts


def probe_slurm(slurm_args: str, task: Task, timeout: float, now: Clock) -> list[NodeAttempt]:
    argv = srun_argv(slurm_args, task.command, stdin=task.stdin is not None)
    try:
        done = subprocess.run(
            argv, input=task.stdin, capture_output=True, text=True, timeout=timeout, check=False
        )
        out, err, timed_out = done.stdout, done.stderr, False
    except FileNotFoundError:
        raise KbgenError("srun not found", hint="run this on a Slurm login node") from None
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        timed_out = True
    attempts = attempts_from_srun(out, err, timed_out, now(), task.parse)
    if not attempts:
        raise KbgenError(f"srun ran no task: {err.strip()[-_TAIL:] or 'no output'}")
    return attempts


# --------------------------------------------------------------------------- Ray


def probe_ray(address: str, task: Task | None, timeout: float, now: Clock) -> list[NodeAttempt]:
    """One task per alive Ray node, pinned there; the node's own Python runs the probes."""
    try:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    except ImportError:
        raise KbgenError("Ray is not installed", hint="pip install 'kbgen[ray]'") from None
    try:
        ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False, ignore_reinit_error=True)
    except Exception as exc:  # Ray raises many kinds when no cluster answers
        raise KbgenError(f"cannot connect to the Ray cluster at {address}: {exc}") from None
    try:
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        remote = ray.remote(num_cpus=0, max_retries=0)(_run_on_node)
        parse = task.parse if task else parse_report
        refs = {
            remote.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)
            ).remote(task.command if task else None, task.stdin if task else None): n
            for n in nodes
        }
        ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=timeout)
        names = _ray_names(nodes)
        attempts = []
        for ref, node in refs.items():
            name = names[node["NodeID"]]
            if ref not in ready:
                attempts.append(attempt_from_output(name, "ray", None, "", "", now(), parse))
                continue
            try:
                code, out, err = ray.get(ref)
            except Exception as exc:  # the task itself died (node lost, worker crash)
                code, out, err = 1, "", f"{type(exc).__name__}: {exc}"
            attempts.append(attempt_from_output(name, "ray", code, out, err, now(), parse))
        return attempts
    finally:
        ray.shutdown()


def _ray_names(nodes: list[dict[str, str]]) -> dict[str, str]:
    """Host names, made unique with the node id where several nodes share a host."""
    hosts = [n.get("NodeManagerHostname") or n["NodeID"][:12] for n in nodes]
    return {
        n["NodeID"]: host if hosts.count(host) == 1 else f"{host}-{n['NodeID'][:8]}"
        for n, host in zip(nodes, hosts, strict=True)
    }


def _run_on_node(command: str | None, stdin: str | None) -> tuple[int, str, str]:
    """On the node: the command, or this node's own Python running kbgen (or the shipped probes)."""
    import sys

    if command:
        argv = shlex.split(command)
    else:
        argv = (
            [sys.executable, "-"] if stdin is not None else [sys.executable, "-m", "kbgen", "probe", "--json"]
        )
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, check=False)
    return done.returncode, done.stdout, done.stderr
