"""One worker process: start it, read its protocol lines, and kill it with every process it started.

A worker sees none of kbgen's files: its output goes to a file with no name that kbgen holds open,
and its cwd is a scratch folder of its own, so a probe that deletes folders cannot break the run.

Standard library only, so a worker can be started before kbgen loads pydantic (the torch import in
the worker then overlaps with kbgen's own start-up).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbgen.probes.worker import MARK, kill_descendants, read_tail

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import FrameType

WORKER = Path(__file__).resolve().parent / "worker.py"
SIGNAL_WORDS = {
    "SIGILL": "illegal instruction",
    "SIGSEGV": "segmentation fault",
    "SIGABRT": "aborted",
    "SIGBUS": "bus error",
    "SIGFPE": "floating-point exception",
    "SIGKILL": "killed from outside kbgen: by the kernel's out-of-memory killer or a kill -9",
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


class Interrupted(KeyboardInterrupt):
    """kbgen was told to stop (SIGTERM, SIGHUP or SIGINT) while probes ran."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
        self.name = signal.Signals(signum).name


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """Turn SIGTERM, SIGHUP and SIGINT into :class:`Interrupted`, so ``finally`` blocks stop the workers.

    A cancelled CI job sends SIGTERM and a closed terminal SIGHUP; by default either would end
    kbgen on the spot and leave its workers running. A signal that is ignored (``nohup``) stays so.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    chosen = [getattr(signal, name) for name in ("SIGTERM", "SIGHUP", "SIGINT") if hasattr(signal, name)]
    chosen = [s for s in chosen if signal.getsignal(s) is not signal.SIG_IGN]

    def stop(signum: int, frame: FrameType | None) -> None:
        for each in chosen:  # cleaning up must not be cut short by a second signal
            signal.signal(each, signal.SIG_IGN)
        raise Interrupted(signum)

    saved = {s: signal.signal(s, stop) for s in chosen}
    try:
        yield
    finally:
        for each, handler in saved.items():
            signal.signal(each, handler)


class Worker:
    """A running ``worker.py``; events arrive on a queue filled by a reader thread."""

    def __init__(
        self,
        python: str,
        *,
        torch: bool,
        lifeline: int,
        env: dict[str, str] | None = None,
        nice: bool = False,
        memory: int | None = None,
    ) -> None:
        self.scratch = tempfile.mkdtemp(prefix="kbgen-probe-")
        #: everything the worker and its probes print; unnamed, so no probe can delete it
        self.output = tempfile.TemporaryFile(prefix="kbgen-probe-")  # noqa: SIM115 (closed by abandon)
        args = [python, "-u", str(WORKER), "--scratch", self.scratch, "--lifeline", str(lifeline)]
        args += (["--torch"] if torch else []) + (["--nice"] if nice else [])
        args += ["--memory", str(memory)] if memory else []
        self.events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.noise: list[str] = []
        self.started = time.monotonic()
        try:
            self.proc = subprocess.Popen(
                args,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.output,
                env=env,
                cwd=self.scratch,
                pass_fds=(lifeline,),
                start_new_session=True,  # its own process group: a timeout kills every child it started
            )
        except OSError:
            self._remove_files()
            raise
        threading.Thread(target=self._read, daemon=True).start()

    def tail(self, start: int = 0, limit: int = 4000) -> str:
        """The end of what was printed since ``start`` (an offset from a ``start`` event)."""
        try:
            return read_tail(self.output.fileno(), start, limit)
        except ValueError:  # closed: the run was interrupted and the worker removed
            return ""

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
        self._kill_tree()
        threading.Thread(target=self.proc.wait, daemon=True).start()
        self._close_stdin()
        self._remove_files()

    def kill(self) -> int | None:
        """Kill the worker and everything it started; return its exit code."""
        self._kill_tree()
        try:
            return self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return None
        finally:
            self._close_stdin()

    def _kill_tree(self) -> None:
        pid = self.proc.pid
        if self.proc.returncode is None:  # not reaped yet, so the pid is still this worker's
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGSTOP)  # a stopped worker starts nothing new while we look
            # the worker is a child subreaper: processes that left its group (setsid) are below it
            kill_descendants(pid)
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)

    def _remove_files(self) -> None:
        self.output.close()
        shutil.rmtree(self.scratch, ignore_errors=True)

    def _close_stdin(self) -> None:
        stdin = self.proc.stdin
        if stdin is not None and not stdin.closed:
            with contextlib.suppress(OSError, ValueError):
                stdin.close()
