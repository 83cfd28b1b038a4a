"""Run a command for ``kbgen run``: its output passes through unchanged and a bounded part is kept.

On a terminal the command gets a pseudo-terminal, so colours and progress bars look as they do
without kbgen; otherwise its stdout and stderr stay two pipes, each relayed to ours. What is kept
for triage is the tail of the output plus the lines that look like errors, however long the log.
Relaying ends when the command exits, not when the last holder of its output closes it (a server
it left running may keep it open). A stop signal kbgen gets is passed on (:mod:`kbgen.run.stop`).
"""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from kbgen.run import errorfile
from kbgen.run.stop import Stopper, group_options, terminal_foreground

#: lines kept from the end of the output
TAIL_LINES = 400
#: earlier lines kept because they look like an error (the first ones win)
MATCHED_LINES = 200
#: one line longer than this is cut (a progress bar redrawn with \r for an hour is one "line")
MAX_LINE = 4096
_INTERESTING = re.compile(
    rb"error|exception|traceback|assert|illegal|fault|killed|abort|fatal|cuda|nccl|cudnn|cublas", re.I
)
#: what a shell prints when a signal kills a command
SHELL_WORDS = {
    "SIGILL": "Illegal instruction",
    "SIGSEGV": "Segmentation fault",
    "SIGBUS": "Bus error",
    "SIGABRT": "Aborted",
    "SIGFPE": "Floating point exception",
    "SIGKILL": "Killed",
}
#: once the command has exited, output still arriving is passed on while it comes (a pause this
#: long ends it) ...
DRAIN_QUIET_S = 0.25
#: ... and for this long at most: a daemon the command started may hold its stdout for ever
DRAIN_MAX_S = 2.0
_POLL_S = 0.1  # where the system gives no exit notice, how often to look
_PYTHON = re.compile(r"python(\d+(\.\d+)?)?(\.exe)?")


@dataclass
class Capture:
    """The tail of the output and the error-looking lines before it, within fixed limits."""

    tail: deque[bytes] = field(default_factory=lambda: deque(maxlen=TAIL_LINES))
    matched: list[bytes] = field(default_factory=list)
    partial: bytes = b""
    lines: int = 0

    def feed(self, chunk: bytes) -> None:
        data = self.partial + chunk
        *complete, self.partial = data.split(b"\n")
        if len(self.partial) > MAX_LINE:
            self.partial = self.partial[-MAX_LINE:]
        for line in complete:
            self._line(line[-MAX_LINE:])

    def _line(self, line: bytes) -> None:
        self.lines += 1
        if len(self.tail) == self.tail.maxlen:
            dropped = self.tail[0]
            if len(self.matched) < MATCHED_LINES and _INTERESTING.search(dropped):
                self.matched.append(dropped)
        self.tail.append(line)

    def text(self) -> str:
        kept = [*self.matched, *self.tail, *([self.partial] if self.partial else [])]
        # a progress bar redraws its line with \r: keep what the terminal showed last
        raw = b"\n".join(line.rstrip(b"\r").rsplit(b"\r", 1)[-1] for line in kept)
        return raw.decode("utf-8", errors="replace")


@dataclass
class Outcome:
    status: int  # the command's exit status; 128+N when signal N killed it
    capture: Capture
    signal: str | None = None
    error_file: errorfile.ErrorFile = field(default_factory=errorfile.ErrorFile)
    stopped_by: str | None = None  # the signal that stopped kbgen (and was passed on)
    interrupted: bool = False  # Ctrl-C at the terminal reached the command while it ran

    def report_text(self) -> str:
        """What triage reads: the kept output, the shell's words for a fatal signal, the error file."""
        text = self.capture.text()
        if self.signal:  # what a shell prints for it, which is what the signatures know
            text += f"\n{SHELL_WORDS.get(self.signal, 'Killed')} ({self.signal})"
        if self.error_file.text:
            text = f"{text}\n{self.error_file.text}"
        # one NUL byte would make triage take the whole output for a binary file
        return text.replace("\x00", "")


def exit_status(returncode: int) -> tuple[int, str | None]:
    if returncode < 0:
        number = -returncode
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return 128 + number, name
    return returncode, None


def python_of(argv: list[str]) -> str | None:
    """The interpreter a Python command runs in (``python``, ``python3.11``, ``.venv/bin/python``)."""
    name = Path(argv[0]).name
    if not _PYTHON.fullmatch(name):
        return None
    found = shutil.which(argv[0])
    return os.path.abspath(found) if found else None  # noqa: PTH100 (a venv python is a symlink: keep it)


