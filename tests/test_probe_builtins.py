"""The built-in probes' verdicts, and the real probes on this machine (and on a GPU where there is one)."""

from __future__ import annotations

import importlib.metadata
import json
import runpy
from pathlib import Path
from typing import Any

import pytest

from conftest import invoke
from kbgen.judge import Verdict, judge
from kbgen.probes.discovery import BUILTIN_DIR
from probes_fixtures import DEFAULT_PROBES


def builtin(name: str) -> dict[str, Any]:
    """A built-in probe file's functions, loaded the way a worker loads it (without running it)."""
    return runpy.run_path(str(BUILTIN_DIR / f"{name}.py"))


@pytest.mark.parametrize(
    ("kernel", "expected"),
    [
        ("6.6.87.2-microsoft-standard-WSL2", "WSL2"),  # the kernel of BUG-20251109-002
        ("5.15.153.1-microsoft-standard-WSL2+", "WSL2"),
        ("4.4.0-19041-Microsoft", "WSL1"),
        ("6.18.44-fc-v445", "no"),
        ("6.8.0-45-generic", "no"),
    ],
)
def test_wsl_is_told_from_the_kernel_string(kernel: str, expected: str) -> None:
    assert builtin("system")["_wsl"](kernel) == expected


@pytest.mark.parametrize(
    ("capability", "archs", "status", "words"),
    [
        ("8.6", "sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90", "pass", "sm_86 is in the arch list"),
        ("8.6", "sm_75 sm_80", "pass", "runs the sm_80 kernels"),
        ("8.9", "sm_80 sm_86", "pass", "runs the sm_86 kernels"),
        ("12.0", "sm_80 sm_90 compute_90", "warn", "JIT-compiled from compute_90 PTX"),
        ("12.0", "sm_50 sm_80 sm_90", "fail", "no kernel image is available"),
        ("7.5", "sm_80 sm_90", "fail", "install a build whose arch list has sm_75"),
    ],
)
def test_gpu_capability_against_arch_list(capability, archs, status, words) -> None:
    facts = {"gpu.capability": capability, "torch-build.arch_list": archs, "torch-build.cuda": "12.8"}
    verdict = next(v for v in judge(facts) if v.check == "gpu-arch")
    assert verdict.status == status
    assert words in verdict.message


@pytest.mark.parametrize(
    ("runtime", "driver", "status", "words"),
    [
        ("12.8", "13.0", "pass", "the driver supports CUDA 13.0 >= torch's CUDA 12.8"),  # the seed's setup
        ("12.8", "12.8", "pass", "driver supports"),
        ("12.8", "12.2", "warn", "minor-version compatibility"),
        ("13.0", "12.8", "fail", "needs a newer driver"),
        ("11.8", "10.2", "fail", "install a torch built for CUDA 10.x"),
    ],
)
def test_torch_runtime_against_driver(runtime: str, driver: str, status: str, words: str) -> None:
    verdict = next(
        v
        for v in judge({"torch-build.cuda": runtime, "gpu.driver_cuda": driver})
        if v.check == "driver-runtime"
    )
    assert verdict.status == status
    assert words in verdict.message


def test_toolkit_against_runtime_names_each_side() -> None:
    def toolkit(nvcc: str, runtime: str) -> Verdict:
        facts = {"toolkit.nvcc": nvcc, "torch-build.cuda": runtime}
        return next(v for v in judge(facts) if v.check == "toolkit-runtime")

    assert toolkit("13.0", "12.8").status == "warn"
    assert toolkit("13.0", "12.8").message.startswith(
        "nvcc 13.0 and torch's CUDA 12.8 differ in major version"
    )
    assert toolkit("12.4", "12.8").status == "pass"


def test_real_default_probes_on_this_machine(kb_project: Path) -> None:
    pytest.importorskip("torch")
    result = invoke("probe", "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["schema_version"] == 1
    assert report["torch_import"]["status"] == "ok"
    results = {r["id"]: r for r in report["results"]}
    assert list(results) == list(DEFAULT_PROBES)
    assert all(r["status"] in ("pass", "warn", "skip") for r in results.values()), results
    import torch

    assert results["torch-build"]["facts"]["version"] == torch.__version__
    assert results["cpu"]["facts"]["capability"] == torch.backends.cpu.get_cpu_capability()
    # what pip sees: a build's own version string can carry a local tag its metadata lacks (on an
    # H100 machine torch.__version__ was 2.11.0+cu130 while its distribution said 2.11.0)
    assert results["packages"]["facts"]["torch"] == importlib.metadata.version("torch")
    if not torch.cuda.is_available():
        assert results["cuda-smoke"]["status"] == "skip"
        assert results["cuda-smoke"]["message"].startswith("needs CUDA, which is not available to torch")


@pytest.mark.gpu
def test_gpu_probes_on_a_cuda_machine(kb_project: Path) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    shipped = Path(__file__).resolve().parents[1] / "kb" / "probes" / "bce-loss-repro.py"  # the shipped repro
    (kb_project / "kb" / "probes" / shipped.name).write_text(shipped.read_text())
    result = invoke("probe", "--json", "gpu", "compat", "cuda-smoke", "bce-loss-repro")
    assert result.exit_code == 0, result.stderr
    results = {r["id"]: r for r in json.loads(result.stdout)["results"]}
    gpu = results["gpu"]["facts"]
    assert results["gpu"]["status"] in ("pass", "warn")
    assert gpu["count"] >= 1
    assert gpu["name"] == torch.cuda.get_device_name(0)
    major, minor = torch.cuda.get_device_capability(0)
    assert gpu["capability"] == f"{major}.{minor}"
    assert gpu["driver_cuda"] is not None
    assert results["compat"]["status"] in ("pass", "warn")
    assert results["compat"]["facts"]["arch_ok"] is True
    assert results["cuda-smoke"]["status"] == "pass", results["cuda-smoke"]
    assert results["cuda-smoke"]["facts"]["steps_passed"] == 6
    assert results["bce-loss-repro"]["status"] == "pass", results["bce-loss-repro"]


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("APPTAINER_CONTAINER", "/scratch/images/pytorch-24.01.sif", "pytorch-24.01.sif"),
        ("SINGULARITY_CONTAINER", "/opt/train.sif", "train.sif"),
        ("NVIDIA_PYTORCH_VERSION", "24.01", "nvcr.io/nvidia/pytorch:24.01"),
        ("KBGEN_CONTAINER_IMAGE", "registry.example/train:7", "registry.example/train:7"),
    ],
)
def test_the_container_image_is_named_where_the_runtime_says_it(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, expected: str
) -> None:
    for name in (
        "APPTAINER_CONTAINER",
        "SINGULARITY_CONTAINER",
        "NVIDIA_PYTORCH_VERSION",
        "KBGEN_CONTAINER_IMAGE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, value)
    assert builtin("system")["_container_image"]() == expected
