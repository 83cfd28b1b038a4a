"""`kbgen run` and its command's output: kbgen is done when the command is, not when the last
process holding its output lets go, and output with NUL bytes is still triaged and filed."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import kbgen
from run_fixtures import command_file, kill_all, reap, start, wait_for

IMA = "RuntimeError: CUDA error: an illegal memory access was encountered"

# Starts a server that outlives it and keeps the command's stdout and stderr (as `cmd &` in a
# script does), writes the server's pid by rename, says so and fails.
LEAVES_A_SERVER = """
import os, subprocess, sys, time
server = subprocess.Popen([sys.executable, "-c", {server!r}], start_new_session={setsid})
while not os.path.exists("server.pid"):
    time.sleep(0.01)
print("started the server; now failing", flush=True)
sys.exit(3)
"""
QUIET = """
import os, time
open("server.pid.tmp", "w").write(str(os.getpid()))
os.rename("server.pid.tmp", "server.pid")
time.sleep(600)
"""
CHATTY = """
import os, sys, time
open("server.pid.tmp", "w").write(str(os.getpid()))
os.rename("server.pid.tmp", "server.pid")
while True:
    print("server: still serving", flush=True)
    time.sleep(0.01)
"""


@pytest.fixture(autouse=True)
def _no_kbgen_left() -> Iterator[None]:
    yield
    reap()


@pytest.fixture
def server_pid(tmp_path: Path) -> Iterator[Path]:
    """Where the server writes its pid; the server is ended at the end of the test."""
    path = tmp_path / "server.pid"
    yield path
    if path.exists():
        kill_all([int(path.read_text())])


@pytest.mark.parametrize(
    ("server", "setsid"),
    [(QUIET, False), (QUIET, True), (CHATTY, True)],
    ids=["quiet-server", "quiet-server-in-its-own-session", "server-that-keeps-writing"],
)
def test_kbgen_is_done_when_the_command_is_though_a_server_it_left_holds_its_output(
    tmp_path: Path, server_pid: Path, server: str, setsid: bool
) -> None:
    argv = command_file(tmp_path, "serve.py", LEAVES_A_SERVER.format(server=server, setsid=setsid))
    run = start("run", "--", *argv, cwd=tmp_path, env=dict(os.environ))
    out, err = run.communicate(timeout=120)
    assert run.returncode == 3, err
    assert "started the server; now failing\n" in out  # the command's last words are passed on
    assert "kbgen: the command failed (exit status 3)." in err
    assert "Traceback" not in err
    pid = int(wait_for(server_pid, run))
    assert Path(f"/proc/{pid}").exists()  # the server is the command's business: kbgen leaves it be


def test_output_with_nul_bytes_is_still_triaged_and_filed(kb_project: Path) -> None:
    code = (
        "import sys\n"
        "sys.stdout.buffer.write(b'\\0\\0\\0step 1\\n')\n"  # what a preallocated log shows first
        f"sys.stdout.buffer.write(b'{IMA}\\0\\n')\n"
        "sys.exit(1)\n"
    )
    result = kbgen("run", "--file-bug", "--", sys.executable, "-c", code, cwd=kb_project)
    assert result.returncode == 1, result.stderr
    assert "binary" not in result.stderr
    assert "kbgen: looks like cuda-illegal-memory-access" in result.stderr
    filed = [p for p in (kb_project / "kb" / "bugs").glob("BUG-*.md") if p.name != "BUG-20251109-002.md"]
    assert len(filed) == 1, result.stderr
    text = filed[0].read_text()
    assert "error: cuda-illegal-memory-access" in text
    assert "\0" not in text
