"""The peer-access probe: on this machine through the CLI, and its verdict for GPU pairs that refuse."""

from __future__ import annotations

import json
import runpy
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from conftest import invoke
from kbgen.probes.discovery import BUILTIN_DIR


def _iommu_groups() -> int:
    folder = Path("/sys/kernel/iommu_groups")
    return sum(1 for _ in folder.iterdir()) if folder.is_dir() else 0


def test_on_this_machine_it_reports_the_iommu_and_skips_without_two_gpus(
    kb_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("NCCL_P2P_DISABLE", "1")
    monkeypatch.delenv("NCCL_P2P_LEVEL", raising=False)
    result = invoke("probe", "--json", "peer-access")
    assert result.exit_code == 0, result.stderr
    (probe,) = json.loads(result.stdout)["results"]
    facts = probe["facts"]
    assert facts["NCCL_P2P_DISABLE"] == "1"
    assert facts.get("NCCL_P2P_LEVEL") is None
    assert facts["iommu_groups"] == _iommu_groups()
    visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
    assert facts["gpus"] == visible
    if visible < 2:
        assert probe["status"] == "skip"
        expected = "CUDA is not available to torch" if visible == 0 else "1 visible GPU: no pair to check"
        assert probe["message"].startswith(expected), probe["message"]
    else:
        assert probe["status"] in ("pass", "fail")
        assert facts["pairs"] == visible * (visible - 1)


def _fake_torch(gpus: int, allowed: set[tuple[int, int]]) -> types.ModuleType:
    cuda = types.SimpleNamespace(
        is_available=lambda: True,
        device_count=lambda: gpus,
        can_device_access_peer=lambda a, b: (a, b) in allowed,
    )
    fake = types.ModuleType("torch")
    fake.__dict__.update(cuda=cuda, version=types.SimpleNamespace(cuda="12.8"), __version__="2.9.0")
    return fake


def _run(monkeypatch: pytest.MonkeyPatch, fake: types.ModuleType) -> dict[str, Any]:
    monkeypatch.setitem(sys.modules, "torch", fake)
    result: dict[str, Any] = runpy.run_path(str(BUILTIN_DIR / "peer_access.py"))["run"]()
    return result


def test_pairs_that_refuse_peer_access_fail_the_probe_and_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    # four GPUs on two PCIe switches: 0<->1 and 2<->3 reach each other, no other pair does
    allowed = {(0, 1), (1, 0), (2, 3), (3, 2)}
    result = _run(monkeypatch, _fake_torch(4, allowed))
    assert result["status"] == "fail"
    assert (result["facts"]["pairs"], result["facts"]["pairs_without_peer"]) == (12, 8)
    assert (
        result["message"]
        == "8 of 12 GPU pairs refuse peer access: 0->2, 0->3, 1->2, 1->3, 2->0, 2->1, 3->0, 3->1"
    )


def test_a_full_mesh_passes_and_a_long_list_is_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    full = {(a, b) for a in range(8) for b in range(8) if a != b}
    assert _run(monkeypatch, _fake_torch(8, full))["message"] == "all 56 GPU pairs allow peer access"
    none = _run(monkeypatch, _fake_torch(10, set()))
    assert none["status"] == "fail"
    shown = ", ".join(f"0->{b}" for b in range(1, 9))
    assert none["message"] == f"90 of 90 GPU pairs refuse peer access: {shown} and 82 more"
