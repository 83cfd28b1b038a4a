"""Rules for what torch prints about the machine, and for package lists (pip, conda, prose).

Importing this module registers its rules in :data:`kbgen.envreport.parse.RULES`.
"""

from __future__ import annotations

import re

from kbgen.envreport.parse import (
    HIGH,
    LOW,
    MID,
    VERSION,
    Found,
    driver_version,
    gpu_name,
    major_minor,
    rule,
)

# --------------------------------------------------------------------------- torch's own messages


@rule(r"^\s*(\S.*?) with CUDA capability sm_(\d+) is not compatible", "torch warning")
def _incompatible(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    name = re.sub(r"^.*?(?:UserWarning:|Bug Report:|\|)\s*", "", m.group(1)).strip(" \"'`")
    f.put("gpu.name", gpu_name(name), HIGH + 1)
    digits = m.group(2)
    f.put("gpu.capability", f"{digits[:-1]}.{digits[-1]}", HIGH + 1)
    f.put("torch-build.incompatible_gpu", True, HIGH)
    rest = " ".join(lines[i : i + 3])
    archs = re.search(r"supports CUDA capabilities ((?:(?:sm|compute)_\d+\s*)+)", rest)
    if archs:
        f.put("torch-build.arch_list", " ".join(archs.group(1).split()), HIGH + 1)


@rule(r"Found GPU\d+ (.+?) which is of cuda capability (\d+\.\d)", "torch warning")
def _too_old(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("gpu.name", gpu_name(m.group(1)), HIGH + 1)
    f.put("gpu.capability", m.group(2), HIGH + 1)
    f.put("torch-build.gpu_too_old", True, HIGH)
    rest = " ".join(lines[i : i + 4])
    floor = re.search(
        r"minimum cuda capability (?:that we support|supported by this library) is (\d+\.\d)", rest
    )
    if floor:
        f.put("torch-build.min_capability", floor.group(1), HIGH)


@rule(r"driver on your system is too old\s*\(found version (\d{4,5})\)", "torch warning")
def _driver_old(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    number = int(m.group(1))
    f.put("gpu.driver_cuda", f"{number // 1000}.{number % 1000 // 10}", HIGH)
    f.put("torch-build.driver_too_old", True, HIGH)


@rule(
    r"CUDA driver version is insufficient for CUDA runtime version|cudaErrorInsufficientDriver", "torch error"
)
def _insufficient(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("torch-build.driver_too_old", True, HIGH)


@rule(r"Found no NVIDIA driver on your system", "torch warning")
def _no_driver(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("gpu.driver_missing", True, HIGH)


@rule(
    r"Failed to initialize NVML: Driver/library version mismatch|unsupported display driver / cuda driver"
    r" combination|cudaErrorSystemDriverMismatch|CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"
    r"|kernel version [\d.]+ does not match DSO version",
    "driver error",
)
def _driver_mismatch(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    """nvidia-smi or CUDA (error 803) finding the kernel module and the user-space driver from two
    driver versions: an upgrade without a reboot, or a container's libcuda of another driver."""
    f.put("gpu.driver_mismatch", True, HIGH)


@rule(r"Torch not compiled with CUDA enabled", "torch error")
def _not_compiled(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("torch-build.cpu_only", True, HIGH)


@rule(r"SIGILL|Illegal instruction|illegal hardware instruction", "crash")
def _sigill(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("cpu.sigill", True, HIGH)


@rule(
    r"The detected CUDA version \((\d+\.\d+)\) (?:mismatches|has a minor version mismatch with)",
    "torch error",
)
def _cuda_mismatch(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    """cpp_extension comparing nvcc with torch's CUDA: "The detected CUDA version (12.1) mismatches
    the version that was used to compile PyTorch (11.3)", often wrapped after "compile"."""
    f.put("toolkit.nvcc", m.group(1), HIGH)
    built = re.search(r"compile\s+PyTorch\s*\((\d+\.\d+)\)", " ".join(x.strip() for x in lines[i : i + 3]))
    if built:
        f.put("torch-build.cuda", built.group(1), HIGH)


@rule(
    r"#error:?\s*--\s*unsupported (?:GNU|clang|Microsoft Visual Studio) version!"
    r"|is greater than the maximum required version by CUDA",
    "nvcc",
)
def _host_compiler(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    """nvcc's host_config.h, or torch's check before it, refusing the host compiler."""
    f.put("toolkit.host_compiler_unsupported", True, HIGH)


@rule(r"^\s*-\s*CUDA Runtime (\d+\.\d+)\s*$", "torch build config")
def _config_runtime(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    """``torch.__config__.show()`` (under "PyTorch built with:", as mmcv and mmdetection print it)."""
    f.put("torch-build.cuda", m.group(1), HIGH)


@rule(r"^\s*-\s*NVCC architecture flags\s*:\s*(.*-gencode.*)$", "torch build config")
def _config_archs(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    """The same block's gencode flags, read as ``torch.cuda.get_arch_list()`` gives them."""
    archs = dict.fromkeys(re.findall(r"code=((?:sm|compute)_\d+a?)", m.group(1)))
    if archs:
        f.put("torch-build.arch_list", " ".join(archs), HIGH)


@rule(r"torch\.__version__\)?\s*(?:={1,2}|:)\s*['\"]?" + VERSION, "python session")
def _version_shown(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    """``torch.__version__ = 1.5.1`` as a build script prints it, ``torch.__version__: '2.0.1+cu118'``."""
    f.put("torch-build.version", m.group(1), MID)


@rule(r"\bPython-(3\.\d+\.\d+) torch-" + VERSION + r" (?:CUDA:\d+ \((.+?), \d+MiB\)|CPU)", "ultralytics")
def _ultralytics(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    """Ultralytics' start line:
    ``Python-3.10.12 torch-2.6.0+cu124 CUDA:0 (NVIDIA GeForce RTX 5090, 32120MiB)``."""
    f.put("system.python", m.group(1), MID)
    f.put("torch-build.version", m.group(2), MID)
    f.put("gpu.name", gpu_name(m.group(3) or ""), MID)


@rule(r"^\s*[-*]\s*(GPU|available|version|torch):\s*(\S.*?)?\s*$", "lightning")
def _lightning(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    """Lightning's environment script: ``* CUDA:`` then ``- GPU:`` (names below it), ``- available:``
    and ``- version:`` (torch's CUDA); ``- torch:`` under ``* Lightning:`` or ``* Packages:``."""
    above = [x.strip() for x in lines[max(0, i - 6) : i]]
    key, value = m.group(1), m.group(2) or ""
    if key == "torch" and re.fullmatch(VERSION, value):
        f.put("torch-build.version", value, MID)
    elif "* CUDA:" not in above:
        return
    elif key == "GPU" and not value and i + 1 < len(lines):
        name = re.sub(r"^\s*-\s*", "", lines[i + 1])
        f.put("gpu.name", gpu_name(name) if name.strip() != "None" else None, MID)
    elif key == "available" and value in ("True", "False"):
        f.put("torch-build.cuda_available", value == "True", MID)
    elif key == "version" and re.fullmatch(r"\d+\.\d+", value):
        f.put("torch-build.cuda", value, MID)


# --------------------------------------------------------------------------- packages


@rule(r"^\s*\[(?:pip3?|conda)\]\s+(nvidia-[\w-]+?-cu(\d+))[=\s]", "pip list")
def _nvidia_wheel(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    current = str(f.facts.get("packages.nvidia_wheels") or "")
    item = f"{m.group(1)[: -len(m.group(2)) - 3]}-cu{m.group(2)}"
    if item not in current.split():
        f.facts["packages.nvidia_wheels"] = (current + " " + item).strip()
        f.weight["packages.nvidia_wheels"] = HIGH


@rule(r"^\s*\[pip3?\]\s+torch==" + VERSION, "pip list")
def _pip_torch(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("torch-build.version", m.group(1), MID)


@rule(r"^\s*(?:\[conda\]\s+)?(?:pytorch|torch)\s+(\d[\w.+]*)\s+(\S+)(?:\s+\S+){0,3}\s*$", "conda list")
def _conda_torch(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    build = m.group(2).lower()
    if build == "<pip>" or build.startswith(("pypi", "py")):
        f.put("torch-build.version", m.group(1), MID)
    if "_cpu" in build or build.startswith("cpu"):
        f.put("torch-build.cpu_only", True, MID)
    cuda = re.search(r"cuda(\d+\.\d+)", build)
    if cuda:
        f.put("torch-build.cuda", major_minor(cuda.group(1)), MID)


@rule(r"\bpytorch=(\d[\d.]*)=([\w.]+)", "conda list")
def _conda_spec(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("torch-build.version", m.group(1), MID)
    if "cpu" in m.group(2):
        f.put("torch-build.cpu_only", True, MID)


@rule(r"(?<![\w.-])torch(?:={2,3}|\s*:\s*|\s{2,}|-(?=\d))" + VERSION, "pip")
def _torch_pin(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("torch-build.version", m.group(1), LOW)


@rule(r"^\s*(?:-\s*)?(?:PyTorch|torch)(?: version)?\s*[:=]\s*'?" + VERSION, "prose")
def _torch_colon(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("torch-build.version", m.group(1), MID)


@rule(r"^\s*(?:-\s*)?\s*torch\s+(\d+\.\d+\.\d+(?:\+\w+)?)\s*$|the version torch is (\d+\.\d+\.\d+)", "prose")
def _torch_plain(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("torch-build.version", m.group(1) or m.group(2), LOW)


@rule(r"print\(torch\.__version__\)\s*$", "python session")
def _print_version(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
    if re.fullmatch(VERSION, nxt):
        f.put("torch-build.version", nxt, MID)


@rule(r"torch\.version\.cuda\)?`?\s*$", "python session")
def _print_cuda(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    nxt = lines[i + 1].strip().strip("'\"") if i + 1 < len(lines) else ""
    nxt = re.sub(r"^returns\s+", "", nxt)
    if re.fullmatch(r"\d+\.\d+(?:\.\d+)?", nxt):
        f.put("torch-build.cuda", major_minor(nxt), MID)


@rule(
    r"^\s*(?:-\s*)?Driver\s*:\s*(\d{3}\.\d+(?:\.\d+)?)\s*$"
    r"|Driver version (?:is |of )?(\d{3}\.\d+(?:\.\d+)?)",
    "prose",
)
def _driver_prose(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("gpu.driver", driver_version(m.group(1) or m.group(2)), MID)


@rule(r"^\s*(?:-\s*)?GPU\s*:\s*(.+?)\s*(?:\(compute capability (\d+\.\d)\))?\s*$", "prose")
def _gpu_prose(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("gpu.name", gpu_name(re.split(r",|;| and |\s+/\s+", m.group(1))[0]), LOW)  # the first of several
    if m.group(2):
        f.put("gpu.capability", m.group(2), MID)


@rule(r"^\s*(?:-\s*)?CUDA \(via torch\)\s*:\s*(\d+\.\d+)", "prose")
def _cuda_via_torch(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("torch-build.cuda", m.group(1), MID)


@rule(r"Driver-reported CUDA version\s*:\s*(\d+\.\d+)", "prose")
def _driver_cuda_prose(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("gpu.driver_cuda", m.group(1), MID)


@rule(
    r"is_available\(\)\S*\s*(?:(?:still|always|now|only|just|also)\s+)?"
    r"(?:prints|returns|gives|returned|is returning|keeps returning)\s*`?(True|False)`?",
    "prose",
)
def _available_prints(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("torch-build.cuda_available", m.group(1) == "True", MID)


@rule(r"is_available\(\)[)`'\"]*\s*$", "python session")
def _available_next(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    """``print(torch.cuda.is_available())`` and what it printed: the next line, or the first bare
    True/False below torch's warnings (they go to stderr, in the middle of the output)."""
    for line in lines[i + 1 : i + 7]:
        word = re.fullmatch(r"\s*(?:returns\s+)?`?(True|False)`?\.?\s*", line)
        if word:
            f.put("torch-build.cuda_available", word.group(1) == "True", MID)
            return


#: GitHub issue forms render each field as a heading with the answer below it
_FORM_FIELDS = {
    "pytorch": re.compile(r"(?:PyTorch|torch)(?: version)?"),
    "python": re.compile(r"Python(?: version)?"),
    "os": re.compile(r"(?:Operating System|OS)(?: (?:and )?(?:version|Version|distribution))?"),
    "gpu": re.compile(r"(?:Hardware: )?(?:GPU|Graphics card)(?: (?:model|models|type|name)s?)?"),
    "driver": re.compile(r"(?:NVIDIA )?(?:GPU )?[Dd]river [Vv]ersion|NVIDIA Open GPU Kernel Modules Version"),
}


@rule(r"^\s*#{2,4}\s*(\S.{0,60}?)\s*$", "issue form")
def _form_field(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    """``### Operating System and Version`` and its answer a line or two below (not "_No response_",
    not the next heading)."""
    label = next((name for name, p in _FORM_FIELDS.items() if p.fullmatch(m.group(1).rstrip(" :"))), None)
    answer = next((x.strip() for x in lines[i + 1 : i + 4] if x.strip()), "")
    if label is None or not answer or answer.startswith("#") or answer.strip("_").lower() == "no response":
        return
    if label in ("pytorch", "python") and re.fullmatch(VERSION, answer):
        f.put("torch-build.version" if label == "pytorch" else "system.python", answer, MID)
    elif label == "os" and len(answer) <= 80:
        f.put("system.os", answer, MID)
    elif label == "gpu":  # the first of several, as the labels take it
        f.put("gpu.name", gpu_name(re.split(r",|;| and |\s+/\s+", answer)[0]), MID)
    elif label == "driver" and len(re.findall(r"\d{3}\.\d+", answer)) == 1:
        f.put("gpu.driver", driver_version(answer), MID)


@rule(r"PyTorch Version \(e\.g\., [\d.]+\)\s*:\s*'?" + VERSION, "issue form")
def _form_bullet(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("torch-build.version", m.group(1), MID)


@rule(r"\bNVIDIA (\d{3}\.\d+\.\d+)\b", "prose")
def _driver_named(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("gpu.driver", m.group(1), LOW)


@rule(
    r"^\s*(?:-\s*)?(Ubuntu|Debian|CentOS|Fedora|Rocky|AlmaLinux|openSUSE)(?: version)?\s*:"
    r"\s*(\d[\w.]*(?: LTS)?)",
    "prose",
)
def _distro(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    """``Ubuntu version: 16.04.3 LTS (GNU/Linux 4.15.0-76-generic x86_64)``: the distribution named."""
    f.put("system.os", f"{m.group(1)} {m.group(2)}", LOW)
