"""Run a command for ``kbgen run``: its output passes through unchanged and a bounded part is kept.

On a terminal the command gets a pseudo-terminal, so colours and progress bars look as they do
without kbgen; otherwise its stdout and stderr stay two pipes, each relayed to ours. What is kept
for triage is the tail of the output plus the lines that look like errors, however long the log.
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
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

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
    error_file: str | None = None  # the torchrun child's error, when one was written


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


def run(argv: list[str], *, tty: bool | None = None) -> Outcome:
    """Run ``argv``, relaying its output; returns its status and what was kept of the output."""
    if tty is None:
        tty = sys.stdout.isatty()
    error_dir = tempfile.mkdtemp(prefix="kbgen-run-")
    env = dict(os.environ)
    env.setdefault("TORCHELASTIC_ERROR_FILE", str(Path(error_dir) / "error.json"))
    capture = Capture()
    try:
        returncode = _run_pty(argv, env, capture) if tty else _run_pipes(argv, env, capture)
        error_text = read_error_file(Path(env["TORCHELASTIC_ERROR_FILE"]))
    finally:
        shutil.rmtree(error_dir, ignore_errors=True)
    status, name = exit_status(returncode)
    return Outcome(status, capture, name, error_text)


def _start(argv: list[str], env: dict[str, str], stdout: int, stderr: int) -> subprocess.Popen[bytes]:
    from kbgen.errors import KbgenError

    try:
        return subprocess.Popen(argv, env=env, stdout=stdout, stderr=stderr)
    except OSError as exc:
        raise KbgenError(f"{argv[0]}: cannot run: {exc.strerror or exc}") from None


def _relay(sel: selectors.BaseSelector, capture: Capture) -> None:
    while sel.get_map():
        for key, _ in sel.select():
            try:
                chunk = os.read(key.fd, 65536)
            except OSError:  # a pty reports EIO once the command has closed it
                chunk = b""
            if not chunk:
                sel.unregister(key.fd)
                continue
            out = key.data
            out.write(chunk)
            out.flush()
            capture.feed(chunk)


def _run_pipes(argv: list[str], env: dict[str, str], capture: Capture) -> int:
    proc = _start(argv, env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ, sys.stdout.buffer)
        sel.register(proc.stderr, selectors.EVENT_READ, sys.stderr.buffer)
        _relay(sel, capture)
    return _wait(proc)


def _run_pty(argv: list[str], env: dict[str, str], capture: Capture) -> int:
    import pty

    master, slave = pty.openpty()
    with contextlib.suppress(OSError):
        import fcntl
        import termios

        size = fcntl.ioctl(sys.stdout.fileno(), termios.TIOCGWINSZ, b"\0" * 8)
        fcntl.ioctl(slave, termios.TIOCSWINSZ, size)
    try:
        proc = _start(argv, env, stdout=slave, stderr=slave)
    finally:
        os.close(slave)
    try:
        with selectors.DefaultSelector() as sel:
            sel.register(master, selectors.EVENT_READ, sys.stdout.buffer)
            _relay(sel, capture)
    finally:
        os.close(master)
    return _wait(proc)


def _wait(proc: subprocess.Popen[bytes]) -> int:
    while True:
        try:
            return proc.wait()
        except KeyboardInterrupt:  # the command got the Ctrl-C too; let it finish its way
            continue


def read_error_file(path: Path) -> str | None:
    """The message and traceback a torchrun child (``@record``) wrote, as text."""
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8", errors="replace")[:1_000_000])
    except (OSError, ValueError):
        return None
    message = data.get("message") if isinstance(data, dict) else None
    if isinstance(message, dict):
        text = str(message.get("message", ""))
        stack = (message.get("extraInfo") or {}).get("py_callstack")
        return f"{stack}\n{text}" if stack else text
    return str(message) if message else None
