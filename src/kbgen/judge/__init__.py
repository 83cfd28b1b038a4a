"""One judge for environment facts, whether a probe collected them or a pasted report held them.

Facts come in under the names the probes give them (``gpu.capability``, ``torch-build.cuda``,
``gpu.driver_cuda``, ...). Each check gives a :class:`Verdict`: ``pass``, ``warn``, ``fail`` or
``unknown`` (a fact it needs is missing: never a guess), the cause id it indicts, and a message
that names the fix. Facts the text does not state but that follow from one that it does (the
capability of a named GPU, the arch list of an official build, the CUDA a driver supports) are
looked up in :mod:`kbgen.envdata` first, and reported as derived.

The checks of the GPU, the driver and the torch build live here; :mod:`kbgen.judge.host` holds
those of the rest of the machine, and :mod:`kbgen.judge.verdict` what all of them return.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from kbgen import envdata
from kbgen.envdata import major_minor
from kbgen.judge.host import cpu_isa, cuda_wheels, cudnn, host_compiler, wsl
from kbgen.judge.verdict import (
    ARCH,
    CPU_BUILD,
    DRIVER_OLD,
    NO_DRIVER,
    TOOLKIT,
    Scalar,
    Verdict,
    cleared,
    indicted,
    text_of,
    worst,
)

__all__ = ["Scalar", "Verdict", "cleared", "complete", "indicted", "judge", "worst"]


def complete(facts: Mapping[str, Scalar]) -> tuple[dict[str, Scalar], dict[str, str]]:
    """The facts plus what follows from them, and ``{key: how it was derived}``."""
    out: dict[str, Scalar] = {k: v for k, v in facts.items() if v is not None and v != ""}
    derived: dict[str, str] = {}

    def put(key: str, value: Scalar, how: str) -> None:
        if value is not None and key not in out:
            out[key] = value
            derived[key] = how

    version = text_of(out.get("torch-build.version"))
    if version and "+cpu" in version:
        put("torch-build.cpu_only", True, "the version's +cpu suffix")
    if version and (suffix := _cu_suffix(version)):
        put("torch-build.cuda", suffix, "the version's +cu suffix")
    if not _is_amd(out):
        put(
            "gpu.capability",
            envdata.capability_of(text_of(out.get("gpu.name"))),
            "NVIDIA's list, by GPU name",
        )
    if version and not out.get("torch-build.cpu_only") and not out.get("torch-build.hip"):
        put(
            "torch-build.arch_list",
            envdata.arch_list(version, text_of(out.get("torch-build.cuda"))),
            "the official build's arch list",
        )
    windows = "windows" in (text_of(out.get("system.os")) or "").lower()
    put(
        "gpu.driver_cuda",
        envdata.driver_supports(text_of(out.get("gpu.driver")), windows),
        "the CUDA toolkit's minimum-driver table",
    )
    return out, derived


def judge(facts: Mapping[str, Scalar]) -> list[Verdict]:
    """Every check's verdict on ``facts`` (derived facts are added first)."""
    full, _ = complete(facts)
    return [
        check(full)
        for check in (_cpu_build, _arch, _driver, _toolkit, cuda_wheels, cudnn, wsl, cpu_isa, host_compiler)
    ]


# --------------------------------------------------------------------------- checks


def _cpu_build(f: dict[str, Scalar]) -> Verdict:
    check = "cpu-only-build"
    if f.get("torch-build.hip"):
        return Verdict(check, "pass", CPU_BUILD, f"a ROCm build (HIP {f['torch-build.hip']})")
    cpu_only = f.get("torch-build.cpu_only")
    nvidia = _nvidia_present(f)
    if cpu_only is True and nvidia:
        return Verdict(
            check,
            "fail",
            CPU_BUILD,
            (
                f"torch {f.get('torch-build.version') or ''} is a CPU-only build but an NVIDIA "
                "GPU/driver is present: "
                "uninstall it and install a CUDA build (pip install torch --index-url "
                "https://download.pytorch.org/whl/cu126, or the CUDA variant your driver supports)"
            ).replace("  ", " "),
        )
    if cpu_only is True:
        if text_of(f.get("toolkit.nvcc")):
            return Verdict(
                check,
                "warn",
                CPU_BUILD,
                (
                    f"torch is a CPU-only build on a machine with the CUDA {f['toolkit.nvcc']} toolkit: "
                    "if this machine has an NVIDIA GPU, install a CUDA build of torch"
                ),
            )
        if f.get("gpu.count") == 0 or _no_cuda_platform(f):
            return Verdict(check, "pass", CPU_BUILD, "a CPU-only build on a machine with no NVIDIA GPU")
        symptom = (
            ", which is why torch.cuda.is_available() is False"
            if f.get("torch-build.cuda_available") is False
            else ""
        )
        return Verdict(
            check,
            "warn",
            CPU_BUILD,
            (
                f"torch is a CPU-only build{symptom}; the report does not say the machine has no NVIDIA "
                "GPU: if it has one, install a CUDA build (pip install torch --index-url "
                "https://download.pytorch.org/whl/cu126, or the CUDA variant the driver supports; "
                "with conda, remove cpuonly)"
            ),
        )
    if cpu_only is False or f.get("torch-build.cuda"):
        return Verdict(check, "pass", CPU_BUILD, f"a CUDA build (CUDA {f.get('torch-build.cuda')})")
    return Verdict(check, "unknown", CPU_BUILD, "whether torch is a CUDA build is not stated")


