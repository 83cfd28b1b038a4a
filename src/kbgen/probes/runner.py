"""Run probes in child processes and turn whatever happens to them into results.

Two lanes run side by side: the *torch* lane is one warm worker that imports torch once and runs
the probes that use it one after another; the *plain* lane runs the standard-library probes. A
probe that crashes, hangs or exits takes only its own worker down: the lane records the probe it
died in and starts a fresh worker for the rest. An interpreter that cannot start is found once,
at the first worker's hello, and reported once.

This module imports no pydantic at load time, so :class:`ProbeSession` can start the torch worker
before kbgen has finished starting itself.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbgen.errors import ProbeError
from kbgen.probes.process import Worker, describe_exit
from kbgen.probes.record import ProbeRun, RawResult

if TYPE_CHECKING:
    from collections.abc import Callable

    from kbgen.probes.discovery import ProbeSpec

PYTHON_ENV = "KBGEN_PYTHON"
STARTUP_LIMIT = 30.0  # seconds for an interpreter to say hello
IMPORT_LIMIT = 120.0  # seconds for `import torch` (cold caches on WSL's /mnt/c can be slow)
GAP_LIMIT = 30.0  # seconds between one probe's result and the next one's start


def default_memory_limit() -> int:
    """Half of this machine's memory: a runaway probe fails before the machine starts to swap."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (ValueError, OSError, AttributeError):
        return 0


class InterpreterError(Exception):
    """The target interpreter could not start the worker at all."""


def resolve_python(python: str | None) -> str:
    """The interpreter to probe: ``python``, else $KBGEN_PYTHON, else this one; checked to exist."""
    chosen = python or os.environ.get(PYTHON_ENV) or sys.executable
    path = Path(chosen).expanduser()
    if os.sep not in chosen and not path.exists():
        found = shutil.which(chosen)
        if found:
            return found
    if not path.exists():
        raise ProbeError(f"{chosen}: no such interpreter", hint="pass --python PATH (e.g. .venv/bin/python)")
    if path.is_dir():
        hint = f"point at the interpreter inside it, e.g. {path / 'bin' / 'python'}"
        raise ProbeError(f"{chosen}: is a folder, not a Python interpreter", hint=hint)
    if not os.access(path, os.X_OK):
        raise ProbeError(f"{chosen}: not executable", hint="check the path and its permissions")
    return str(path.absolute())


def order_torch_lane(specs: list[ProbeSpec]) -> list[ProbeSpec]:
    """Probes that touch the GPU last: if one kills the worker, fewer probes pay a fresh torch import."""
    return sorted(specs, key=lambda s: "cuda" in s.meta.needs)


