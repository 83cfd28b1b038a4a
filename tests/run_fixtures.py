"""Helpers for the `kbgen run` tests: a real kbgen process, the commands it runs, and the events
(files written by rename, lines on a terminal) the tests wait on instead of sleeping."""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import KBGEN

#: how long a test waits for an event before it fails: generous, for a loaded machine
PATIENCE = 120.0


def command_file(folder: Path, name: str, body: str) -> list[str]:
    """A Python script ``folder/name`` with ``body``; returns the argv that runs it."""
    path = folder / name
    path.write_text(textwrap.dedent(body))
    return [sys.executable, str(path)]


#: every kbgen the tests started, so that a failed test leaves none running (see :func:`reap`)
STARTED: list[subprocess.Popen[str]] = []


def start(*args: str, cwd: Path, env: dict[str, str], **popen: object) -> subprocess.Popen[str]:
    """``kbgen ARGS`` in a session of its own (no controlling terminal), its output on pipes."""
    options: dict[str, object] = {
        "stdin": subprocess.DEVNULL,
        "stdout": subprocess.PIPE,
        "stderr": subprocess.PIPE,
        "start_new_session": True,
        **popen,
    }
    process = subprocess.Popen([*KBGEN, *args], cwd=cwd, env=env, text=True, **options)  # type: ignore[call-overload]
    STARTED.append(process)
    return process


def reap() -> None:
    """Kill and reap every kbgen a test started that still runs (the test has failed already)."""
    while STARTED:
        process = STARTED.pop()
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=PATIENCE)


def wait_for(path: Path, kbgen: subprocess.Popen[str]) -> str:
    """The text of ``path`` once it exists (its writer renames it into place); fails with kbgen's
    own words if kbgen exits first."""
    deadline = time.monotonic() + PATIENCE
    while not path.exists():
        if kbgen.poll() is not None:
            out, err = kbgen.communicate()
            pytest.fail(f"kbgen exited {kbgen.returncode} before {path.name} was written:\n{out}{err}")
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)
    return path.read_text()


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie, dead but not yet reaped, counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def still_alive(pids: list[int], seconds: float = PATIENCE) -> list[int]:
    """The pids still running after waiting up to ``seconds`` for every one to end."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.02)
    return [p for p in pids if alive(p)]


def kill_all(pids: list[int]) -> None:
    """Clean up after a failed test: end the processes it started (by pid)."""
    for pid in pids:
        if alive(pid):
            os.kill(pid, 9)


class Terminal:
    """The far side of a pseudo-terminal that kbgen runs on as its controlling terminal."""

    def __init__(self, master: int) -> None:
        self.master = master
        self.seen = b""

    def until(self, text: bytes) -> bytes:
        """Everything shown so far, once ``text`` has appeared."""
        deadline = time.monotonic() + PATIENCE
        while text not in self.seen:
            left = deadline - time.monotonic()
            assert left > 0, f"{text!r} never appeared; the terminal shows {self.seen!r}"
            if select.select([self.master], [], [], left)[0]:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # EIO: every process has closed the terminal
                    chunk = b""
                if not chunk:
                    raise AssertionError(f"{text!r} never appeared; the terminal shows {self.seen!r}")
                self.seen += chunk
        return self.seen

    def rest(self) -> bytes:
        """Everything shown until every process has closed the terminal."""
        while True:
            if not select.select([self.master], [], [], PATIENCE)[0]:
                raise AssertionError(f"the terminal stayed open; it shows {self.seen!r}")
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return self.seen
            if not chunk:
                return self.seen
            self.seen += chunk


@contextlib.contextmanager
def on_terminal(
    args: list[str], cwd: Path, env: dict[str, str], *, reads_it: bool = False
) -> Iterator[tuple[subprocess.Popen[bytes], Terminal]]:
    """``kbgen ARGS`` in a session of its own whose controlling terminal is a new pseudo-terminal,
    as in a terminal window: its output goes there, and its input too when ``reads_it``."""
    import fcntl
    import termios

    master, slave = os.openpty()

    def take_the_terminal() -> None:  # in kbgen's new session: the pty becomes its terminal
        fcntl.ioctl(1, termios.TIOCSCTTY, 0)  # its stdout is the pty

    kbgen = subprocess.Popen(
        [*KBGEN, *args],
        cwd=cwd,
        env=env,
        stdin=slave if reads_it else subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
        preexec_fn=take_the_terminal,  # the test process starts no threads
    )
    os.close(slave)
    try:
        yield kbgen, Terminal(master)
    finally:
        if kbgen.poll() is None:
            kbgen.kill()
        kbgen.wait(timeout=PATIENCE)
        os.close(master)
