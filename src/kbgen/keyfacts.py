"""The facts a bug keeps about each machine it was probed on; the full report lies beside it."""

from __future__ import annotations

#: the facts a bug keeps in its frontmatter, per machine: (label, ``<probe>.<fact>``). The full
#: probe report lies beside the bug as JSON.
KEY_FACTS: list[tuple[str, str]] = [
    ("OS", "system.os"),
    ("WSL", "system.wsl"),
    ("Kernel", "system.kernel"),
    ("Container", "system.container"),
    ("Python", "system.python"),
    ("GPU", "gpu.name"),
    ("Compute capability", "gpu.capability"),
    ("GPU memory (MB)", "gpu.memory_total_mb"),
    ("Driver", "gpu.driver"),
    ("CUDA supported by the driver", "gpu.driver_cuda"),
    ("PyTorch", "torch-build.version"),
    ("CUDA of the torch build", "torch-build.cuda"),
    ("cuDNN", "torch-build.cudnn"),
    ("CUDA available to torch", "torch-build.cuda_available"),
    ("CPU", "cpu.model"),
    ("CPU instruction sets torch uses", "cpu.capability"),
    ("CPU flags verdict", "cpu.verdict"),
]
KEY_FACT_KEYS = frozenset(key for _, key in KEY_FACTS)
