"""kbgen fleet probe --ray: a real three-node Ray cluster on this machine (ray.cluster_utils)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import PATIENCE, base_kb_files, write_tree
from fleet_fixtures import SRC, kbgen

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'kbgen[ray]')")
pytestmark = pytest.mark.slow


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


def probe_fleet(root: Path, cluster: str, *extra: str) -> list[dict]:
    """`kbgen fleet probe --ray` in a fresh project; every node must answer."""
    write_tree(root, base_kb_files())
    done = kbgen(root, "fleet", "probe", "--ray", cluster, "--json", "--timeout", "240", *extra)
    assert done.returncode == 0, done.stderr[-2000:]
    attempts: list[dict] = json.loads(done.stdout)
    assert len(attempts) == 3 and {a["status"] for a in attempts} == {"ok"}
    return attempts


def test_ray_probes_each_alive_node_once(tmp_path: Path, cluster: str) -> None:
    probe_fleet(tmp_path, cluster, "--command", f"{sys.executable} -m kbgen probe --json system")
    files = sorted((tmp_path / "kb" / "fleet").glob("*.json"))
    assert len(files) == 3, "three nodes on one host get a file each"
    for path in files:
        node = json.loads(path.read_text())
        assert node["engine"] == "ray" and node["report"]["results"][0]["id"] == "system"
    shown = kbgen(tmp_path, "fleet", "show", "--json", timeout=PATIENCE)
    assert [n["drift"] for n in json.loads(shown.stdout)["nodes"]] == [[], [], []]


def test_ray_ship_runs_the_probes_in_each_nodes_own_python(tmp_path: Path, cluster: str) -> None:
    probe_fleet(tmp_path, cluster, "--ship")
    for path in (tmp_path / "kb" / "fleet").glob("*.json"):
        results = {r["id"]: r["status"] for r in json.loads(path.read_text())["report"]["results"]}
        assert results["system"] == "pass" and "torch-build" in results
