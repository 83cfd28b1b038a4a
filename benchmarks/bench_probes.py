"""`kbgen probe` (the full default set) against the two references it must beat, in one run.

Goals:  kbgen probe --json  <=  0.75 x  `python -m torch.utils.collect_env`
        kbgen probe --json  <=  1.25 x  `python -c "import torch"`

All three run as fresh processes in the same interpreter (the one with torch), interleaved, and
the medians are compared. It also checks that the report holds a fact for every field collect_env
prints that applies to this machine.

Usage: python benchmarks/bench_probes.py [--repeat 7] [--python PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

# collect_env's fields -> the report's facts that carry them; None = only where it applies (ROCm, a GPU)
FIELDS: dict[str, tuple[str, ...] | None] = {
    "PyTorch version": ("torch-build.version",),
    "Is debug build": ("torch-build.debug",),
    "CUDA used to build PyTorch": ("torch-build.cuda",),
    "ROCM used to build PyTorch": ("torch-build.hip",),
    "OS": ("system.os", "system.arch"),
    "GCC version": ("system.gcc",),
    "Clang version": ("system.clang",),
    "CMake version": ("system.cmake",),
    "Libc version": ("system.libc",),
    "Python version": ("system.python_build", "system.python_bits"),
    "Python platform": ("system.platform",),
    "Is CUDA available": ("torch-build.cuda_available", "gpu.cuda_available"),
    "CUDA runtime version (nvcc)": ("compat.toolkit",),
    "CUDA_MODULE_LOADING set to": ("torch-build.cuda_module_loading",),
    "GPU models and configuration": ("gpu.count",),
    "Nvidia driver version": ("gpu.driver",),
    "cuDNN version": ("torch-build.cudnn",),
    "Is XPU available": ("torch-build.xpu_available",),
    "HIP runtime version": ("torch-build.hip",),
    "MIOpen runtime version": None,
    "Is XNNPACK available": ("torch-build.xnnpack",),
    "Caching allocator config": ("debug-env.PYTORCH_CUDA_ALLOC_CONF",),
    "CPU (lscpu)": ("cpu.model", "cpu.vendor", "cpu.arch", "cpu.count", "cpu.sockets", "cpu.flags"),
    "Versions of relevant libraries": ("packages.torch",),
    "conda": ("system.conda",),
}


def timed(command: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return elapsed, done.stdout


def coverage(report: dict) -> list[str]:
    facts = {f"{r['id']}.{k}" for r in report["results"] for k in r["facts"]}
    lines, missing = [], 0
    for field, keys in FIELDS.items():
        if keys is None:
            lines.append(f"  {field:<32} n/a here (ROCm only)")
            continue
        absent = [k for k in keys if k not in facts]
        missing += bool(absent)
        lines.append(f"  {field:<32} {'MISSING ' + ', '.join(absent) if absent else ', '.join(keys)}")
    extra = len(facts) - len({k for keys in FIELDS.values() if keys for k in keys})
    lines.append(
        f"  fields covered: {len(FIELDS) - missing - 1} of {len(FIELDS) - 1} that apply; "
        f"{extra} further facts (WSL, cgroup limits, /dev/shm, ISA verdict, compat verdicts...)"
    )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--python", default=sys.executable, help="interpreter with torch (default: this one)")
    args = parser.parse_args()
    kbgen = str(Path(args.python).with_name("kbgen"))
    commands = {
        "kbgen probe --json": [kbgen, "probe", "--json", "--python", args.python],
        "collect_env": [args.python, "-m", "torch.utils.collect_env"],
        "import torch": [args.python, "-c", "import torch"],
    }
    for command in commands.values():  # warm the page cache once; not measured
        timed(command)
    times: dict[str, list[float]] = {name: [] for name in commands}
    report: dict = {}
    for round_ in range(args.repeat):
        names = list(commands)
        for name in names[round_ % 3 :] + names[: round_ % 3]:  # rotate the order against drift
            elapsed, out = timed(commands[name])
            times[name].append(elapsed)
            if name.startswith("kbgen"):
                report = json.loads(out)
    median = {name: statistics.median(values) for name, values in times.items()}
    print(f"medians of {args.repeat} runs each (interleaved), interpreter {args.python}")
    for name, value in median.items():
        spread = f"{min(times[name]):.2f}-{max(times[name]):.2f}"
        print(f"  {name:<20} {value:6.2f} s   (range {spread} s)")
    probe = median["kbgen probe --json"]
    for reference, goal in (("collect_env", 0.75), ("import torch", 1.25)):
        ratio = probe / median[reference]
        verdict = "ok" if ratio <= goal else "OVER"
        print(f"  kbgen probe / {reference:<13} {ratio:5.2f}   goal <= {goal:.2f}   {verdict}")
    torch_import = report.get("torch_import") or {}
    print(
        f"  inside kbgen: torch import in the worker {torch_import.get('seconds', 0):.2f} s, "
        f"probe run {report.get('wall_s', 0):.2f} s, {len(report.get('results', []))} probes"
    )
    print("collect_env fields in the report:")
    print("\n".join(coverage(report)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
