"""The environment variables and tools that change how CUDA errors show up and can be debugged."""

PROBE = {
    "id": "debug-env",
    "title": "Debug settings and tools",
    "description": "CUDA_LAUNCH_BLOCKING, TORCH_USE_CUDA_DSA, PYTORCH_CUDA_ALLOC_CONF, CUDA_VISIBLE_DEVICES, "
    "CUDA_HOME and every NCCL_* variable (secret-looking values redacted), and whether nvcc, "
    "compute-sanitizer and cuda-gdb are on PATH or under CUDA_HOME.",
    "needs": [],
    "timeout": 10,
    "default": True,
}

import os
import shutil

NAMES = (
    "CUDA_LAUNCH_BLOCKING",
    "TORCH_USE_CUDA_DSA",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_ALLOC_CONF",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "CUDA_MODULE_LOADING",
    "CUDA_HOME",
    "CUDA_PATH",
    "TORCH_SHOW_CPP_STACKTRACES",
    "TORCH_CUDA_ARCH_LIST",
    "ATEN_CPU_CAPABILITY",
    "OMP_NUM_THREADS",
    "LD_LIBRARY_PATH",
)
TOOLS = ("nvcc", "compute-sanitizer", "cuda-gdb")
# reported even when unset (as null), so a report says "not set" rather than nothing
ALWAYS = (
    "CUDA_LAUNCH_BLOCKING",
    "TORCH_USE_CUDA_DSA",
    "PYTORCH_CUDA_ALLOC_CONF",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_HOME",
)


def _tool(name):
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    found = shutil.which(name)
    if found is None and home and os.path.isfile(os.path.join(home, "bin", name)):
        found = os.path.join(home, "bin", name)
    return found


def run():
    facts = {}
    for name in sorted(set(NAMES) | {n for n in os.environ if n.startswith("NCCL_")}):
        value = os.environ.get(name)
        if value is not None or name in ALWAYS:
            facts[name] = value
    for tool in TOOLS:
        facts[tool] = _tool(tool)
    set_flags = [
        n for n in ("CUDA_LAUNCH_BLOCKING", "TORCH_USE_CUDA_DSA") if os.environ.get(n) not in (None, "", "0")
    ]
    missing = [t for t in TOOLS if not facts[t]]
    parts = [("set: " + ", ".join(set_flags)) if set_flags else "no CUDA debug flags set"]
    if "NCCL_DEBUG" in facts:
        parts.append(f"NCCL_DEBUG={facts['NCCL_DEBUG']}")
    parts.append(
        ("missing tools: " + ", ".join(missing)) if missing else "nvcc, compute-sanitizer, cuda-gdb found"
    )
    return {"status": "pass", "message": "; ".join(parts), "facts": facts}
