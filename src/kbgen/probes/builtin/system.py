"""Operating system, WSL, container limits and the Python interpreter (stdlib only)."""

PROBE = {
    "id": "system",
    "title": "Operating system and Python",
    "description": "OS and kernel, WSL1/WSL2 (kernel string, /dev/dxg, /usr/lib/wsl/lib), container and "
    "its cgroup CPU and memory limits, /dev/shm size, libc, compilers, Python version, executable and venv.",
    "needs": [],
    "timeout": 15,
    "default": True,
}

import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys

SHM_WARN_MB = 1024


def _read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def _os_name():
    text = _read("/etc/os-release") or ""
    for line in text.splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"')
    return platform.platform(terse=True)


def _wsl(kernel):
    lowered = kernel.lower()
    if "microsoft" not in lowered and "wsl" not in lowered:
        return "no"
    # WSL2 kernels say "microsoft-standard-WSL2"; WSL1 reports a Windows build like "4.4.0-19041-Microsoft".
    return "WSL2" if ("wsl2" in lowered or "microsoft-standard" in lowered) else "WSL1"


def _container():
    if os.path.exists("/.dockerenv"):
        return "docker"
    if os.path.exists("/run/.containerenv"):
        return "podman"
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes"
    cgroup = _read("/proc/1/cgroup") or ""
    for name in ("docker", "kubepods", "containerd", "lxc"):
        if name in cgroup:
            return name
    return os.environ.get("container") or "no"  # noqa: SIM112 (systemd-nspawn and podman set it lowercase)


def _container_image():
    """Which image the container runs, where the runtime says so; None elsewhere."""
    named = os.environ.get("KBGEN_CONTAINER_IMAGE")
    if named:
        return named
    for variable in ("APPTAINER_CONTAINER", "SINGULARITY_CONTAINER"):  # path of the .sif image
        if os.environ.get(variable):
            return os.path.basename(os.environ[variable])
    for line in (_read("/run/.containerenv") or "").splitlines():  # podman: image="..."
        if line.startswith("image="):
            return line.split("=", 1)[1].strip('"') or None
    if os.environ.get("NVIDIA_PYTORCH_VERSION"):  # NVIDIA's NGC PyTorch images
        return "nvcr.io/nvidia/pytorch:" + os.environ["NVIDIA_PYTORCH_VERSION"]
    return None


def _machine_id():
    """Which installed system this is, as a digest: /etc/machine-id is a secret of the machine's
    own (systemd asks that it never leave it), so only a hash of it salted for kbgen is reported.
    A re-installed node gets a new one; a container has its own or none."""
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        text = (_read(path) or "").strip()
        if re.fullmatch(r"[0-9a-f]{32}", text):
            return hashlib.sha256(("kbgen-machine:" + text).encode()).hexdigest()[:12]
    return None


def _container_id():
    """The first 12 hex digits of the container's id where Docker or Podman mount it in; None
    elsewhere. Two containers on one host (same host name, same machine) differ here."""
    text = _read("/proc/self/mountinfo") or ""
    found = re.search(r"/(?:containers|overlay-containers)/([0-9a-f]{64})/", text)
    return found.group(1)[:12] if found else None


def _cgroup_limits():
    """CPU limit (in CPUs) and memory limit (MB) from cgroup v2, else v1; None when unlimited."""
    cpus = memory = None
    cpu_max = _read("/sys/fs/cgroup/cpu.max")
    if cpu_max:
        quota, _, period = cpu_max.strip().partition(" ")
        if quota != "max" and period:
            cpus = round(int(quota) / int(period), 2)
    else:
        quota, period = (
            _read("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"),
            _read("/sys/fs/cgroup/cpu/cpu.cfs_period_us"),
        )
        if quota and period and int(quota) > 0:
            cpus = round(int(quota) / int(period), 2)
    mem = _read("/sys/fs/cgroup/memory.max") or _read("/sys/fs/cgroup/memory/memory.limit_in_bytes")
    if mem and mem.strip().isdigit() and int(mem) < 1 << 60:
        memory = int(mem) // (1024 * 1024)
    return cpus, memory


def _versions(commands):
    """First line of ``NAME --version`` for each command on PATH, run side by side."""
    running = {}
    for name in commands:
        path = shutil.which(name)
        if path is None:
            continue
        try:
            running[name] = subprocess.Popen(
                [path, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
        except OSError:
            continue
    found = dict.fromkeys(commands)
    for name, proc in running.items():
        try:
            out, _ = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            continue
        lines = out.strip().splitlines()
        found[name] = lines[0].strip() if lines else None
    return found


def _memory_total_mb():
    for line in (_read("/proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    return None


def _shm_mb():
    try:
        shm = os.statvfs("/dev/shm")
    except OSError:
        return None
    return shm.f_blocks * shm.f_frsize // (1024 * 1024)


def _python_facts():
    venv = sys.prefix != getattr(sys, "base_prefix", sys.prefix)
    conda_meta = os.path.isdir(os.path.join(sys.prefix, "conda-meta"))
    return {
        "python": platform.python_version(),
        "python_build": sys.version.replace("\n", " "),
        "python_executable": sys.executable,
        "python_bits": 64 if sys.maxsize > 2**32 else 32,
        "venv": sys.prefix if venv else None,
        "conda": os.environ.get("CONDA_DEFAULT_ENV") or ("yes" if conda_meta else None),
    }


def _machine_facts():
    uname = platform.uname()
    cpus, memory = _cgroup_limits()
    tools = _versions(("gcc", "clang", "cmake"))
    return {
        "os": _os_name(),
        "kernel": uname.release,
        "arch": uname.machine,
        "platform": platform.platform(),
        "wsl": _wsl(uname.release),
        "wsl_dxg": os.path.exists("/dev/dxg"),
        "wsl_lib": os.path.isdir("/usr/lib/wsl/lib"),
        "container": _container(),
        "container_image": _container_image(),
        "container_id": _container_id(),
        "machine_id": _machine_id(),
        "cgroup_cpus": cpus,
        "cgroup_memory_mb": memory,
        "memory_total_mb": _memory_total_mb(),
        "shm_mb": _shm_mb(),
        "libc": " ".join(platform.libc_ver()).strip() or None,
        "gcc": tools["gcc"],
        "clang": tools["clang"],
        "cmake": tools["cmake"],
    }


def _warnings(facts):
    found = []
    if facts["wsl"] == "WSL1":
        found.append("WSL1 has no GPU support; CUDA needs WSL2")
    if facts["wsl"] == "WSL2" and not facts["wsl_dxg"]:
        found.append("WSL2 without /dev/dxg: the GPU is not passed through")
    shm = facts["shm_mb"]
    if shm is not None and shm < SHM_WARN_MB:
        found.append(
            f"/dev/shm is {shm} MB; DataLoader workers may die with a bus error (docker: --shm-size)"
        )
    return found


def run():
    facts = {**_machine_facts(), **_python_facts()}
    wsl = facts["wsl"]
    summary = f"{facts['os']}, kernel {facts['kernel']}" + (f" ({wsl})" if wsl != "no" else "")
    summary += f", Python {facts['python']}"
    warnings = _warnings(facts)
    if warnings:
        return {"status": "warn", "message": summary + "; " + "; ".join(warnings), "facts": facts}
    return {"status": "pass", "message": summary, "facts": facts}
