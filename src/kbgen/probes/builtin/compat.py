"""Facts for the verdicts on three CUDA pairs that break: GPU vs arch list, runtime vs driver,
toolkit vs runtime. The probe only collects them: kbgen.judge gives the verdicts when kbgen builds
the report (kbgen.probes.judged), the same judge that reads pasted reports (`kbgen env`).

Words used precisely: the *driver* is the kernel driver (nvidia-smi's "CUDA Version" is the newest CUDA
it supports); the *runtime* is the CUDA version torch was built with and ships (torch.version.cuda);
the *toolkit* is nvcc and friends, needed only to compile CUDA code such as extensions.
"""

PROBE = {
    "id": "compat",
    "title": "CUDA compatibility verdicts",
    "description": "GPU compute capability vs the arch list torch was compiled for; torch's CUDA runtime "
    "vs the newest CUDA the driver supports; the nvcc toolkit vs torch's CUDA runtime (matters when "
    "building extensions); a CPU-only torch on a machine with an NVIDIA driver.",
    "needs": ["torch?"],
    "timeout": 30,
    "default": True,
}

import ctypes
import os
import re
import shutil
import subprocess


def _version(text):
    match = re.match(r"(\d+)\.(\d+)", text or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def _driver_cuda():
    for name in ("libcuda.so.1", "libcuda.so", "/usr/lib/wsl/lib/libcuda.so.1", "nvcuda.dll"):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        value = ctypes.c_int(0)
        if lib.cuDriverGetVersion(ctypes.byref(value)) == 0 and value.value:
            return f"{value.value // 1000}.{value.value % 1000 // 10}"
    return None


def _toolkit():
    """(nvcc version, path) from CUDA_HOME/bin or PATH."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    candidates = [os.path.join(home, "bin", "nvcc")] if home else []
    found = shutil.which("nvcc")
    candidates += [found] if found else []
    for path in candidates:
        if not os.path.isfile(path):
            continue
        try:
            done = subprocess.run(
                [path, "--version"], capture_output=True, text=True, timeout=10, check=False
            )
        except (OSError, subprocess.SubprocessError):
            continue
        match = re.search(r"release (\d+\.\d+)", done.stdout)
        if match:
            return match.group(1), path
    return None, None


def _torch_side():
    try:
        import torch
    except ImportError as exc:
        return None, str(exc)
    info = {
        "runtime": torch.version.cuda,
        "hip": getattr(torch.version, "hip", None),
        "archs": [],
        "caps": [],
    }
    if info["runtime"]:
        try:
            info["archs"] = list(torch.cuda.get_arch_list())
            if torch.cuda.is_available():
                info["caps"] = [torch.cuda.get_device_capability(i) for i in range(torch.cuda.device_count())]
        except Exception as exc:
            return info, f"{type(exc).__name__}: {exc}"
    return info, None


def run():
    """Collect the facts; kbgen judges them (kbgen.judge) when it builds the report, here or shipped."""
    side, error = _torch_side()
    toolkit, nvcc = _toolkit()
    facts = {"driver_cuda": _driver_cuda(), "toolkit": toolkit, "nvcc": nvcc, "runtime": None}
    if side is None:
        return {
            "status": "skip",
            "message": f"torch is not importable ({error}); nothing to compare",
            "facts": facts,
        }
    caps = [f"{major}.{minor}" for major, minor in side["caps"]]
    facts.update(
        runtime=side["runtime"],
        hip=side["hip"],
        arch_list=" ".join(side["archs"]),
        capability=caps[0] if caps else None,
        capabilities=" ".join(caps) or None,
        error=error,
    )
    return {"status": "pass", "message": "facts collected", "facts": facts}
