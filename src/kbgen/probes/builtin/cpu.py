"""CPU model and instruction-set flags, against the instruction set torch dispatches to."""

PROBE = {
    "id": "cpu",
    "title": "CPU and instruction sets",
    "description": "CPU model and ISA flags (sse4.2, avx, avx2, fma, avx512*, amx*), "
    "torch.backends.cpu.get_cpu_capability(), and a verdict when torch uses an instruction set the CPU "
    "lacks (importing torch then dies of SIGILL, which is reported as this probe's failure).",
    "needs": ["torch?"],
    "timeout": 20,
    "default": True,
}

import os
import platform

# /proc/cpuinfo spelling -> the name people search for
INTERESTING = {
    "sse4_1": "sse4.1",
    "sse4_2": "sse4.2",
    "avx": "avx",
    "avx2": "avx2",
    "fma": "fma",
    "f16c": "f16c",
    "avx_vnni": "avx-vnni",
    "avx512f": "avx512f",
    "avx512bw": "avx512bw",
    "avx512dq": "avx512dq",
    "avx512vl": "avx512vl",
    "avx512cd": "avx512cd",
    "avx512_vnni": "avx512-vnni",
    "avx512_bf16": "avx512-bf16",
    "avx512_fp16": "avx512-fp16",
    "amx_tile": "amx-tile",
    "amx_bf16": "amx-bf16",
    "amx_int8": "amx-int8",
    "asimd": "neon",
    "sve": "sve",
}
# what torch's capability string requires of the CPU
REQUIRES = {"AVX2": ("avx2", "fma"), "AVX512": ("avx512f", "avx512bw", "avx512dq", "avx512vl")}


def _cpuinfo():
    """The first processor's fields, plus socket and core counts over all of them."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return {}
    info, sockets = {}, set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key == "physical id":
            sockets.add(value)
        if key and key not in info:
            info[key] = value
    info["sockets"] = len(sockets) or None
    return info


def _torch_capability():
    """(capability, error): the ISA torch dispatches to, or why it cannot tell."""
    try:
        import torch
    except ImportError as exc:
        return None, str(exc) or type(exc).__name__
    try:
        return str(torch.backends.cpu.get_cpu_capability()), None
    except Exception as exc:  # older torch has no get_cpu_capability
        return None, f"{type(exc).__name__}: {exc}"


def _facts(info, raw):
    model = info.get("model name") or info.get("Model name") or info.get("Hardware") or platform.processor()
    facts = {
        "model": model or None,
        "vendor": info.get("vendor_id") or info.get("CPU implementer"),
        "arch": platform.machine(),
        "count": os.cpu_count(),
        "sockets": info.get("sockets"),
        "cores_per_socket": int(info["cpu cores"]) if info.get("cpu cores", "").isdigit() else None,
        "cache": info.get("cache size"),
        "flags": " ".join(sorted(INTERESTING[f] for f in raw if f in INTERESTING)),
    }
    for name in ("avx", "avx2", "avx512f"):
        facts[name] = name in raw
    return facts


def verdict(facts, raw, capability, error):
    """(status, message) from the CPU's flags and what torch says (or how importing it failed)."""
    model, flags = facts["model"], facts["flags"] or "none found"
    x86 = platform.machine() in ("x86_64", "AMD64")
    if error and "SIGILL" in error:
        missing = [n for n in ("avx", "avx2", "fma") if x86 and n not in raw]
        if missing:
            lacks = f"; the CPU lacks {', '.join(missing)}"
        else:
            lacks = (
                "; it has avx, avx2 and fma: suspect a build for a newer CPU (avx512) or a damaged install"
            )
        return "fail", (
            f"importing torch dies of SIGILL (illegal instruction): this torch build uses "
            f"instructions the CPU ({model}) does not have{lacks}. CPU flags: {flags}"
        )
    if capability is None:
        return "pass", f"{model}; flags: {flags}; torch not checked ({error})"
    lacking = [f for f in REQUIRES.get(capability, ()) if raw and f not in raw]
    if lacking:
        return "fail", (
            f"torch dispatches to {capability} but the CPU lacks {', '.join(lacking)}: expect "
            "SIGILL (illegal instruction); set ATEN_CPU_CAPABILITY=default to work around"
        )
    if x86 and raw and "avx" not in raw:
        return (
            "warn",
            f"{model} has no AVX; torch runs its slow default kernels (and some builds need AVX to import)",
        )
    return "pass", f"{model}; torch CPU capability {capability}; flags: {flags}"


def run():
    info = _cpuinfo()
    raw = set((info.get("flags") or info.get("Features") or "").split())
    facts = _facts(info, raw)
    capability, error = _torch_capability()
    facts["capability"] = capability
    status, message = verdict(facts, raw, capability, error)
    return {"status": status, "message": message, "facts": facts}
