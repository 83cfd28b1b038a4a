"""What it takes to get a stack from a native crash here: faulthandler switched on for Python runs,
gdb, compute-sanitizer and cuda-gdb installed, core files allowed by the shell's limit and where the
kernel writes them."""

PROBE = {
    "id": "crash-tools",
    "title": "Native crash tooling",
    "description": "PYTHONFAULTHANDLER, TORCH_SHOW_CPP_STACKTRACES, whether gdb, compute-sanitizer and "
    "cuda-gdb are on PATH or under CUDA_HOME, the core file size limit and /proc/sys/kernel/core_pattern.",
    "needs": [],
    "timeout": 10,
    "default": False,
}

import os
import shutil

TOOLS = ("gdb", "compute-sanitizer", "cuda-gdb")


def _tool(name):
    found = shutil.which(name)
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if found is None and home and os.path.isfile(os.path.join(home, "bin", name)):
        found = os.path.join(home, "bin", name)
    return found


def _core_limit():
    """The soft core-file size limit: 'unlimited', a number of bytes, or None where unknown."""
    try:
        import resource
    except ImportError:  # Windows
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_CORE)
    return "unlimited" if soft == resource.RLIM_INFINITY else soft


def _core_pattern():
    try:
        with open("/proc/sys/kernel/core_pattern", encoding="utf-8", errors="replace") as handle:
            return handle.read(512).strip() or None
    except OSError:
        return None


def run():
    facts = {name: _tool(name) for name in TOOLS}
    facts["faulthandler"] = os.environ.get("PYTHONFAULTHANDLER", "") not in ("", "0")
    facts["TORCH_SHOW_CPP_STACKTRACES"] = os.environ.get("TORCH_SHOW_CPP_STACKTRACES")
    facts["core_limit"] = _core_limit()
    facts["core_pattern"] = _core_pattern()
    missing = [t for t in TOOLS if not facts[t]]
    parts = [
        "faulthandler on" if facts["faulthandler"] else "PYTHONFAULTHANDLER not set (python -X faulthandler)"
    ]
    parts.append("core files " + ("off (ulimit -c 0)" if facts["core_limit"] == 0 else "allowed"))
    parts.append(("missing: " + ", ".join(missing)) if missing else "gdb, compute-sanitizer, cuda-gdb found")
    status = "warn" if not facts["gdb"] else "pass"
    return {"status": status, "message": "; ".join(parts), "facts": facts}