class Lane:
    """Runs a list of probes in workers of one kind, restarting a worker whenever one dies."""

    def __init__(self, session: ProbeSession, *, torch: bool) -> None:
        self.session = session
        self.torch = torch
        self.blocked: str | None = None  # why importing torch is off for this lane's next workers
        self.torch_import: dict[str, Any] | None = None
        self.outcomes: dict[str, RawResult] = {}
        self.worker: Worker | None = None
        self.nice = False  # run at a lower priority (beside a worker importing torch)

    def start(self) -> None:
        if self.worker is None:
            env = dict(os.environ)
            if self.blocked:
                env["KBGEN_TORCH_BLOCKED"] = self.blocked
            self.worker = self.session.spawn(torch=self.torch, env=env, nice=self.nice)

    def run(self, specs: list[ProbeSpec]) -> None:
        pending = list(specs)
        while pending and not self.session.failed.is_set():
            self.start()
            worker = self.worker
            if worker is None:  # the session is closing
                return
            self.worker = None
            try:
                self._hello(worker)
                if self.torch and not self.blocked and not self._import(worker, pending):
                    continue
                self._drive(worker, pending)
            finally:
                self.session.retire(worker)

    def _hello(self, worker: Worker) -> None:
        limit = self.session.startup_limit
        event = worker.next_event(limit - (time.monotonic() - worker.started))
        if isinstance(event, dict) and event.get("event") == "hello":
            self.session.hello = event
            self.session.settled.set()
            return
        if event is False:
            worker.kill()
            what = f"did not start within {limit:g} s"
        else:
            what = describe_exit(worker.kill())[0] + " before running anything"
        said = (worker.tail(0, 1500) + "\n".join(worker.noise[-10:])).strip()
        raise InterpreterError(f"{self.session.python} {what}" + (f"; it printed:\n{said}" if said else ""))

    def _import(self, worker: Worker, pending: list[ProbeSpec]) -> bool:
        """Wait for the worker's torch import; False when it killed or hung the worker."""
        deadline = time.monotonic() + IMPORT_LIMIT
        start = 0
        while True:
            event = worker.next_event(deadline - time.monotonic())
            if isinstance(event, dict) and event.get("event") == "imported":
                ok = event.get("ok")
                self.torch_import = {
                    "status": "ok" if ok else "missing",
                    "version": event.get("version"),
                    "seconds": event.get("seconds"),
                    "message": event.get("error") or "",
                    "stderr_tail": None if ok else event.get("output"),
                }
                return True
            if isinstance(event, dict):  # the "import" announcement
                start = int(event.get("offset") or 0)
                continue
            self._import_failed(worker, pending, start, timed_out=event is False)
            return False

    def _import_failed(
        self, worker: Worker, pending: list[ProbeSpec], start: int, *, timed_out: bool
    ) -> None:
        """Importing torch killed or hung the worker: block it for the next ones, fail its probes."""
        if timed_out:
            worker.dump_stacks()
        phrase, sig, _ = describe_exit(worker.kill())
        phrase = f"did not finish within {IMPORT_LIMIT:g} s" if timed_out else phrase
        tail = worker.tail(start)
        self.blocked = f"importing torch {phrase} in {self.session.python}"
        status = "timeout" if timed_out else "crash"
        self.torch_import = {"status": status, "signal": sig, "message": self.blocked, "stderr_tail": tail}
        for spec in [s for s in pending if "torch" in s.meta.needs or "cuda" in s.meta.needs]:
            self._record(
                spec.id, RawResult(status, self.blocked + "; probe not run", signal=sig, output=tail)
            )
            pending.remove(spec)

    def _drive(self, worker: Worker, pending: list[ProbeSpec]) -> None:
        by_id = {s.id: s for s in pending}
        worker.send(self._jobs(pending))
        current: tuple[ProbeSpec, float, int] | None = None
        while pending:
            limit = (
                self.session.timeout_of(current[0]) - (time.monotonic() - current[1])
                if current
                else GAP_LIMIT
            )
            event = worker.next_event(limit)
            if isinstance(event, dict):
                kind = event.get("event")
                if kind == "start" and event.get("id") in by_id:
                    current = (by_id[event["id"]], time.monotonic(), int(event.get("offset") or 0))
                elif kind == "result" and event.get("id") in by_id:
                    self._record(event["id"], self._outcome(event))
                    pending.remove(by_id[event["id"]])
                    current = None
                elif kind == "bye":  # finished without a result for some probe: never retry those
                    self._abandon(pending, "not run: the worker finished without it")
                continue
            if current is None:  # died or stalled between probes: nothing to blame, stop this worker
                phrase = describe_exit(worker.kill())[0]
                if event is False:  # kbgen killed it: say so, not what the kill looked like
                    phrase = f"stalled for {GAP_LIMIT:g} s and was stopped"
                self._abandon(pending, f"not run: the worker {phrase} between probes")
                return
            spec, started, offset = current
            seconds = time.monotonic() - started
            self._record(spec.id, self._death(worker, spec, seconds, offset, event is False))
            pending.remove(spec)
            return  # the caller starts a fresh worker for what is left

    def _jobs(self, pending: list[ProbeSpec]) -> list[dict[str, Any]]:
        return [{"id": s.id, "path": str(s.path), "needs": list(s.meta.needs)} for s in pending]

    def _abandon(self, pending: list[ProbeSpec], message: str) -> None:
        for spec in pending:
            self._record(spec.id, RawResult("error", message))
        pending.clear()

    def _record(self, probe_id: str, result: RawResult) -> None:
        self.outcomes[probe_id] = result
        if self.session.on_result is not None:
            self.session.on_result(probe_id, result)

    def _outcome(self, event: dict[str, Any]) -> RawResult:
        result = event.get("result") or {}
        status = result.get("status")
        message = str(result.get("message") or "")
        if status not in ("pass", "warn", "fail", "skip", "error"):
            message = f"the probe returned status {status!r} (expected pass, warn, fail, skip or error)" + (
                f": {message}" if message else ""
            )
            status = "error"
        output = event.get("output") or None
        return RawResult(
            status,
            message,
            dict(result.get("facts") or {}),
            float(event.get("seconds") or 0.0),
            output=output,
        )

    def _death(
        self, worker: Worker, spec: ProbeSpec, seconds: float, offset: int, timed_out: bool
    ) -> RawResult:
        if timed_out:
            worker.dump_stacks()
            worker.kill()
            limit = self.session.timeout_of(spec)
            return RawResult(
                "timeout",
                f"no result within {limit:g} s; killed it and every process it started",
                seconds=seconds,
                output=worker.tail(offset) or None,
            )
        phrase, sig, code = describe_exit(worker.kill())
        return RawResult(
            "crash",
            f"the probe's process {phrase} after {seconds:.2f} s",
            seconds=seconds,
            signal=sig,
            exit_code=code,
            output=worker.tail(offset) or None,
        )


