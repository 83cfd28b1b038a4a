"""Verdicts on three CUDA pairs that break: GPU vs arch list, runtime vs driver, toolkit vs runtime.

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

RANK = {"pass": 0, "skip": 0, "warn": 1, "fail": 2}


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


def arch_verdict(cap, archs):
    """Can a GPU of capability ``cap`` (major, minor) run kernels from ``archs`` (sm_XY / compute_XY)?"""
    name = f"sm_{cap[0]}{cap[1]}"
    sms = {(int(a[3:-1]), int(a[-1])) for a in archs if re.fullmatch(r"sm_\d+", a)}
    ptx = {(int(a[8:-1]), int(a[-1])) for a in archs if re.fullmatch(r"compute_\d+", a)}
    if cap in sms:
        return "pass", f"{name} is in the arch list"
    # a cubin runs on later GPUs of the same major version
    same_major = sorted(s for s in sms if s[0] == cap[0] and s[1] <= cap[1])
    if same_major:
        return (
            "pass",
            f"{name} runs the sm_{same_major[-1][0]}{same_major[-1][1]} kernels (same major version)",
        )
    older_ptx = sorted(p for p in ptx if p <= cap)
    if older_ptx:
        return "warn", (
            f"{name} is not compiled in; kernels are JIT-compiled from compute_"
            f"{older_ptx[-1][0]}{older_ptx[-1][1]} PTX (slow first run)"
        )
    return "fail", (
        f"{name} is not in this torch's arch list ({' '.join(archs) or 'empty'}): expect "
        "'no kernel image is available for execution on the device'; install a build that "
        "includes it"
    )


def runtime_verdict(runtime, driver):
    r, d = _version(runtime), _version(driver)
    if r[0] > d[0]:
        return "fail", (
            f"torch's CUDA runtime {runtime} needs a newer driver: this driver supports CUDA up to "
            f"{driver}; update the driver or install a torch built for CUDA {d[0]}.x"
        )
    if r > d:
        return "warn", (
            f"torch's CUDA runtime {runtime} is newer than the driver's CUDA {driver}: it runs via "
            "minor-version compatibility, but PTX JIT fails; update the driver if kernels fail"
        )
    return "pass", f"driver supports CUDA {driver} >= torch's runtime {runtime}"


def toolkit_verdict(toolkit, runtime):
    if _version(toolkit)[0] != _version(runtime)[0]:
        return "warn", (
            f"nvcc toolkit {toolkit} and torch's CUDA runtime {runtime} differ in major version: "
            "building CUDA extensions against this torch will fail; running torch is unaffected"
        )
    return "pass", f"nvcc toolkit {toolkit} matches torch's runtime {runtime} in major version"


def run():
    side, error = _torch_side()
    driver = _driver_cuda()
    toolkit, nvcc = _toolkit()
    facts = {"runtime": side and side["runtime"], "driver_cuda": driver, "toolkit": toolkit, "nvcc": nvcc}
    verdicts = []
    if side is None:
        return {
            "status": "skip",
            "message": f"torch is not importable ({error}); nothing to compare",
            "facts": facts,
        }
    runtime = side["runtime"]
    if not runtime:
        if driver and not side["hip"]:
            verdicts.append(
                (
                    "fail",
                    f"torch is a CPU-only build but an NVIDIA driver (CUDA {driver}) is "
                    "present: install a CUDA build of torch",
                )
            )
        facts["arch_ok"] = facts["driver_ok"] = facts["toolkit_ok"] = None
    else:
        facts["arch_list"] = " ".join(side["archs"])
        for index, cap in enumerate(side["caps"]):
            verdicts.append(arch_verdict(tuple(cap), side["archs"]))
            facts[f"arch_ok.{index}" if index else "arch_ok"] = verdicts[-1][0] != "fail"
        if driver:
            verdicts.append(runtime_verdict(runtime, driver))
            facts["driver_ok"] = verdicts[-1][0] != "fail"
        if toolkit:
            verdicts.append(toolkit_verdict(toolkit, runtime))
            facts["toolkit_ok"] = verdicts[-1][0] == "pass"
    if error:
        verdicts.append(("warn", f"torch could not list its devices: {error}"))
    if not verdicts:
        what = "CPU-only torch and no NVIDIA driver" if not runtime else "no driver and no toolkit found"
        return {"status": "skip", "message": f"nothing to compare ({what})", "facts": facts}
    worst = max(verdicts, key=lambda v: RANK[v[0]])[0]
    return {"status": worst, "message": "; ".join(text for _, text in verdicts), "facts": facts}
