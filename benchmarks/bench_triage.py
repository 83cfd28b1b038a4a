"""How fast `kbgen triage` reads a log, against references measured in the same run.

    .venv/bin/python benchmarks/bench_triage.py            # 50 MB file, keyword-dense file, 1 GB stream
    .venv/bin/python benchmarks/bench_triage.py --quick    # 10 MB file only

Logs are generated: training chatter (progress bars redrawn with carriage returns, colour
codes, INFO and warning lines, tracebacks that are not CUDA errors) with one CUDA error near
the end, matched against the signatures of the shipped kb/. References:

- read-only: reading the same file in the same block size and doing nothing (the I/O floor);
- naive: every signature's regex on every line, the obvious implementation (run on a slice
  and scaled, since it is slow).
"""

from __future__ import annotations

import argparse
import io
import itertools
import random
import re
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from kbgen.store import find_project, load_kb  # noqa: E402
from kbgen.triage import compile_signatures, triage_log  # noqa: E402
from kbgen.triage.scan import BLOCK, scan_stream  # noqa: E402

MB = 1024 * 1024
ERROR = "RuntimeError: CUDA error: an illegal memory access was encountered\n"


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


def make_log(path: Path, size: int) -> None:
    with path.open("w", encoding="utf-8") as handle:
        written = 0
        buffer: list[str] = []
        for line in chatter():
            buffer.append(line)
            written += len(line)
            if len(buffer) >= 10_000:
                handle.write("".join(buffer))
                buffer.clear()
            if written >= size:
                break
        handle.write("".join(buffer))
        handle.write(ERROR)


class GeneratedStream(io.RawIOBase):
    """``size`` bytes of log handed out as they are read, then the error line.

    A 32 MB stretch of chatter is generated once and repeated, so the time measured is the
    scanner's, not Python building strings; the scanner never sees more than a block at once.
    """

    def __init__(self, size: int) -> None:
        self.left = size
        self.chunk = "".join(itertools.islice(chatter(11), 340_000)).encode()
        self.offset = 0
        self.tail = ERROR.encode()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self.left <= 0:
            out, self.tail = self.tail[: len(buffer)], self.tail[len(buffer) :]
        else:
            want = min(len(buffer), self.left, len(self.chunk) - self.offset)
            out = self.chunk[self.offset : self.offset + want]
            self.offset = (self.offset + want) % len(self.chunk)
            self.left -= want
        buffer[: len(out)] = out
        return len(out)


def timed(function, repeat: int = 3) -> float:  # type: ignore[no-untyped-def]
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def read_only(path: Path) -> None:
    with path.open("rb") as handle:
        while handle.read(BLOCK):
            pass


def naive(path: Path, patterns: list[re.Pattern[str]], limit: int) -> None:
    with path.open(encoding="utf-8", errors="replace") as handle:
        text = handle.read(limit)
    for line in text.splitlines():
        for pattern in patterns:
            pattern.search(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 MB only")
    parser.add_argument("--stream-gb", type=float, default=1.0, help="size of the generated stream")
    args = parser.parse_args()
    kb = load_kb(find_project(ROOT))
    signatures, _ = compile_signatures(kb)
    patterns = [s.regex for s in signatures]
    print(f"KB: {len(kb.errors)} error types, {len(signatures)} signatures")
    size = 10 * MB if args.quick else 50 * MB
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "train.log"
        make_log(path, size)
        real = path.stat().st_size / MB
        report = triage_log(str(path), kb)
        assert report.matches and report.matches[0].error == "cuda-illegal-memory-access", report.matches[:1]
        t_triage = timed(lambda: triage_log(str(path), kb))
        t_read = timed(lambda: read_only(path))
        slice_bytes = 2 * MB
        t_naive = timed(lambda: naive(path, patterns, slice_bytes), repeat=1) * (real * MB / slice_bytes)
        print(f"\n{real:.0f} MB log, {report.lines:,} lines, error on the last line")
        print(
            f"  triage      {t_triage:6.2f} s   {t_triage / real * 10:5.3f} s per 10 MB   "
            f"{real / t_triage:6.0f} MB/s"
        )
        print(
            f"  read-only   {t_read:6.3f} s   (triage = {t_triage / t_read:.1f}x the time to read the file)"
        )
        print(
            f"  naive       {t_naive:6.2f} s   (estimated from {slice_bytes // MB} MB; "
            f"triage is {t_naive / t_triage:.0f}x faster)"
        )
        if args.quick:
            return
        dense = Path(tmp) / "dense.log"
        with dense.open("w", encoding="utf-8") as handle:
            line = "worker 3: CUDA error: retrying collective after cudaErrorLaunchTimeout (NCCL WARN)\n"
            handle.write(line * (20 * MB // len(line)))
        t_dense = timed(lambda: triage_log(str(dense), kb), repeat=1)
        dense_mb = dense.stat().st_size / MB
        print(f"\n{dense_mb:.0f} MB log where every line holds a keyword (worst case for the keyword screen)")
        print(f"  triage      {t_dense:6.2f} s   {t_dense / dense_mb * 10:5.3f} s per 10 MB")
    gigabytes = args.stream_gb
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    stream = io.BufferedReader(GeneratedStream(int(gigabytes * 1024 * MB)), buffer_size=BLOCK)
    result = scan_stream(stream, "<generated>", signatures)
    elapsed = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    found = [key for key, hits in result.hits.items() if hits.count]
    print(f"\n{gigabytes:g} GB stream ({result.lines:,} lines), never held whole")
    print(f"  scan        {elapsed:6.1f} s   {elapsed / (gigabytes * 1024) * 10:5.3f} s per 10 MB")
    print(
        f"  peak memory {peak / 1024:6.0f} MB (was {before / 1024:.0f} MB before the stream); "
        f"matched {found[:2]}"
    )


if __name__ == "__main__":
    main()
