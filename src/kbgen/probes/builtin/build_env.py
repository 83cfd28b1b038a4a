"""What a C++/CUDA extension build needs from the machine, next to the torch that drives it: nvcc's
CUDA version against torch.version.cuda, CUDA_HOME/CUDA_PATH and whether that folder exists, the
host compiler against the range torch's own table allows for that nvcc, and TORCH_CUDA_ARCH_LIST
against the GPUs' compute capability."""

PROBE = {
    "id": "build-env",
    "title": "Extension build toolchain",
    "description": "nvcc's CUDA version vs torch.version.cuda, CUDA_HOME/CUDA_PATH and whether it exists, "
    "gcc/g++ versions vs the range torch allows for that nvcc, TORCH_CUDA_ARCH_LIST vs the GPUs' "
    "compute capability, and the C++ ABI torch was built with.",
    "needs": ["torch?"],
    "timeout": 30,
    "default": False,
}

import os
import re
import shutil
import subprocess


def _first_line(command):
    """First line of ``command --version`` (None when missing or silent), bounded in time."""
    try:
        done = subprocess.run([command, "--version"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = (done.stdout or done.stderr or "").strip().splitlines()
    return lines[0].strip()[:200] if lines else None


def _numbers(text, count=2):
    match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text or "")
    return tuple(int(g) for g in match.groups()[:count] if g is not None) if match else None


def _home():
    """(variable, value) of the toolkit the build will use: CUDA_HOME, else CUDA_PATH."""
    for name in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(name):
            return name, os.environ[name]
    return None, None


def _nvcc(home):
    """(path, version) of nvcc under the toolkit folder, else the first on PATH."""
    candidates = [os.path.join(home, "bin", "nvcc")] if home else []
    candidates += [shutil.which("nvcc")] if shutil.which("nvcc") else []
    for path in candidates:
        if not os.path.isfile(path):
            continue
        try:
            done = subprocess.run(
                [path, "--version"], capture_output=True, text=True, timeout=10, check=False
            )
        except (OSError, subprocess.SubprocessError):
            continue
        match = re.search(r"release (\d+\.\d+)", done.stdout or "")
        if match:
            return path, match.group(1)
    return None, None


def _arch_entries(text):
    """TORCH_CUDA_ARCH_LIST as [(capability, ptx)]: '7.5;8.6+PTX' or '7.5 8.6'."""
    found = []
    for item in re.split(r"[;\s,]+", text or ""):
        match = re.fullmatch(r"(\d+)\.(\d+)\w?(\+PTX)?", item.strip(), re.IGNORECASE)
        if match:
            found.append(((int(match.group(1)), int(match.group(2))), bool(match.group(3))))
    return found


def arch_covers(entries, capability):
    """True when the list builds code this GPU runs: its capability, or PTX of an older one."""
    return any(cap == capability or (ptx and cap <= capability) for cap, ptx in entries)


def _torch():
    try:
        import torch
    except ImportError:
        return None
    info = {"version": torch.__version__, "cuda": torch.version.cuda, "caps": [], "gcc_range": None}
    info["cxx11_abi"] = bool(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", False))
    try:
        if torch.version.cuda and torch.cuda.is_available():
            info["caps"] = [torch.cuda.get_device_capability(i) for i in range(torch.cuda.device_count())]
    except Exception:  # a broken driver: the build facts still stand
        info["caps"] = []
    try:
        from torch.utils import cpp_extension

        info["gcc_table"] = getattr(cpp_extension, "CUDA_GCC_VERSIONS", None)
    except Exception:
        info["gcc_table"] = None
    return info


def problems(facts, caps, gcc_table):
    """(fails, warnings): what stops or endangers a CUDA extension build, in kbgen's words."""
    fails, warns = [], []
    torch_cuda, nvcc = facts.get("torch_cuda"), facts.get("nvcc_cuda")
    if facts.get("cuda_home") and not facts.get("cuda_home_exists"):
        fails.append(f"{facts['cuda_home_var']}={facts['cuda_home']} does not exist")
    if torch_cuda and not nvcc:
        fails.append("no nvcc under CUDA_HOME/CUDA_PATH or on PATH: a CUDA extension cannot be compiled")
    if torch_cuda and nvcc:
        if nvcc.split(".")[0] != torch_cuda.split(".")[0]:
            fails.append(f"nvcc is CUDA {nvcc} but torch was built with CUDA {torch_cuda}: majors differ")
        elif nvcc != torch_cuda:
            warns.append(f"nvcc is CUDA {nvcc}, torch's is {torch_cuda} (same major: torch only warns)")
    gcc = _numbers(facts.get("gcc"))
    bounds = (gcc_table or {}).get(nvcc) if nvcc else None
    if gcc and bounds and not (tuple(bounds[0])[:2] <= gcc < tuple(bounds[1])[:2]):
        warns.append(f"gcc {gcc[0]}.{gcc[1]} is outside the range torch allows for CUDA {nvcc}")
    if not torch_cuda and facts.get("torch"):
        warns.append("torch is a CPU-only build: CUDAExtension builds need a CUDA torch")
    entries = _arch_entries(facts.get("arch_list"))
    missing = [f"{c[0]}.{c[1]}" for c in caps if entries and not arch_covers(entries, tuple(c))]
    if missing:
        fails.append(f"TORCH_CUDA_ARCH_LIST={facts['arch_list']} leaves out this GPU's {', '.join(missing)}")
    return fails, warns


def run():
    side = _torch()
    variable, home = _home()
    nvcc_path, nvcc_cuda = _nvcc(home)
    facts = {
        "torch": side["version"] if side else None,
        "torch_cuda": side["cuda"] if side else None,
        "cxx11_abi": side["cxx11_abi"] if side else None,
        "cuda_home_var": variable,
        "cuda_home": home,
        "cuda_home_exists": os.path.isdir(home) if home else None,
        "nvcc": nvcc_path,
        "nvcc_cuda": nvcc_cuda,
        "gcc": _first_line("gcc") if shutil.which("gcc") else None,
        "gxx": _first_line("g++") if shutil.which("g++") else None,
        "arch_list": os.environ.get("TORCH_CUDA_ARCH_LIST"),
        "capabilities": (" ".join(f"{a}.{b}" for a, b in side["caps"]) or None) if side else None,
    }
    fails, warns = problems(facts, side["caps"] if side else [], side.get("gcc_table") if side else None)
    if fails:
        return {"status": "fail", "message": "; ".join(fails + warns), "facts": facts}
    if warns:
        return {"status": "warn", "message": "; ".join(warns), "facts": facts}
    summary = f"nvcc {nvcc_cuda or 'absent'}, torch CUDA {facts['torch_cuda'] or 'none'}"
    return {"status": "pass", "message": summary + ", host compiler in range", "facts": facts}
