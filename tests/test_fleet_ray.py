"""kbgen fleet probe --ray: a real three-node Ray cluster on this machine (ray.cluster_utils)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import base_kb_files, write_tree

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'kbgen[ray]')")
pytestmark = pytest.mark.slow
SRC = Path(__file__).resolve().parents[1] / "src"


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    from ray.cluster_utils import Cluster

    # Ray's workers inherit this process's environment: they must import this checkout's kbgen.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH")) if p))
        small = {"num_cpus": 1, "object_store_memory": 80 * 1024 * 1024, "include_dashboard": False}
        try:
            nodes = Cluster(initialize_head=True, head_node_args=small)
            for _ in range(2):
                nodes.add_node(num_cpus=1, object_store_memory=80 * 1024 * 1024)
            nodes.wait_for_nodes()
        except Exception as exc:  # pragma: no cover - depends on the machine
            pytest.skip(f"a local Ray cluster could not start here: {exc}")
        try:
            yield nodes.address
        finally:
            nodes.shutdown()


def test_ray_probes_each_alive_node_once(tmp_path: Path, cluster: str) -> None:
    write_tree(tmp_path, base_kb_files())
    command = f"{sys.executable} -m kbgen probe --json system"
    env = {**os.environ, "PYTHONPATH": str(SRC), "RAY_ADDRESS": cluster}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kbgen",
            "fleet",
            "probe",
            "--ray",
            cluster,
            "--command",
            command,
            "--json",
            "--timeout",
            "240",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    attempts = json.loads(done.stdout)
    assert len(attempts) == 3 and {a["status"] for a in attempts} == {"ok"}
    files = sorted((tmp_path / "kb" / "fleet").glob("*.json"))
    assert len(files) == 3, "three nodes on one host get a file each"
    for path in files:
        node = json.loads(path.read_text())
        assert node["engine"] == "ray" and node["report"]["results"][0]["id"] == "system"
    shown = subprocess.run(
        [sys.executable, "-m", "kbgen", "fleet", "show", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=True,
    )
    assert [n["drift"] for n in json.loads(shown.stdout)["nodes"]] == [[], [], []]


def test_ray_ship_runs_the_probes_in_each_nodes_own_python(tmp_path: Path, cluster: str) -> None:
    write_tree(tmp_path, base_kb_files())
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kbgen",
            "fleet",
            "probe",
            "--ray",
            cluster,
            "--ship",
            "--json",
            "--timeout",
            "240",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert {a["status"] for a in json.loads(done.stdout)} == {"ok"}
    for path in (tmp_path / "kb" / "fleet").glob("*.json"):
        results = {r["id"]: r["status"] for r in json.loads(path.read_text())["report"]["results"]}
        assert results["system"] == "pass" and "torch-build" in results
