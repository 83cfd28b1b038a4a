"""How fast `kbgen triage` reads a log, against grep on the same file in the same run.

    .venv/bin/python benchmarks/bench_triage.py              # 200 MB file, keyword-dense file, 1 GB file
    .venv/bin/python benchmarks/bench_triage.py --quick      # 20 MB file only

Logs are generated: training chatter (progress bars redrawn with carriage returns, colour
codes, INFO and warning lines, tracebacks that are not CUDA errors) with one CUDA error at the
end, matched against the signatures of the shipped kb/. Every figure is the whole command as a
user runs it (`kbgen triage --json FILE` in a new process: start-up, KB load, scan), with its
peak memory. The reference is `grep -c -E 'error|Error|ERROR' FILE`, which reads the same
bytes and tests one small pattern; the goal is triage within 10x of it on 200 MB and well
under 10 s on 1 GB. CPU seconds are printed beside wall seconds because they move less when
the machine is busy. Nothing here asserts: the script prints figures.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MB = 1024 * 1024
ERROR = "RuntimeError: CUDA error: an illegal memory access was encountered\n"
GREP = ["grep", "-c", "-E", "error|Error|ERROR"]


def chatter(seed: int = 7) -> Iterator[str]:
    """An endless, varied training log without CUDA errors."""
    rng = random.Random(seed)
    step = 0
    while True:
        step += 1
        kind = rng.random()
        if kind < 0.55:
            yield (
                f"[2025-11-12 12:{step % 60:02d}:{rng.randint(0, 59):02d},{rng.randint(0, 999):03d}]"
                f"[ocr.train][INFO] - step {step} loss={rng.random():.4f} lr=1e-3 "
                f"grad_norm={rng.random():.3f}\n"
            )
        elif kind < 0.75:
            bars = "".join(
                f"Epoch 3: {p:3d}%|{'#' * (p // 10):<10}| {p}/100 [00:{p:02d}<00:10]\r"
                for p in range(0, 100, 25)
            )
            yield bars + "\n"
        elif kind < 0.85:
            yield f"\x1b[33mWARNING\x1b[0m  ocr.datasets.base - Maps caching enabled ({step})\n"
        elif kind < 0.95:
            yield f"wandb: uploading artifact run-{step:06d} ({rng.randint(1, 900)} KB)\n"
        else:
            yield (
                "Traceback (most recent call last):\n"
                '  File "/home/user/ocr/data/loader.py", line 88, in __getitem__\n'
                "    image = cv2.imread(path)\n"
                f"FileNotFoundError: [Errno 2] No such file or directory: 'img_{step}.jpg'\n"
            )


def make_log(path: Path, size: int, body: bytes) -> None:
    """``size`` bytes made of ``body`` repeated, then the CUDA error line."""
    with path.open("wb") as handle:
        written = 0
        while written + len(body) <= size:
            handle.write(body)
            written += len(body)
        handle.write(body[: body.rfind(b"\n", 0, size - written) + 1])
        handle.write(ERROR.encode())


def run(command: list[str]) -> tuple[float, float, float, bytes]:
    """Wall seconds, CPU seconds, peak memory (MB) and stdout of one child process."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        child = subprocess.Popen(command, stdout=out, stderr=subprocess.DEVNULL, cwd=ROOT)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        output = out.read()
    if child.returncode not in (0, 1):  # grep -c exits 1 when it counts 0
        raise SystemExit(f"{command[:4]} failed with exit status {child.returncode}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, output


def triage(path: Path) -> list[str]:
    return [sys.executable, "-m", "kbgen", "triage", "--json", str(path)]


def best_of(command: list[str], repeat: int) -> tuple[float, float, float, bytes]:
    runs = [run(command) for _ in range(repeat)]
    wall = statistics.median(r[0] for r in runs)
    return wall, statistics.median(r[1] for r in runs), max(r[2] for r in runs), runs[-1][3]


def report(label: str, path: Path, repeat: int) -> None:
    size = path.stat().st_size / MB
    nan = float("nan")
    t_grep, c_grep = best_of([*GREP, str(path)], repeat)[:2] if shutil.which("grep") else (nan, nan)
    wall, cpu, peak, output = best_of(triage(path), repeat)
    top = json.loads(output)["matches"][:1]
    print(f"\n{label}: {size:.0f} MB, top match {top[0]['error'] if top else None}")
    print(f"  grep -c -E   {t_grep:6.2f} s   cpu {c_grep:.2f} s")
    print(
        f"  kbgen triage {wall:6.2f} s   = {wall / t_grep:4.1f}x grep   {size / wall:5.0f} MB/s   "
        f"cpu {cpu:.2f} s = {cpu / c_grep:4.1f}x grep's   peak memory {peak:.0f} MB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 MB only")
    parser.add_argument("--size-mb", type=int, default=200, help="size of the main log")
    parser.add_argument("--gb", type=float, default=1.0, help="size of the large log")
    args = parser.parse_args()
    body = "".join(itertools.islice(chatter(11), 340_000)).encode()  # ~32 MB, repeated
    size = 20 if args.quick else args.size_mb
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        tiny = folder / "tiny.log"
        tiny.write_text(ERROR, encoding="utf-8")
        wall, cpu, peak, _ = best_of(triage(tiny), 3)
        print(f"start-up (a one-line log): {wall:.2f} s wall, {cpu:.2f} s cpu, peak memory {peak:.0f} MB")
        main_log = folder / "train.log"
        make_log(main_log, size * MB, body)
        report("training log, error on the last line", main_log, 3)
        main_log.unlink()
        if args.quick:
            return
        dense = folder / "dense.log"
        line = b"worker 3: CUDA error: retrying collective after cudaErrorLaunchTimeout (NCCL WARN)\n"
        make_log(dense, 50 * MB, line * 1000)
        report("every line matches a signature (worst case for the screen)", dense, 1)
        dense.unlink()
        large = folder / "large.log"
        make_log(large, int(args.gb * 1024 * MB), body)
        report(f"{args.gb:g} GB training log", large, 1)


if __name__ == "__main__":
    main()
