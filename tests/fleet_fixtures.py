"""Probe reports as nodes of a fleet would send them, for the fleet tests and benchmark."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

GPU_FACTS: dict[str, Any] = {
    "cuda_available": True,
    "count": 8,
    "driver": "550.54.15",
    "driver_cuda": "12.4",
    "name": "NVIDIA H100 80GB HBM3",
    "capability": "9.0",
    "ecc_uncorrected": 0,
}
TORCH_FACTS: dict[str, Any] = {
    "version": "2.5.1+cu124",
    "cuda": "12.4",
    "cudnn": 90100,
    "cpu_only": False,
    "arch_list": "sm_80 sm_90",
}


def report(host: str, *, when: str = "2026-11-20T10:00:00+00:00", **overrides: dict[str, Any]) -> dict:
    """A `kbgen probe --json` report; ``overrides`` maps a probe id to facts replacing the defaults."""
    facts = {
        "system": {"os": "Ubuntu 22.04.4 LTS", "kernel": "5.15.0-105-generic", "container": "none"},
        "gpu": dict(GPU_FACTS),
        "torch-build": dict(TORCH_FACTS),
        "compat": {"arch_ok": True},
        "packages": {"torch": "2.5.1+cu124", "nvidia-nccl-cu12": "2.21.5"},
    }
    for probe, changes in overrides.items():
        facts[probe.replace("_", "-")] = {**facts.get(probe.replace("_", "-"), {}), **changes}
    return {
        "schema_version": 1,
        "kbgen_version": "0.1.0",
        "collected_at": when,
        "host": host,
        "python": {"executable": "/usr/bin/python3", "version": "3.11.7"},
        "results": [
            {"id": probe, "status": "pass", "message": "", "facts": values} for probe, values in facts.items()
        ],
    }


def dumps(data: dict) -> str:
    return json.dumps(data, indent=2)


SRC = Path(__file__).resolve().parents[1] / "src"
#: an interpreter without kbgen (and without torch), standing for a bare node
BARE_PYTHON = "/usr/bin/python3"


def kbgen(
    root: Path, *args: str, env: dict[str, str] | None = None, timeout: int = 300
) -> CompletedProcess[str]:
    """``kbgen ARGS`` run as a user runs it, in ``root``, with this checkout's kbgen."""
    import conftest  # here, not at the top: the fleet benchmark imports this module without pytest

    return conftest.kbgen(*args, cwd=root, env={**(env or {}), "PYTHONPATH": str(SRC)}, timeout=timeout)


def node_file(root: Path, node: str) -> dict:
    """What kb/fleet/ holds for ``node``."""
    return json.loads((root / "kb" / "fleet" / f"{node}.json").read_text())


def bare_python() -> str:
    """BARE_PYTHON, or skip the test where it is missing or can import kbgen."""
    import pytest

    found = Path(BARE_PYTHON).exists()
    if not found or subprocess.run([BARE_PYTHON, "-c", "import kbgen"], capture_output=True).returncode == 0:
        pytest.skip(f"needs {BARE_PYTHON} without kbgen, to stand for a bare node")
    return BARE_PYTHON