def _arch(f: dict[str, Scalar]) -> Verdict:
    check = "gpu-arch"
    if _is_amd(f) or f.get("torch-build.hip"):
        return Verdict(
            check,
            "pass" if f.get("torch-build.hip") else "unknown",
            ARCH,
            "an AMD GPU: CUDA architectures do not apply",
        )
    cap = major_minor(text_of(f.get("gpu.capability")))
    name = text_of(f.get("gpu.name")) or "the GPU"
    if f.get("torch-build.incompatible_gpu") is True and cap is not None:
        how = _how_to_get(cap)
        archs_now = text_of(f.get("torch-build.arch_list")) or "other GPUs"
        return Verdict(
            check,
            "fail",
            ARCH,
            (
                f"torch says the {name} (sm_{cap[0]}{cap[1]}) is not compatible with this build "
                f"(built for {archs_now}); {how}"
            ),
        )
    if f.get("torch-build.gpu_too_old") is True:
        floor = text_of(f.get("torch-build.min_capability"))
        need = f" (this torch needs {floor} or newer)" if floor else ""
        return Verdict(
            check,
            "fail",
            ARCH,
            (
                f"{name} is compute capability {f.get('gpu.capability') or 'too low'}{need}: torch "
                "ships no kernels "
                "for it; install an older torch that still carries it, build torch from source for "
                "it, or use a newer GPU"
            ),
        )
    archs = text_of(f.get("torch-build.arch_list"))
    if cap is not None and not archs and not f.get("torch-build.cuda") and not f.get("torch-build.cpu_only"):
        every = {
            envdata.arch_runs(cap, a.split())[0]
            for a in envdata.arch_lists(text_of(f.get("torch-build.version")))
        }
        if every == {"fail"}:
            archs = envdata.arch_lists(text_of(f.get("torch-build.version")))[-1]
    if cap is None or not archs:
        missing = "the GPU's compute capability" if cap is None else "the torch build's arch list"
        return Verdict(check, "unknown", ARCH, f"{missing} is not known")
    status, why = envdata.arch_runs(cap, archs.split())
    sm = f"sm_{cap[0]}{cap[1]}"
    build = _build_label(f)
    if status == "fail":
        how = _how_to_get(cap)
        return Verdict(
            check,
            "fail",
            ARCH,
            (
                f"the {name} is {sm}; {build} is built for {archs}: expect 'no kernel image is available for "
                f"execution on the device'; {how}"
            ),
        )
    return Verdict(check, status, ARCH, f"{name} ({sm}) on {build}: {why}")


def _driver(f: dict[str, Scalar]) -> Verdict:
    check = "driver-runtime"
    if f.get("gpu.driver_missing") is True and not f.get("torch-build.cpu_only"):
        return Verdict(
            check,
            "fail",
            NO_DRIVER,
            (
                "torch finds no NVIDIA driver: install the driver (and, in a container, run it with "
                "--gpus all "
                "and the NVIDIA container toolkit)"
            ),
        )
    if f.get("gpu.driver_mismatch") is True:
        return Verdict(
            check,
            "fail",
            NO_DRIVER,
            (
                "the loaded NVIDIA kernel module and the driver's user-space libraries are of two "
                "versions (a driver updated without a reboot, or another driver's libcuda in a "
                "container): reboot, or reinstall one driver so both match"
            ),
        )
    runtime = text_of(f.get("torch-build.cuda"))
    driver = text_of(f.get("gpu.driver_cuda"))
    told = f.get("torch-build.driver_too_old") is True
    if told and not (runtime and driver):
        have = f"supports CUDA {driver}" if driver else "is older than torch needs"
        return Verdict(
            check,
            "fail",
            DRIVER_OLD,
            (
                f"torch reports the driver too old: it {have}; update the NVIDIA driver, or install a torch "
                "built for the CUDA the driver supports"
            ),
        )
    if f.get("torch-build.cpu_only") or f.get("torch-build.hip"):
        return Verdict(check, "pass", DRIVER_OLD, "not a CUDA build: no CUDA runtime to match")
    r, d = major_minor(runtime), major_minor(driver)
    if r is None and d is not None and f.get("torch-build.cuda_available") is not True:
        plain = _pypi_default_cuda(f)
        need = major_minor(plain) or (0, 0)
        if need > d and (need[0] != d[0] or need[0] < 11):  # no minor-version compatibility before 11
            return Verdict(
                check,
                "warn",
                DRIVER_OLD,
                (
                    f"torch {f['torch-build.version']} does not say its CUDA; from PyPI on Linux it is "
                    f"built for CUDA {plain}, newer than the driver's CUDA {driver}: update the driver, "
                    f"or install a torch built for CUDA {d[0]}.x or older"
                ),
            )
    if r is None or d is None:
        missing = "torch's CUDA version" if r is None else "the CUDA version the driver supports"
        return Verdict(check, "unknown", DRIVER_OLD, f"{missing} is not known")
    if r <= d:
        return Verdict(
            check, "pass", DRIVER_OLD, f"the driver supports CUDA {driver} >= torch's CUDA {runtime}"
        )
    available = f.get("torch-build.cuda_available") is True
    windows = "windows" in (text_of(f.get("system.os")) or "").lower()
    floor = envdata.minor_floor(r[0], windows)
    version = envdata.version_tuple(text_of(f.get("gpu.driver")))
    minor_ok = r[0] == d[0] and r[0] >= 11 and (floor is None or version is None or version >= floor)
    if minor_ok or available:
        how = "minor-version compatibility" if minor_ok else "forward compatibility (CUDA available to torch)"
        return Verdict(
            check,
            "warn",
            DRIVER_OLD,
            (
                f"torch's CUDA {runtime} is newer than the driver's CUDA {driver}: it runs through "
                f"{how}, but PTX "
                "JIT and newer features fail; update the driver if kernels fail"
            ),
        )
    return Verdict(
        check,
        "fail",
        DRIVER_OLD,
        (
            f"torch's CUDA {runtime} needs a newer driver: this driver supports CUDA up to {driver}; "
            "update the "
            f"driver, or install a torch built for CUDA {d[0]}.x or older (cu{d[0]}{d[1]})"
        ),
    )