def run(argv: list[str], *, grace: float, tty: bool | None = None) -> Outcome:
    """Run ``argv``, relaying its output; returns its status and what was kept of the output.

    A stop signal kbgen gets meanwhile is passed on (see :mod:`kbgen.run.stop`); the command has
    ``grace`` seconds to exit before it is killed.
    """
    if tty is None:
        tty = sys.stdout.isatty()
    stopper = Stopper(grace, shared=terminal_foreground())
    capture = Capture()
    found = errorfile.ErrorFile()
    with stopper.installed():
        error_dir = tempfile.mkdtemp(prefix="kbgen-run-")
        try:
            env = dict(os.environ)
            env.setdefault(errorfile.VARIABLE, str(Path(error_dir) / "error.json"))
            relay = _run_pty if tty else _run_pipes
            returncode = relay(argv, env, capture, stopper)
            if returncode != 0 and stopper.signum is None:
                found = errorfile.read(Path(env[errorfile.VARIABLE]))
        finally:
            shutil.rmtree(error_dir, ignore_errors=True)
    status, name = exit_status(returncode)
    return Outcome(status, capture, name, found, stopper.name, stopper.interrupted)


def _start(
    argv: list[str], env: dict[str, str], stopper: Stopper, stdout: int, stderr: int
) -> subprocess.Popen[bytes]:
    from kbgen.errors import KbgenError

    try:
        proc = subprocess.Popen(argv, env=env, stdout=stdout, stderr=stderr, **group_options(stopper.shared))
    except OSError as exc:
        raise KbgenError(f"{argv[0]}: cannot run: {exc.strerror or exc}") from None
    stopper.started(proc)
    return proc


def _run_pipes(argv: list[str], env: dict[str, str], capture: Capture, stopper: Stopper) -> int:
    proc = _start(argv, env, stopper, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    with proc.stdout, proc.stderr:
        sources = [(proc.stdout, sys.stdout.buffer), (proc.stderr, sys.stderr.buffer)]
        return _relay(proc, sources, capture, stopper)


def _run_pty(argv: list[str], env: dict[str, str], capture: Capture, stopper: Stopper) -> int:
    import pty

    master, slave = pty.openpty()
    with contextlib.suppress(OSError):
        import fcntl
        import termios

        size = fcntl.ioctl(sys.stdout.fileno(), termios.TIOCGWINSZ, b"\0" * 8)
        fcntl.ioctl(slave, termios.TIOCSWINSZ, size)
    with open(master, "rb", buffering=0) as source:
        try:
            proc = _start(argv, env, stopper, stdout=slave, stderr=slave)
        finally:
            os.close(slave)
        return _relay(proc, [(source, sys.stdout.buffer)], capture, stopper)


def _pidfd(pid: int) -> int | None:
    """A descriptor that turns readable when ``pid`` exits (Linux 5.3+); None elsewhere."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


_EXITED = "exited"
_WOKEN = "woken"


_Sources = list[tuple[IO[bytes], IO[bytes]]]  # (the command's output, where kbgen relays it)


def _relay(proc: subprocess.Popen[bytes], sources: _Sources, capture: Capture, stopper: Stopper) -> int:
    """Pass the command's output on until the command itself exits, then wait for it.

    Output that arrives after the exit is still passed on while it keeps coming, for at most
    DRAIN_MAX_S: a daemon the command left behind may hold its stdout open for ever.
    """
    pidfd = _pidfd(proc.pid)
    ended: float | None = None
    with selectors.DefaultSelector() as sel:
        for source, out in sources:
            sel.register(source, selectors.EVENT_READ, out)
        if pidfd is not None:
            sel.register(pidfd, selectors.EVENT_READ, _EXITED)
        if stopper.wake is not None:
            sel.register(stopper.wake, selectors.EVENT_READ, _WOKEN)
        try:
            while True:
                if ended is None and proc.poll() is not None:
                    ended = time.monotonic()
                if ended is None:
                    stopper.enforce()
                    timeout = stopper.left()
                    if pidfd is None:  # no exit notice: look again now and then
                        timeout = _POLL_S if timeout is None else min(timeout, _POLL_S)
                else:
                    left = ended + DRAIN_MAX_S - time.monotonic()
                    if left <= 0 or not any(k.data not in (_EXITED, _WOKEN) for k in sel.get_map().values()):
                        break
                    timeout = min(DRAIN_QUIET_S, left)
                events = sel.select(timeout)
                output = False
                for key, _ in events:
                    if key.data is _EXITED:
                        sel.unregister(key.fileobj)
                    elif key.data is _WOKEN:
                        with contextlib.suppress(OSError):
                            os.read(key.fd, 4096)
                    else:
                        output = True
                        _pass_on(sel, key, capture)
                if ended is not None and not output:
                    break  # quiet since the command exited
        finally:
            if pidfd is not None:
                os.close(pidfd)
    return proc.wait()


def _pass_on(sel: selectors.BaseSelector, key: selectors.SelectorKey, capture: Capture) -> None:
    source: IO[bytes] = key.fileobj  # type: ignore[assignment]
    try:
        chunk = os.read(key.fd, 65536)
    except OSError:  # a pty reports EIO once the command has closed it
        chunk = b""
    if not chunk:
        sel.unregister(source)
        return
    capture.feed(chunk)
    out: IO[bytes] = key.data
    try:
        out.write(chunk)
        out.flush()
    except OSError:  # our own output is gone (a closed pipe, a hung-up terminal): the command's
        sel.unregister(source)  # output goes nowhere, and its next write tells it so
        source.close()
