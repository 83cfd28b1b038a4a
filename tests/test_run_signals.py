"""`kbgen run` when kbgen is told to stop: the signal reaches the command and its children, kbgen
waits for them (killing them after --grace), leaves no folder behind and exits with the command's
status. Real kbgen processes throughout; the tests wait on files and terminal output, never sleep."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from run_fixtures import command_file, kill_all, on_terminal, reap, start, still_alive, wait_for

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")

# The command: starts a child of its own (in its process group, as a launcher's workers are),
# writes both pids by rename once the child runs, then waits. HANDLER decides what a signal does.
COMMAND = """
import os, signal, subprocess, sys, time
{handler}
read_end, write_end = os.pipe()
child = subprocess.Popen(
    [sys.executable, "-c", "import os, signal, sys, time\\n"
     "signal.signal(signal.SIGINT, signal.SIG_DFL)\\n"
     "os.write(int(sys.argv[1]), b'up')\\n"
     "time.sleep(600)\\n", str(write_end)],
    pass_fds=[write_end],
)
os.close(write_end)
os.read(read_end, 2)
with open("pids.tmp", "w") as handle:
    handle.write(f"{{os.getpid()}} {{child.pid}}")
os.rename("pids.tmp", "pids")
print("ready", flush=True)
while True:
    time.sleep(600)
"""
# dies of the signal, as most programs do (SIGINT too, without Python's KeyboardInterrupt traceback)
DIES = "signal.signal(signal.SIGINT, signal.SIG_DFL)"
# saves its work first (which takes until the test says so), prints a last line, exits 7
SAVES = """
def save(signum, frame):
    child.terminate()
    open("saving.tmp", "w").close()
    os.rename("saving.tmp", "saving")
    while not os.path.exists("release"):
        time.sleep(0.02)
    print("checkpoint saved", flush=True)
    sys.exit(7)
for each in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
    signal.signal(each, save)
"""
IGNORES = "signal.signal(signal.SIGTERM, signal.SIG_IGN)"

STOPS = [signal.SIGTERM, signal.SIGHUP, signal.SIGINT]


@pytest.fixture(autouse=True)
def _no_kbgen_left() -> Iterator[None]:
    yield
    reap()


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    """The test's working folder, with a TMPDIR of its own so kbgen's leftovers are this test's."""
    (tmp_path / "tmp").mkdir()
    yield tmp_path
    pids = tmp_path / "pids"
    if pids.exists():
        kill_all([int(pid) for pid in pids.read_text().split()])


def env_of(folder: Path) -> dict[str, str]:
    return {**os.environ, "TMPDIR": str(folder / "tmp")}


def run_command(folder: Path, handler: str, *options: str) -> tuple[subprocess.Popen[str], list[int]]:
    argv = command_file(folder, "train.py", COMMAND.format(handler=handler))
    kbgen = start("run", *options, "--", *argv, cwd=folder, env=env_of(folder))
    pids = [int(pid) for pid in wait_for(folder / "pids", kbgen).split()]
    return kbgen, pids


@pytest.mark.parametrize("signum", STOPS, ids=lambda s: s.name)
def test_a_stopped_kbgen_stops_the_command_and_its_children(folder: Path, signum: signal.Signals) -> None:
    kbgen, pids = run_command(folder, DIES)
    kbgen.send_signal(signum)
    out, err = kbgen.communicate(timeout=120)
    assert kbgen.returncode == 128 + signum, err
    assert out == "ready\n"
    assert err == f"\nkbgen: stopped by {signum.name}; the command ended (killed by {signum.name}).\n"
    assert still_alive(pids) == []
    assert list((folder / "tmp").iterdir()) == []  # no kbgen-run-* folder left


@pytest.mark.parametrize("signum", STOPS, ids=lambda s: s.name)
def test_kbgen_waits_for_the_command_to_finish_its_own_way_and_keeps_its_status(
    folder: Path, signum: signal.Signals
) -> None:
    kbgen, pids = run_command(folder, SAVES, "--grace", "600")
    kbgen.send_signal(signum)
    wait_for(folder / "saving", kbgen)  # the command got the signal, and is saving its work
    assert kbgen.poll() is None  # kbgen waits for it
    (folder / "release").touch()
    out, err = kbgen.communicate(timeout=120)
    assert kbgen.returncode == 7, err
    assert out == "ready\ncheckpoint saved\n"  # its last words are passed on
    assert err == f"\nkbgen: stopped by {signum.name}; the command ended (exit status 7).\n"
    assert still_alive(pids) == []
    assert list((folder / "tmp").iterdir()) == []


def test_a_command_that_ignores_the_signal_is_killed_after_the_grace_period(folder: Path) -> None:
    kbgen, pids = run_command(folder, IGNORES, "--grace", "1")
    kbgen.send_signal(signal.SIGTERM)
    _, err = kbgen.communicate(timeout=120)
    assert kbgen.returncode == 128 + signal.SIGKILL, err
    assert err == "\nkbgen: stopped by SIGTERM; the command ended (killed by SIGKILL).\n"
    assert still_alive(pids) == []  # its child went with it
    assert list((folder / "tmp").iterdir()) == []


# Takes Ctrl-C as a training script does: says so, cleans up until the test lets it finish,
# then reports how many SIGINTs it got and exits with a status of its own.
CTRL_C = """
import os, signal, sys, time
got = []
signal.signal(signal.SIGINT, lambda signum, frame: got.append(signum))
print("ready", flush=True)
while not got:
    time.sleep(0.02)
print("interrupted: cleaning up", flush=True)
while not os.path.exists("release"):
    time.sleep(0.02)
print(f"cleaned up after {len(got)} SIGINT", flush=True)
print("RuntimeError: CUDA error: an illegal memory access was encountered", flush=True)
sys.exit(7)
"""
terminals = pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")


@terminals
def test_ctrl_c_at_a_terminal_reaches_the_command_once_and_kbgen_waits_for_it(folder: Path) -> None:
    argv = command_file(folder, "train.py", CTRL_C)
    with on_terminal(["run", "--", *argv], folder, env_of(folder)) as (kbgen, terminal):
        terminal.until(b"ready")
        os.write(terminal.master, b"\x03")  # Ctrl-C: the terminal signals its whole foreground group
        terminal.until(b"cleaning up")
        assert kbgen.poll() is None  # kbgen waits while the command cleans up
        (folder / "release").touch()
        shown = terminal.rest().decode()
        assert kbgen.wait(timeout=120) == 7
    assert "cleaned up after 1 SIGINT" in shown  # its last words, and one SIGINT, not two
    assert "kbgen: the command failed (exit status 7)." in shown
    assert "Traceback" not in shown and "Interrupted" not in shown
    assert list((folder / "tmp").iterdir()) == []


@terminals
def test_after_ctrl_c_kbgen_offers_to_file_the_bug_but_does_not_by_default(
    kb_project: Path, folder: Path
) -> None:
    argv = command_file(folder, "train.py", CTRL_C)
    with on_terminal(["run", "--", *argv], folder, env_of(folder), reads_it=True) as (kbgen, terminal):
        terminal.until(b"ready")
        os.write(terminal.master, b"\x03")
        terminal.until(b"cleaning up")
        (folder / "release").touch()
        terminal.until(b"File a bug and fill it with the probes? [y/N]: ")
        os.write(terminal.master, b"\r")  # Enter: the default
        shown = terminal.rest().decode()
        assert kbgen.wait(timeout=120) == 7
    assert "kbgen: looks like cuda-illegal-memory-access" in shown
    assert [p.name for p in (kb_project / "kb" / "bugs").iterdir()] == ["BUG-20251109-002.md"]
