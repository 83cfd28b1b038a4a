"""kbgen fleet probe --slurm: a real one-node Slurm cluster on localhost (scripts/slurm-localhost.sh)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import base_kb_files, write_tree

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("slurmctld") is None, reason="Slurm is not installed (Debian: slurm-wlm)"
    ),
    pytest.mark.skipif(os.geteuid() != 0, reason="the local Slurm cluster needs root"),
]


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    folder = tmp_path_factory.mktemp("slurm")
    script = str(ROOT / "scripts" / "slurm-localhost.sh")
    started = subprocess.run(
        ["sh", script, str(folder)], capture_output=True, text=True, timeout=60, check=False
    )
    try:
        if started.returncode != 0:
            pytest.skip(f"a local Slurm cluster could not start: {started.stderr.strip()[-300:]}")
        yield {**os.environ, "SLURM_CONF": str(folder / "slurm.conf"), "PYTHONPATH": str(ROOT / "src")}
    finally:
        subprocess.run(["sh", script, "stop", str(folder)], timeout=30, check=False)


def fleet_probe(root: Path, env: dict[str, str], command: str) -> subprocess.CompletedProcess[str]:
    argv = [
        sys.executable,
        "-m",
        "kbgen",
        "fleet",
        "probe",
        "--slurm",
        "-N 1 --time=5",
        "--command",
        command,
        "--json",
        "--timeout",
        "120",
    ]
    return subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=180, env=env, check=False)


def test_slurm_runs_one_task_per_node_and_stores_its_report(tmp_path: Path, slurm: dict[str, str]) -> None:
    write_tree(tmp_path, base_kb_files())
    done = fleet_probe(tmp_path, slurm, f"{sys.executable} -m kbgen probe --json system")
    assert done.returncode == 0, done.stderr[-2000:]
    [attempt] = json.loads(done.stdout)
    node = attempt["node"]
    assert attempt["status"] == "ok" and node
    stored = json.loads((tmp_path / "kb" / "fleet" / f"{node}.json").read_text())
    assert stored["engine"] == "slurm" and stored["report"]["results"][0]["id"] == "system"


def test_a_node_whose_command_fails_is_a_result(tmp_path: Path, slurm: dict[str, str]) -> None:
    write_tree(tmp_path, base_kb_files())
    done = fleet_probe(tmp_path, slurm, "echo 'no kbgen on this node' >&2; exit 3")
    assert done.returncode == 1
    [attempt] = json.loads(done.stdout)
    assert attempt["status"] == "failed" and attempt["error"].startswith("exit 3")


def test_slurm_refusing_the_job_is_one_clear_error(tmp_path: Path, slurm: dict[str, str]) -> None:
    write_tree(tmp_path, base_kb_files())
    argv = [
        sys.executable,
        "-m",
        "kbgen",
        "fleet",
        "probe",
        "--slurm",
        "-p no-such-partition",
        "--timeout",
        "60",
    ]
    done = subprocess.run(
        argv, cwd=tmp_path, capture_output=True, text=True, timeout=120, env=slurm, check=False
    )
    assert done.returncode == 1 and done.stderr.startswith("Error: srun ran no task")
    assert "Traceback" not in done.stderr


def test_ship_runs_the_probes_on_a_node_without_kbgen(tmp_path: Path, slurm: dict[str, str]) -> None:
    bare = "/usr/bin/python3"
    if not Path(bare).exists() or subprocess.run([bare, "-c", "import kbgen"], check=False).returncode == 0:
        pytest.skip(f"needs {bare} without kbgen, to stand for a bare node")
    write_tree(tmp_path, base_kb_files())
    argv = [
        sys.executable,
        "-m",
        "kbgen",
        "fleet",
        "probe",
        "--slurm",
        "-N 1 --time=5",
        "--ship",
        "--python",
        bare,
        "--json",
        "--timeout",
        "120",
    ]
    done = subprocess.run(
        argv, cwd=tmp_path, capture_output=True, text=True, timeout=180, env=slurm, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [attempt] = json.loads(done.stdout)
    report = json.loads((tmp_path / "kb" / "fleet" / f"{attempt['node']}.json").read_text())["report"]
    assert report["python"]["executable"] == bare
    assert {r["id"]: r["status"] for r in report["results"]}["system"] == "pass"
