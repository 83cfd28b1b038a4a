"""On a terminal `kbgen probe` shows each probe as it finishes; with --json it prints only JSON."""

from __future__ import annotations

import json
import os
import pty
import re
import sys
import time
from pathlib import Path

from conftest import KBGEN, PATIENCE
from probes_fixtures import PASS, probe_file

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][AB0-2]|\r")


def gated_probes(project: Path) -> Path:
    """``quick`` passes at once; ``gated`` waits until the test creates the returned file."""
    gate = project / "gate"
    wait = f"import os, time\nwhile not os.path.exists({str(gate)!r}):\n    time.sleep(0.05)\n{PASS}"
    (project / "kb" / "probes" / "quick.py").write_text(
        probe_file("quick", 'return {"status": "warn", "message": "quick one done"}')
    )
    (project / "kb" / "probes" / "gated.py").write_text(probe_file("gated", wait, timeout=120))
    return gate


class Terminal:
    """kbgen running on a real pseudo-terminal, 100 columns wide."""

    def __init__(self, *args: str) -> None:
        env = {**os.environ, "COLUMNS": "100", "LINES": "30", "TERM": "xterm-256color"}
        env.pop("NO_COLOR", None)
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # child: kbgen on the terminal
            os.execve(sys.executable, [*KBGEN, *args], env)
        self.seen = b""

    def read_until(self, pattern: str, limit: float = PATIENCE) -> str:
        """Read until the screen text (escape codes removed) matches ``pattern``."""
        deadline = time.monotonic() + limit
        while not re.search(pattern, self.text()):
            assert time.monotonic() < deadline, f"never saw {pattern!r} in:\n{self.text()}"
            if not self._read():
                raise AssertionError(f"kbgen ended before {pattern!r} appeared:\n{self.text()}")
        return self.text()

    def finish(self) -> tuple[int, str]:
        while self._read():
            pass
        _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        return os.waitstatus_to_exitcode(status), self.text()

    def text(self) -> str:
        return ANSI.sub("", self.seen.decode("utf-8", "replace"))

    def _read(self) -> bool:
        try:
            chunk = os.read(self.fd, 4096)
        except OSError:  # the terminal closed: kbgen has exited
            return False
        self.seen += chunk
        return bool(chunk)


def test_each_probe_shows_on_the_terminal_as_it_finishes(kb_project: Path) -> None:
    gate = gated_probes(kb_project)
    terminal = Terminal("probe", "quick", "gated")
    # `gated` cannot finish before the gate exists, so this is the live table, not the report
    during = terminal.read_until(r"quick\s+warn\s+quick one done")
    assert re.search(r"Probes: 1 of 2 done", during)
    assert re.search(r"gated\s+\S+\s+pending", during)
    assert "PROBE  STATUS" not in during  # the final table has not been printed yet
    gate.touch()
    code, after = terminal.finish()
    assert code == 0, after
    report = after[after.index("PROBE  STATUS") :].splitlines()
    assert report[1:3] == ["quick  warn     quick one done", "gated  pass     all good"]
    assert report[-1].startswith("2 probes in ") and report[-1].endswith(" s: 1 pass, 1 warn")


def test_json_on_a_terminal_is_only_json(kb_project: Path) -> None:
    gate = gated_probes(kb_project)
    gate.touch()
    terminal = Terminal("probe", "--json", "quick", "gated")
    code, out = terminal.finish()
    assert code == 0, out
    assert "\x1b" not in terminal.seen.decode()  # no live table, no colour
    report = json.loads(out)
    assert [(r["id"], r["status"]) for r in report["results"]] == [("quick", "warn"), ("gated", "pass")]
