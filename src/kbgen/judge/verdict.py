"""What every check of :mod:`kbgen.judge` returns, the cause ids they indict, and how a list of
verdicts is read (the worst status, the causes indicted, the causes cleared)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

Scalar = str | int | float | bool | None
RANK = {"fail": 0, "warn": 1, "unknown": 2, "pass": 3}

ARCH = "arch-list-missing-gpu-capability"
DRIVER_OLD = "torch-cuda-newer-than-driver"
CPU_BUILD = "cpu-only-torch-build"
NO_DRIVER = "driver-missing-or-broken"
LIBS = "library-version-mismatch"
WSL = "wsl-driver-library-mismatch"
CPU_ISA = "cpu-lacks-wheel-instruction-set"
VM_CPU = "vm-cpu-model-hides-features"
HOST_COMPILER = "host-compiler-unsupported-by-nvcc"
TOOLKIT = "cuda-toolkit-missing-or-mismatched"


@dataclass(frozen=True)
class Verdict:
    check: str
    status: str
    cause: str | None
    message: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def text_of(value: Scalar) -> str | None:
    """A fact as text; None for a missing or empty one."""
    return None if value is None or value == "" else str(value)


def worst(verdicts: list[Verdict]) -> str:
    return min((v.status for v in verdicts), key=RANK.__getitem__, default="unknown")


def indicted(verdicts: list[Verdict]) -> list[tuple[str, str]]:
    """``(cause, status)`` for the causes failing or warning checks indict, worst first."""
    seen: dict[str, str] = {}
    for verdict in sorted(verdicts, key=lambda v: RANK[v.status]):
        if verdict.cause and verdict.status in ("fail", "warn") and verdict.cause not in seen:
            seen[verdict.cause] = verdict.status
    return list(seen.items())


def cleared(verdicts: list[Verdict]) -> set[str]:
    """Causes a passing check rules out."""
    return {v.cause for v in verdicts if v.status == "pass" and v.cause}