def _toolkit(f: dict[str, Scalar]) -> Verdict:
    check = "toolkit-runtime"
    toolkit, runtime = (
        major_minor(text_of(f.get("toolkit.nvcc"))),
        major_minor(text_of(f.get("torch-build.cuda"))),
    )
    if toolkit is None or runtime is None:
        return Verdict(check, "unknown", None, "the nvcc toolkit or torch's CUDA version is not known")
    if toolkit[0] != runtime[0]:
        return Verdict(
            check,
            "warn",
            TOOLKIT,
            (
                f"nvcc {f['toolkit.nvcc']} and torch's CUDA {f['torch-build.cuda']} differ in major "
                "version: building "
                "CUDA extensions against this torch fails; install the matching toolkit (running "
                "torch is unaffected)"
            ),
        )
    return Verdict(check, "pass", None, "nvcc and torch's CUDA share a major version")


# --------------------------------------------------------------------------- helpers


def _how_to_get(cap: tuple[int, int]) -> str:
    fix = envdata.builds_with(f"{cap[0]}.{cap[1]}")
    if fix is None:
        return f"build torch from source with TORCH_CUDA_ARCH_LIST={cap[0]}.{cap[1]}"
    tag = "cu" + fix[1].replace(".", "")
    return (
        f"install a build whose arch list has sm_{cap[0]}{cap[1]}, such as torch {fix[0]} for CUDA {fix[1]} "
        f"(pip install torch --index-url https://download.pytorch.org/whl/{tag})"
    )


def _cu_suffix(version: str) -> str | None:
    match = re.search(r"\+cu(\d{2,3})\b", version)
    if not match:
        return None
    digits = match.group(1)
    return f"{digits[:-1]}.{digits[-1]}"


def _is_amd(f: Mapping[str, Scalar]) -> bool:
    name = (text_of(f.get("gpu.name")) or "").lower()
    return any(w in name for w in ("radeon", "gfx", "amd ", "instinct", "ellesmere"))


def _pypi_default_cuda(f: Mapping[str, Scalar]) -> str | None:
    """The CUDA of torch's plain Linux wheel, for a version with no local suffix (``+cu121``,
    ``+cpu``), not a source build (``a0``, ``.dev``), on a machine not said to be Windows or macOS."""
    version = text_of(f.get("torch-build.version")) or ""
    os_name = (text_of(f.get("system.os")) or "").lower()
    if not re.fullmatch(r"\d+\.\d+(?:\.\d+)?", version) or "windows" in os_name or _no_cuda_platform(f):
        return None
    return envdata.default_cuda(version)


def _no_cuda_platform(f: Mapping[str, Scalar]) -> bool:
    """macOS: no CUDA build of torch exists for it, so a CPU-only build is the expected one."""
    os_name = (text_of(f.get("system.os")) or "").lower()
    return os_name.startswith(("macos", "mac os", "os x", "darwin"))


def _nvidia_present(f: Mapping[str, Scalar]) -> bool:
    return bool(f.get("gpu.driver") or f.get("gpu.driver_cuda")) or (
        bool(f.get("gpu.name")) and not _is_amd(f)
    )


def _build_label(f: Mapping[str, Scalar]) -> str:
    version, cuda = text_of(f.get("torch-build.version")), text_of(f.get("torch-build.cuda"))
    if version:
        return f"torch {version}" + (f" (CUDA {cuda})" if cuda and "+cu" not in version else "")
    return "this torch"
