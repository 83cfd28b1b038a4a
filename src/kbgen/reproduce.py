"""Can the machine a fill ran on reproduce the bug's error at all?

A CUDA error (an illegal memory access, a device-side assert, a cuDNN failure...) happens only
where torch drives a CUDA GPU. Probes run on a laptop with a CPU-only build of torch, or on a
machine whose torch sees no GPU, describe a machine that cannot show the error: its facts are
kept, but marked so, and the bug goes on asking for a GPU machine's facts with a checklist step
that the ``torch-build`` probe ticks on the first fill where torch sees a CUDA device.

An error type needs CUDA when it carries one of :data:`CUDA_TAGS`; ``cuda-not-available`` (tagged
``install``, ``driver``) does not: a machine without CUDA is exactly where it happens.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbgen.models import ProgressStep, StepState

if TYPE_CHECKING:
    from kbgen.models import Bug
    from kbgen.probes.report import ProbeReport
    from kbgen.store import Kb

#: tags of the error types that happen only on a machine whose torch drives a CUDA GPU
CUDA_TAGS = frozenset({"cuda", "cublas", "cudnn", "nccl", "ecc", "xid", "device"})
#: the checklist step that asks for a GPU machine's facts
STEP_ID = "fill-on-a-gpu-machine"
STEP_CHECK = "torch-build: cuda_available == true"


def cuda_error(kb: Kb, bug: Bug) -> str | None:
    """The bug's error type when it needs a CUDA GPU to happen, else None."""
    entry = kb.errors.get(bug.error) if bug.error else None
    if entry is None or not CUDA_TAGS & set(entry.record.tags):
        return None
    return bug.error


def why_not(report: ProbeReport) -> str | None:
    """Why torch on the probed machine cannot run CUDA (a CPU-only build, no device), or None."""
    facts = report.facts()
    if facts.get("torch-build.cuda_available") is True or facts.get("gpu.cuda_available") is True:
        return None
    version = facts.get("torch-build.version")
    if version is None:
        return "torch does not import in this Python"
    if facts.get("torch-build.cpu_only") is True:
        return f"torch {version} is a CPU-only build (no CUDA)"
    return f"torch {version} sees no CUDA device"


def cannot_reproduce(error: str | None, report: ProbeReport) -> str | None:
    """What the bug records of a machine that cannot show its CUDA ``error``; None when it can."""
    why = why_not(report) if error else None
    return f"cannot reproduce {error}, a CUDA error: {why}" if why else None


def gpu_step() -> ProgressStep:
    """The step a fill on a machine without CUDA adds: filled when a GPU machine's probes run."""
    return ProgressStep(
        id=STEP_ID,
        title="Fill from a machine where torch sees a CUDA GPU: the machines probed so far cannot "
        "reproduce this CUDA error",
        probe="torch-build",
        decided_by=STEP_CHECK,
        state=StepState.pending,
    )
