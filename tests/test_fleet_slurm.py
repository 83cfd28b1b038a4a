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

from conftest import PATIENCE, base_kb_files, write_tree
from fleet_fixtures import bare_python, kbgen, node_file

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
        ["sh", script, str(folder)], capture_output=True, text=True, timeout=PATIENCE, check=False
    )
    try:
        if started.returncode != 0:
            pytest.skip(f"a local Slurm cluster could not start: {started.stderr.strip()[-300:]}")
        yield {**os.environ, "SLURM_CONF": str(folder / "slurm.conf"), "PYTHONPATH": str(ROOT / "src")}
    finally:
        subprocess.run(["sh", script, "stop", str(folder)], timeout=PATIENCE, check=False)


def fleet_probe(root: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    write_tree(root, base_kb_files())
    return kbgen(
        root, "fleet", "probe", "--slurm", "-N 1 --time=5", *args, "--json", "--timeout", "120", env=env
    )


def test_slurm_runs_one_task_per_node_and_stores_its_report(tmp_path: Path, slurm: dict[str, str]) -> None:
    done = fleet_probe(tmp_path, slurm, "--command", f"{sys.executable} -m kbgen probe --json system")
    assert done.returncode == 0, done.stderr[-2000:]
    [attempt] = json.loads(done.stdout)
    assert attempt["status"] == "ok" and attempt["node"]
    stored = node_file(tmp_path, attempt["node"])
    assert stored["engine"] == "slurm" and stored["report"]["results"][0]["id"] == "system"


def test_a_node_whose_command_fails_is_a_result(tmp_path: Path, slurm: dict[str, str]) -> None:
    done = fleet_probe(tmp_path, slurm, "--command", "echo 'no kbgen on this node' >&2; exit 3")
    assert done.returncode == 1
    [attempt] = json.loads(done.stdout)
    assert attempt["status"] == "failed" and attempt["error"].startswith("exit 3")


def test_slurm_refusing_the_job_is_one_clear_error(tmp_path: Path, slurm: dict[str, str]) -> None:
    write_tree(tmp_path, base_kb_files())
    done = kbgen(tmp_path, "fleet", "probe", "--slurm", "-p no-such-partition", "--timeout", "60", env=slurm)
    assert done.returncode == 1 and done.stderr.startswith("Error: srun ran no task")
    assert "Traceback" not in done.stderr


def test_ship_runs_the_probes_on_a_node_without_kbgen(tmp_path: Path, slurm: dict[str, str]) -> None:
    bare = bare_python()
    done = fleet_probe(tmp_path, slurm, "--ship", "--python", bare)
    assert done.returncode == 0, done.stdout + done.stderr
    [attempt] = json.loads(done.stdout)
    report = node_file(tmp_path, attempt["node"])["report"]
    assert report["python"]["executable"] == bare
    assert {r["id"]: r["status"] for r in report["results"]}["system"] == "pass"
