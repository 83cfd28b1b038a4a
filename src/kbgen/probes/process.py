"""One worker process: start it, read its protocol lines, and kill its whole process group.

Standard library only, so a worker can be started before kbgen loads pydantic (the torch import in
the worker then overlaps with kbgen's own start-up).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

WORKER = Path(__file__).resolve().parent / "worker.py"
MARK = "@@kbgen@@ "
SIGNAL_WORDS = {
    "SIGILL": "illegal instruction",
    "SIGSEGV": "segmentation fault",
    "SIGABRT": "aborted",
    "SIGBUS": "bus error",
    "SIGFPE": "floating-point exception",
    "SIGKILL": "killed; out of memory?",
    "SIGTERM": "terminated",
}


def describe_exit(returncode: int | None) -> tuple[str, str | None, int | None]:
    """A phrase for how a process ended, plus the signal name or exit status."""
    if returncode is None:
        return "is still running", None, None
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        words = SIGNAL_WORDS.get(name)
        return f"died of {name}" + (f" ({words})" if words else ""), name, None
    return f"exited with status {returncode}", None, returncode


def read_tail(path: str | None, limit: int = 4000) -> str:
    if not path:
        return ""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - limit))
            tail = handle.read()
            if size > limit and b"\n" in tail:  # a whole first line: no token without its prefix
                tail = tail[tail.index(b"\n") + 1 :]
            return tail.decode("utf-8", "replace")
    except OSError:
        return ""


class Worker:
    """A running ``worker.py``; events arrive on a queue filled by a reader thread."""

    def __init__(
        self, python: str, logdir: str, *, torch: bool, env: dict[str, str] | None = None, nice: bool = False
    ) -> None:
        self.logdir = logdir
        self.import_log = str(Path(logdir) / f"import-torch-{time.monotonic_ns()}.log") if torch else None
        args = [python, "-u", str(WORKER)] + (["--torch", self.import_log] if self.import_log else [])
        args += ["--nice"] if nice else []
        self.events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.noise: list[str] = []
        self.started = time.monotonic()
        #: what the interpreter printed before the worker took over its output (start-up errors)
        self.stderr_path = str(Path(logdir) / f"worker-{time.monotonic_ns()}.err")
        with open(self.stderr_path, "wb") as stderr:
            self.proc = subprocess.Popen(
                args,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=env,
                start_new_session=True,  # its own process group: a timeout kills every child it started
            )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        """Runs in its own thread, which alone owns the worker's stdout (and closes it at the end)."""
        stdout = self.proc.stdout
        assert stdout is not None
        try:
            for raw in stdout:
                self._take(raw.decode("utf-8", "replace").rstrip("\r\n"))
        except (OSError, ValueError):
            pass
        finally:
            stdout.close()
            self.events.put(None)

    def _take(self, line: str) -> None:
        if line.startswith(MARK):
            try:
                event = json.loads(line[len(MARK) :])
            except ValueError:
                event = None
            if isinstance(event, dict):
                self.events.put(event)
                return
        self.noise.append(line)

    def next_event(self, timeout: float) -> dict[str, Any] | bool | None:
        """The next event; None at end of output; False when ``timeout`` passed first."""
        try:
            return self.events.get(timeout=max(timeout, 0.0))
        except queue.Empty:
            return False

    def send(self, jobs: list[dict[str, Any]]) -> None:
        """Hand over every job at once and close stdin (the worker reads them all before starting)."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(b"".join(json.dumps(j).encode() + b"\n" for j in jobs))
            self.proc.stdin.close()
        except (OSError, ValueError):  # it died (or was killed) already; the reader sees the end
            pass

    def dump_stacks(self) -> None:
        """Ask the worker to write every thread's stack to the current probe's log (faulthandler)."""
        if hasattr(signal, "SIGUSR1") and self.proc.poll() is None:
            with contextlib.suppress(OSError):
                os.kill(self.proc.pid, signal.SIGUSR1)
            time.sleep(0.2)

    def abandon(self) -> None:
        """Kill the worker and everything it started; reap it in the background, not on our time."""
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        threading.Thread(target=self.proc.wait, daemon=True).start()
        self._close_stdin()

    def kill(self) -> int | None:
        """Kill the worker and everything it started; return its exit code."""
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        try:
            return self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return None
        finally:
            self._close_stdin()

    def _close_stdin(self) -> None:
        stdin = self.proc.stdin
        if stdin is not None and not stdin.closed:
            with contextlib.suppress(OSError, ValueError):
                stdin.close()
