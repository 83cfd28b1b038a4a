"""The judge's checks on the rest of the machine: the CUDA wheels pip installed, cuDNN, WSL, the
host compiler, and the CPU.

See :mod:`kbgen.judge`, which runs them with its own checks.
"""

from __future__ import annotations

from kbgen.envdata import major_minor
from kbgen.judge.verdict import CPU_ISA, HOST_COMPILER, LIBS, VM_CPU, WSL, Scalar, Verdict, text_of


def cuda_wheels(f: dict[str, Scalar]) -> Verdict:
    check = "cuda-wheels"
    wheels = text_of(f.get("packages.nvidia_wheels"))
    if not wheels:
        return Verdict(check, "unknown", LIBS, "no nvidia-* wheels are listed")
    by_lib: dict[str, set[str]] = {}
    for item in wheels.split():
        lib, _, major = item.rpartition("-cu")
        by_lib.setdefault(lib, set()).add(major)
    doubled = sorted(lib for lib, majors in by_lib.items() if len(majors) > 1)
    if doubled:
        return Verdict(
            check,
            "fail",
            LIBS,
            (
                f"{', '.join(doubled)} installed for two CUDA majors: the loader mixes them; "
                "uninstall the wheels of "
                "the major torch does not use and reinstall torch"
            ),
        )
    majors = {m for s in by_lib.values() for m in s}
    runtime = major_minor(text_of(f.get("torch-build.cuda")))
    if runtime and majors and str(runtime[0]) not in majors:
        return Verdict(
            check,
            "warn",
            LIBS,
            (
                f"the nvidia-* wheels are for CUDA {', '.join(sorted(majors))} but torch uses CUDA "
                f"{runtime[0]}"
            ),
        )
    return Verdict(check, "pass", LIBS, "the nvidia-* wheels agree on one CUDA major")


def cudnn(f: dict[str, Scalar]) -> Verdict:
    check = "cudnn-libs"
    if f.get("torch-build.cudnn_mismatch") is True:
        return Verdict(
            check,
            "fail",
            LIBS,
            (
                "cuDNN reports libraries of different versions loaded together: a second cuDNN "
                "(a system install on LD_LIBRARY_PATH, or an nvidia-cudnn wheel for another CUDA major) "
                "is found before the one torch ships with; remove it from the library path or "
                "uninstall the extra wheel, and reinstall torch"
            ),
        )
    return Verdict(check, "unknown", LIBS, "no cuDNN version message in the text")


def wsl(f: dict[str, Scalar]) -> Verdict:
    check = "wsl"
    wsl = text_of(f.get("system.wsl"))
    if not wsl or wsl == "no":
        return Verdict(
            check, "unknown" if not wsl else "pass", WSL, "not WSL" if wsl else "WSL is not stated"
        )
    if wsl == "WSL1":
        return Verdict(
            check, "fail", WSL, "WSL1 has no GPU access: convert the distribution with wsl --set-version 2"
        )
    if (
        f.get("torch-build.cuda_available") is False
        and f.get("torch-build.cuda")
        and not f.get("torch-build.cpu_only")
    ):
        return Verdict(
            check,
            "warn",
            WSL,
            (
                "WSL2 with a CUDA build that sees no GPU: use the Windows driver's "
                "/usr/lib/wsl/lib/libcuda.so and "
                "do not install a Linux NVIDIA driver inside WSL"
            ),
        )
    return Verdict(check, "pass", WSL, "WSL2 (GPU through the Windows driver)")


def cpu_isa(f: dict[str, Scalar]) -> Verdict:
    check = "cpu-isa"
    flags = text_of(f.get("cpu.flags"))
    if flags is None:
        return Verdict(check, "unknown", CPU_ISA, "the CPU's flags are not known")
    have = set(flags.split())
    model = (text_of(f.get("cpu.model")) or "").lower()
    virtual = "hypervisor" in have or any(w in model for w in ("qemu", "virtual", "kvm"))
    cause = VM_CPU if virtual else CPU_ISA
    lacking = [n for n in ("avx", "avx2", "fma") if n not in have]
    if lacking and f.get("cpu.sigill") is True:
        fix = (
            "expose the host CPU to the VM (-cpu host / host-passthrough)"
            if virtual
            else "install a wheel built for this CPU, or set ATEN_CPU_CAPABILITY=default"
        )
        return Verdict(
            check, "fail", cause, f"the CPU lacks {', '.join(lacking)} and torch died of SIGILL: {fix}"
        )
    if "avx2" not in have:
        return Verdict(
            check, "warn", cause, f"the CPU lacks {', '.join(lacking)}: some torch builds need AVX2"
        )
    return Verdict(check, "pass", cause, "the CPU has avx, avx2 and fma")


def host_compiler(f: dict[str, Scalar]) -> Verdict:
    check = "host-compiler"
    if f.get("toolkit.host_compiler_unsupported") is True:
        return Verdict(
            check,
            "fail",
            HOST_COMPILER,
            (
                "nvcc refused the host compiler as newer than its CUDA release supports: build with a "
                "gcc (or clang) the toolkit lists, e.g. CC=gcc-N CXX=g++-N, or install a newer CUDA "
                "toolkit"
            ),
        )
    return Verdict(check, "unknown", None, "nothing in the text says whether nvcc accepts the host compiler")