class ProbeSession:
    """Probes against one interpreter. Create it early: the torch worker starts right away."""

    def __init__(
        self,
        python: str | None = None,
        *,
        torch: bool = True,
        timeout: float | None = None,
        startup_limit: float | None = None,
        memory: int | None = None,
    ) -> None:
        self.python = resolve_python(python)
        self.timeout = timeout
        self.memory = default_memory_limit() if memory is None else memory
        # a short --timeout also shortens the wait for a hung interpreter, but never below a second
        limit = min(max(timeout, 1.0), STARTUP_LIMIT) if timeout else STARTUP_LIMIT
        self.startup_limit = startup_limit or limit
        # kbgen holds the write end and never writes: workers read end of file once kbgen is gone
        self._lifeline = os.pipe()
        self.failed = threading.Event()
        #: set once the first worker said hello (or could not): the interpreter is checked only once
        self.settled = threading.Event()
        self.hello: dict[str, Any] | None = None
        self._lock = threading.Lock()
        self._live: set[Worker] = set()
        self._closed = False
        #: called from the lane threads with each probe's result as soon as it is known
        self.on_result: Callable[[str, RawResult], None] | None = None
        self.lanes = {"torch": Lane(self, torch=True), "plain": Lane(self, torch=False)}
        if torch:
            with contextlib.suppress(InterpreterError):  # reported when the probes run
                self.lanes["torch"].start()

    def spawn(self, *, torch: bool, env: dict[str, str], nice: bool = False) -> Worker | None:
        """A new worker, tracked so :meth:`close` can kill it; None once the session is closed."""
        with self._lock:
            if self._closed:
                return None
            try:
                worker = Worker(
                    self.python,
                    torch=torch,
                    lifeline=self._lifeline[0],
                    env=env,
                    nice=nice,
                    memory=self.memory or None,
                )
            except OSError as exc:
                raise InterpreterError(f"cannot start {self.python}: {exc.strerror or exc}") from None
            self._live.add(worker)
            return worker

    def retire(self, worker: Worker) -> None:
        worker.abandon()  # done with it: no need to wait while the kernel frees its memory
        with self._lock:
            self._live.discard(worker)

    def timeout_of(self, spec: ProbeSpec) -> float:
        return self.timeout if self.timeout else spec.meta.timeout

    def run(
        self, specs: list[ProbeSpec], on_result: Callable[[str, RawResult], None] | None = None
    ) -> ProbeRun:
        """Run ``specs``; ``on_result(probe_id, result)`` hears of each result as it arrives."""
        started = time.monotonic()
        self.on_result = on_result
        plan = {
            "torch": order_torch_lane([s for s in specs if s.uses_torch]),
            "plain": [s for s in specs if not s.uses_torch],
        }
        errors: list[str] = []
        # With two lanes the torch lane goes first and the plain one waits for its hello (a few
        # milliseconds): an interpreter that cannot start is then found by one worker, not two.
        scout = bool(plan["torch"] and plan["plain"])
        self.lanes["plain"].nice = scout
        threads = [
            threading.Thread(
                target=self._run_lane,
                args=(name, plan[name], errors, scout and name == "plain"),
                daemon=True,  # an interrupted run must not wait for them at exit
            )
            for name in plan
            if plan[name]
        ]
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                while thread.is_alive():
                    thread.join(0.1)
        finally:
            self.close()
        return ProbeRun(
            python=self.python,
            python_version=(self.hello or {}).get("python"),
            interpreter_error=errors[0] if errors else None,
            torch_import=self.lanes["torch"].torch_import,
            wall=time.monotonic() - started,
            results={**self.lanes["plain"].outcomes, **self.lanes["torch"].outcomes},
        )

    def _run_lane(self, name: str, specs: list[ProbeSpec], errors: list[str], wait: bool) -> None:
        try:
            if wait:
                self.settled.wait()
            self.lanes[name].run(specs)
        except InterpreterError as exc:
            with self._lock:
                if not errors:
                    errors.append(str(exc))
            self.failed.set()
            self.settled.set()

    def close(self) -> None:
        """Kill every worker still running (and all they started) and remove their scratch folders."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            live, self._live = list(self._live), set()
        for worker in live:
            worker.abandon()
        for lane in self.lanes.values():
            lane.worker = None
        for fd in self._lifeline:
            os.close(fd)
