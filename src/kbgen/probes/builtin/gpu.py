"""The GPUs and the driver: what NVML (or nvidia-smi) and torch see."""

PROBE = {
    "id": "gpu",
    "title": "GPU and driver",
    "description": "Whether CUDA is available to torch, device count, names, compute capability, memory, "
    "the driver version and the newest CUDA version that driver supports (NVML via nvidia-ml-py when "
    "importable, else nvidia-smi), CUDA_VISIBLE_DEVICES, and ECC error counts where the GPU has ECC.",
    "needs": ["torch?"],
    "timeout": 30,
    "default": True,
}

import ctypes
import os
import shutil
import subprocess

SMI_FIELDS = "index,name,compute_cap,memory.total,driver_version,ecc.errors.uncorrected.volatile.total"


def driver_cuda_version():
    """The newest CUDA version the installed driver supports ("13.0"), from libcuda; None without one."""
    for name in ("libcuda.so.1", "libcuda.so", "/usr/lib/wsl/lib/libcuda.so.1", "nvcuda.dll"):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        version = ctypes.c_int(0)
        if lib.cuDriverGetVersion(ctypes.byref(version)) == 0 and version.value:
            return f"{version.value // 1000}.{version.value % 1000 // 10}"
    return None


def _from_nvml():
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # NVML present but the driver is not loaded
        return {"error": f"NVML: {exc}"}
    try:
        driver = pynvml.nvmlSystemGetDriverVersion()
        devices = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
            try:
                ecc = pynvml.nvmlDeviceGetTotalEccErrors(
                    handle, pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, pynvml.NVML_VOLATILE_ECC
                )
            except Exception:  # consumer GPUs have no ECC
                ecc = None
            name = pynvml.nvmlDeviceGetName(handle)
            devices.append(
                {
                    "name": name.decode() if isinstance(name, bytes) else name,
                    "capability": f"{major}.{minor}",
                    "memory_mb": pynvml.nvmlDeviceGetMemoryInfo(handle).total // (1024 * 1024),
                    "ecc": ecc,
                }
            )
        cuda = pynvml.nvmlSystemGetCudaDriverVersion()
        return {
            "source": "nvml",
            "driver": driver.decode() if isinstance(driver, bytes) else driver,
            "driver_cuda": f"{cuda // 1000}.{cuda % 1000 // 10}",
            "devices": devices,
        }
    finally:
        pynvml.nvmlShutdown()


def _number(text):
    try:
        return int(float(text))
    except ValueError:
        return None


def _from_smi():
    path = shutil.which("nvidia-smi")
    if path is None:
        return None
    try:
        done = subprocess.run(
            [path, f"--query-gpu={SMI_FIELDS}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=15,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"error": "nvidia-smi did not answer within 15 s (a hung driver?)"}
    except OSError as exc:
        return {"error": f"nvidia-smi: {exc}"}
    if done.returncode != 0:
        return {"error": f"nvidia-smi failed: {(done.stdout + done.stderr).strip()[:300]}"}
    devices, driver = [], None
    for line in done.stdout.strip().splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) < 6:
            continue
        driver = cells[4]
        devices.append(
            {
                "name": cells[1],
                "capability": cells[2],
                "memory_mb": _number(cells[3]),
                "ecc": _number(cells[5]),
            }
        )
    return {
        "source": "nvidia-smi",
        "driver": driver,
        "driver_cuda": driver_cuda_version(),
        "devices": devices,
    }


def _from_torch():
    try:
        import torch
    except ImportError as exc:
        return {"missing": str(exc) or "torch is not importable"}
    try:
        if not torch.cuda.is_available():
            return {"available": False, "devices": []}
        devices = []
        for index in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(index)
            devices.append(
                {
                    "name": props.name,
                    "capability": f"{props.major}.{props.minor}",
                    "memory_mb": props.total_memory // (1024 * 1024),
                    "ecc": None,
                }
            )
        return {"available": True, "devices": devices}
    except Exception as exc:
        return {"available": False, "devices": [], "error": f"{type(exc).__name__}: {exc}"}


def _facts(driver, seen, devices):
    facts = {
        "cuda_available": seen.get("available", False),
        "count": len(devices),
        "torch_count": len(seen.get("devices") or []),
        "visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "driver": driver.get("driver"),
        "driver_cuda": driver.get("driver_cuda"),
        "source": driver.get("source") or ("torch" if devices else None),
    }
    for index, device in enumerate(devices):
        prefix = "" if index == 0 else f"{index}."
        facts[prefix + "name"] = device["name"]
        facts[prefix + "capability"] = device["capability"]
        facts[prefix + "memory_total_mb"] = device["memory_mb"]
        if device.get("ecc") is not None:
            facts[prefix + "ecc_uncorrected"] = device["ecc"]
    return facts


def _verdict(facts, driver, seen, devices):
    if not devices and not facts["driver"] and not facts["driver_cuda"]:
        why = driver.get("error") or "no NVML, no nvidia-smi, no libcuda"
        if seen.get("missing"):
            why += f"; torch not importable ({seen['missing']})"
        else:
            why += "; " + (seen.get("error") or "torch sees no CUDA device")
        return "skip", f"no NVIDIA GPU or driver found ({why})"
    names = "; ".join(
        f"{d['name']} (sm_{d['capability'].replace('.', '')}, {d['memory_mb']} MB)" for d in devices
    )
    message = (
        f"{names or 'no device listed'}; driver {facts['driver']} (supports CUDA {facts['driver_cuda']})"
    )
    ecc = sum(d.get("ecc") or 0 for d in devices)
    if ecc:
        return "warn", message + f"; {ecc} uncorrected ECC errors: suspect the hardware"
    if seen.get("missing"):
        return "pass", message + f"; torch not checked ({seen['missing']})"
    if not facts["cuda_available"]:
        reason = seen.get("error") or "torch.cuda.is_available() is False"
        return "fail", message + f"; but CUDA is not available to torch ({reason})"
    return "pass", message


def run():
    driver = (
        _from_nvml() or _from_smi() or {"source": None, "devices": [], "driver_cuda": driver_cuda_version()}
    )
    seen = _from_torch()
    devices = driver.get("devices") or seen.get("devices") or []
    facts = _facts(driver, seen, devices)
    status, message = _verdict(facts, driver, seen, devices)
    return {"status": status, "message": message, "facts": facts}
