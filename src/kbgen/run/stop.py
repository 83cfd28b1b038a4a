"""What ``kbgen run`` does when it is told to stop (SIGTERM, SIGHUP, SIGINT) while its command runs.

kbgen passes the signal on, waits for the command to finish its own way (relaying its last
output), and exits with the command's status. A command that is still running ``grace`` seconds
later is killed (SIGKILL), so a stopped kbgen never leaves it behind.

Who gets the signal depends on where kbgen runs:

* In the foreground of a terminal the command shares kbgen's process group, as it would without
  kbgen: it can read the terminal, and Ctrl-C, Ctrl-Z and Ctrl-\\ reach it directly. kbgen
  therefore does not pass SIGINT on (a second copy would cut the command's own Ctrl-C handler
  short) and sets no countdown for it (a debugger or a REPL takes Ctrl-C and goes on). Other
  signals go to the command's process only: the group also holds whatever started kbgen.
* Anywhere else (a CI job, a script, a service) the command gets a process group of its own, and
  every stop signal is passed to that whole group, so the command's children get it too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from types import FrameType
from typing import Any

STOP_SIGNALS = ("SIGTERM", "SIGHUP", "SIGINT")


def terminal_foreground() -> bool:
    """True when kbgen's process group is the foreground group of its controlling terminal."""
    if not hasattr(os, "tcgetpgrp"):  # pragma: no cover - Windows
        return False
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:  # no controlling terminal
        return False
    try:
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:
        return False
    finally:
        os.close(fd)


def group_options(shared: bool) -> dict[str, Any]:
    """``Popen`` keywords that give the command a process group of its own unless ``shared``."""
    if shared:
        return {}
    if sys.version_info >= (3, 11):
        return {"process_group": 0}
    return {"start_new_session": True}  # pragma: no cover - Python 3.10


class Stopper:
    """Receives the stop signals while the command runs, and passes them on."""

    def __init__(self, grace: float, shared: bool) -> None:
        self.grace = grace
        self.shared = shared
        self.proc: subprocess.Popen[bytes] | None = None
        self.signum: int | None = None  # the first signal that stops kbgen
        self.interrupted = False  # Ctrl-C at the terminal reached the command itself
        self.deadline: float | None = None
        self.wake: int | None = None  # readable after any signal: wakes the relay loop

    @property
    def name(self) -> str | None:
        return signal.Signals(self.signum).name if self.signum is not None else None

    def handle(self, signum: int, frame: FrameType | None) -> None:
        if self.shared and signum == signal.SIGINT:
            self.interrupted = True  # the terminal sent it to the command as well
            return
        if self.signum is None:
            self.signum = signum
            self.deadline = time.monotonic() + self.grace
        self._send(signum)

    def started(self, proc: subprocess.Popen[bytes]) -> None:
        """The command runs: a stop signal that came while it was being started reaches it now."""
        self.proc = proc
        if self.signum is not None:
            self._send(self.signum)

    def left(self) -> float | None:
        """Seconds until the command is killed; None while no stop signal came."""
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())

    def enforce(self) -> None:
        """Kill the command once its grace period is over."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self.deadline = None
            self._send(signal.SIGKILL)

    def _send(self, signum: int) -> None:
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if self.shared:
                os.kill(proc.pid, signum)
            else:
                os.killpg(proc.pid, signum)

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        """Handle the stop signals kbgen was not told to ignore (``nohup``), and restore them after."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        chosen = [getattr(signal, name) for name in STOP_SIGNALS if hasattr(signal, name)]
        chosen = [s for s in chosen if signal.getsignal(s) is not signal.SIG_IGN]
        read_end, write_end = os.pipe()
        os.set_blocking(read_end, False)
        os.set_blocking(write_end, False)
        saved = {s: signal.signal(s, self.handle) for s in chosen}
        old_wakeup = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
        self.wake = read_end
        try:
            yield
        finally:
            signal.set_wakeup_fd(old_wakeup)
            for each, handler in saved.items():
                signal.signal(each, handler)
            self.wake = None
            os.close(read_end)
            os.close(write_end)
