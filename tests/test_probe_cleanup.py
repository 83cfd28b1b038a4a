"""A probe run leaves nothing behind: not when kbgen is stopped or killed, not when a probe hides a
child with setsid(), deletes folders or allocates without bound. Real kbgen processes throughout."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conftest import KBGEN, PATIENCE
from probes_fixtures import PASS, SIGILL, probe_file
from run_fixtures import alive

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")

# Starts a child that leaves the process group (setsid) and a grandchild that is orphaned by a
# double fork, writes their pids where the test can see them, then hangs.
HIDES_CHILDREN = """
import os, subprocess, sys, time
hidden = subprocess.Popen([sys.executable, "-c", "import os, time; os.setsid(); time.sleep(600)"])
orphan = subprocess.Popen([sys.executable, "-c", (
    "import os, sys, time\\n"
    "if os.fork() == 0:\\n"
    "    os.setsid()\\n"
    "    open(sys.argv[1] + '.tmp', 'w').write(str(os.getpid()))\\n"
    "    os.rename(sys.argv[1] + '.tmp', sys.argv[1])\\n"
    "    time.sleep(600)\\n"
), {orphan_file!r}])
orphan.wait()
while not os.path.exists({orphan_file!r}):
    time.sleep(0.02)
with open({pid_file!r} + ".tmp", "w") as handle:
    handle.write(" ".join(map(str, [os.getpid(), hidden.pid, int(open({orphan_file!r}).read())])))
os.rename({pid_file!r} + ".tmp", {pid_file!r})
time.sleep(600)
"""


@pytest.fixture
def tmpdir_env(kb_project: Path, tmp_path: Path) -> dict[str, str]:
    """kbgen's environment with a TMPDIR of its own, so leftovers are this test's alone."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    return {**os.environ, "TMPDIR": str(folder)}


def hiding_probe(project: Path, probe_id: str = "hides", timeout: float = 120) -> Path:
    """A project probe that starts hidden children and hangs; returns the file its pids land in."""
    pid_file = project / f"{probe_id}.pids"
    body = HIDES_CHILDREN.format(pid_file=str(pid_file), orphan_file=str(project / f"{probe_id}.orphan"))
    (project / "kb" / "probes" / f"{probe_id}.py").write_text(probe_file(probe_id, body, timeout=timeout))
    return pid_file


def wait_for(path: Path, kbgen: subprocess.Popen | None = None, limit: float = PATIENCE) -> list[int]:
    """The pids the hiding probe wrote; fails with kbgen's own words if it finished first."""
    deadline = time.monotonic() + limit
    while not path.exists():
        if kbgen is not None and kbgen.poll() is not None:
            out, err = kbgen.communicate()
            pytest.fail(f"kbgen exited {kbgen.returncode} before the probe wrote {path.name}:\n{out}{err}")
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)
    return [int(pid) for pid in path.read_text().split()]


@pytest.fixture
def hiding_kbgen(
    kb_project: Path, tmpdir_env: dict[str, str]
) -> Iterator[Callable[[], tuple[subprocess.Popen, list[int]]]]:
    """Starts ``kbgen probe hides`` and waits for the pids its probe hid; every kbgen it started is
    killed and reaped at the end, so nothing leaks into the next test."""
    processes: list[subprocess.Popen] = []

    def start() -> tuple[subprocess.Popen, list[int]]:
        pid_file = hiding_probe(kb_project)
        kbgen = subprocess.Popen(
            [*KBGEN, "probe", "hides"],
            env=tmpdir_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        processes.append(kbgen)
        return kbgen, wait_for(pid_file, kbgen)

    yield start
    for process in processes:
        if process.poll() is None:
            process.kill()
        # a leftover child that still holds the pipes means the test has failed already
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.communicate(timeout=PATIENCE)


def workers_of(tmpdir: str) -> list[int]:
    """Probe workers started by this test's kbgen (their scratch folder lies in its TMPDIR)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(b"worker.py" in part for part in command) and tmpdir.encode() in b" ".join(command):
            found.append(int(entry.name))
    return [pid for pid in found if alive(pid)]


def gone_within(pids: list[int], seconds: float) -> list[int]:
    """The pids still alive after waiting up to ``seconds`` for them to exit."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_stopped_kbgen_stops_every_worker_and_removes_its_folders(
    tmpdir_env: dict[str, str],
    signum: signal.Signals,
    hiding_kbgen: Callable[[], tuple[subprocess.Popen, list[int]]],
) -> None:
    kbgen, probe_pids = hiding_kbgen()
    workers = workers_of(tmpdir_env["TMPDIR"])
    assert workers  # the hanging probe's worker (and the torch worker, started early)
    kbgen.send_signal(signum)
    out, err = kbgen.communicate(timeout=PATIENCE)
    assert kbgen.returncode == 128 + signum, err
    assert err == f"Interrupted by {signum.name}: stopped every probe.\n"
    assert out == ""
    assert gone_within(workers + probe_pids, PATIENCE) == []
    assert workers_of(tmpdir_env["TMPDIR"]) == []
    assert list(Path(tmpdir_env["TMPDIR"]).iterdir()) == []  # no kbgen-probe-* left


def test_workers_exit_when_kbgen_is_killed(
    tmpdir_env: dict[str, str], hiding_kbgen: Callable[[], tuple[subprocess.Popen, list[int]]]
) -> None:
    kbgen, probe_pids = hiding_kbgen()
    workers = workers_of(tmpdir_env["TMPDIR"])
    kbgen.kill()
    kbgen.wait(timeout=PATIENCE)
    # a worker importing torch handles the death signal between two imports: allow for a busy machine
    assert gone_within(workers + probe_pids, PATIENCE) == []
    assert workers_of(tmpdir_env["TMPDIR"]) == []
    deadline = time.monotonic() + PATIENCE  # the last worker removes its scratch folder on its way out
    while list(Path(tmpdir_env["TMPDIR"]).iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(Path(tmpdir_env["TMPDIR"]).iterdir()) == []


def report_of(project: Path, env: dict[str, str], *args: str) -> dict:
    done = subprocess.run(
        [*KBGEN, "probe", "--json", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=PATIENCE,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return {r["id"]: r for r in json.loads(done.stdout)["results"]}


def test_a_timed_out_probe_takes_children_that_left_its_group_with_it(
    kb_project: Path, tmpdir_env: dict[str, str]
) -> None:
    pid_file = hiding_probe(kb_project, timeout=20)  # room for a machine at a load of 8 to start it
    (kb_project / "kb" / "probes" / "after.py").write_text(probe_file("after", PASS))
    results = report_of(kb_project, tmpdir_env, "hides", "after")
    assert results["hides"]["status"] == "timeout"
    assert results["after"]["status"] == "pass"
    _, hidden, orphan = wait_for(pid_file)
    assert gone_within([hidden, orphan], PATIENCE) == []
    assert list(Path(tmpdir_env["TMPDIR"]).iterdir()) == []


def test_a_probe_that_deletes_folders_does_not_break_later_probes(
    kb_project: Path, tmpdir_env: dict[str, str]
) -> None:
    vandal = """
        import glob, os, shutil, tempfile
        for path in glob.glob(os.path.join(tempfile.gettempdir(), "*")) + [os.getcwd()]:
            shutil.rmtree(path, ignore_errors=True)
        return {"status": "pass", "message": "deleted " + tempfile.gettempdir() + "/*", "facts": {}}
    """
    files = {"vandal": vandal, "next": PASS, "dies": SIGILL, "last": PASS}
    for probe_id, body in files.items():
        (kb_project / "kb" / "probes" / f"{probe_id}.py").write_text(probe_file(probe_id, body))
    results = report_of(kb_project, tmpdir_env, *files)
    assert results["vandal"]["status"] == "pass"
    assert results["next"]["status"] == "pass"  # the same worker, its files gone from the folder
    assert results["dies"]["status"] == "crash"
    assert results["dies"]["message"].startswith("the probe's process died of SIGILL (illegal instruction)")
    assert "Fatal Python error" in results["dies"]["stderr_tail"]
    assert results["last"]["status"] == "pass"  # a fresh worker after the crash


def test_a_probe_past_its_memory_cap_is_reported_as_out_of_memory(
    kb_project: Path, tmpdir_env: dict[str, str]
) -> None:
    greedy = 'hoard = bytearray(64 * 2**30)\nreturn {"status": "pass", "message": "got 64 GiB"}'
    (kb_project / "kb" / "probes" / "greedy.py").write_text(probe_file("greedy", greedy))
    (kb_project / "kb" / "probes" / "after.py").write_text(probe_file("after", PASS))
    results = report_of(kb_project, tmpdir_env, "--memory-limit", "512M", "greedy", "after")
    assert results["greedy"]["status"] == "error"
    assert results["greedy"]["message"] == (
        "out of memory: the probe needed more than its memory cap of 512 MiB (--memory-limit)"
    )
    assert "MemoryError" in results["greedy"]["stderr_tail"]
    assert results["after"]["status"] == "pass"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("lots", "'lots' is not a size such as 512M or 4G (0 for no limit)"),
        ("1M", "1M is too small for a Python process; give at least 64M"),
    ],
)
def test_a_bad_memory_limit_is_one_clear_error(kb_project: Path, value: str, message: str) -> None:
    done = subprocess.run(
        [*KBGEN, "probe", "--memory-limit", value, "system"], capture_output=True, text=True, timeout=PATIENCE
    )
    assert done.returncode == 2
    # click words the frame of a usage error; kbgen's part is the option named and its reason
    assert "--memory-limit" in done.stderr and done.stderr.endswith(f"{message}\n")
    assert done.stdout == ""
