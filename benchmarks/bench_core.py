"""Core speed goals, printed as figures and ratios against a reference measured in the same run.

1. ``kbgen validate`` on 5,000 generated entries  <= 1.5 x  parsing the same files' frontmatter
   with ``yaml.CSafeLoader`` alone (both as fresh processes, so both pay interpreter start-up).
2. ``kbgen --help``  <= 2 x  ``python -c "import click"``.

Usage: python benchmarks/bench_core.py [--entries 5000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PY = sys.executable

PARSE_ONLY = r"""
import os, sys, yaml
from frontmatter.default_handlers import YAMLHandler
handler = YAMLHandler()
root = sys.argv[1]
for folder in ("errors", "causes", "fixes", "bugs"):
    base = os.path.join(root, "kb", folder)
    for name in sorted(os.listdir(base)):
        with open(os.path.join(base, name), encoding="utf-8") as fh:
            fm, _ = handler.split(fh.read())
        yaml.load(fm, Loader=yaml.CSafeLoader)
"""


def bug_text(n: int, error: str, cause: str, fix: str) -> str:
    day = 20250101 + (n // 900) * 100 + (n % 28)
    steps = "\n".join(
        f"  - id: step-{k}\n    title: Diagnostic step {k} for this bug\n    probe: gpu\n    state: passed\n"
        f"    evidence: gpu.name=NVIDIA GeForce RTX 3060, capability 8.6\n    when: 2025-11-09T23:04:00+09:00"
        for k in range(4)
    )
    return f"""---
id: BUG-{day}-{n % 900 + 1:03d}
title: Illegal memory access in the loss, run {n}
created: 2025-11-09T23:04:00+09:00
updated: 2025-11-10T08:00:00+09:00
status: investigating
severity: high
error: {error}
suspected_causes: [{cause}]
fixes_tried:
  - fix: {fix}
    outcome: failed
    note: moved the sum to the CPU first; the error came back one step later
message: |
  Traceback (most recent call last):
    File "ocr/models/loss/bce_loss.py", line 31, in forward
      positive_count = int(positive.sum().item())
  torch.AcceleratorError: CUDA error: an illegal memory access was encountered
environment:
  collected_at: 2025-11-09T23:10:00+09:00
  host: trainbox
  python: /usr/bin/python3
  values:
    system.os: Ubuntu 22.04.5 LTS
    system.kernel: 6.6.87.2-microsoft-standard-WSL2
    torch-build.version: 2.8.0+cu128
    gpu.name: NVIDIA GeForce RTX 3060
    gpu.capability: '8.6'
    gpu.driver: '581.57'
progress:
{steps}
tags: [loss, wsl2, bench]
history:
  - at: 2025-11-09T23:04:00+09:00
    kind: created
---
## What happened

Training stopped in the loss during epoch {n % 7}. The batch before it looked normal; the
labels came from the new augmentation pipeline.

## Steps to reproduce

Run the training script with the default config for two epochs.
"""


def make_kb(root: Path, entries: int) -> None:
    kb = root / "kb"
    for folder in ("errors", "causes", "fixes", "bugs", "probes"):
        (kb / folder).mkdir(parents=True)
    kinds = max(entries // 50, 1)
    for i in range(kinds):
        (kb / "fixes" / f"fix-{i}.md").write_text(
            f"---\nid: fix-{i}\ntitle: Fix {i}\nsummary: Does the thing.\nsteps:\n  - title: Run it\n"
            f"    command: pip install torch==2.8.0\nrisk: low\nverify_probe: gpu\n---\nWhy it works.\n"
        )
        (kb / "causes" / f"cause-{i}.md").write_text(
            f"---\nid: cause-{i}\ntitle: Cause {i}\nsummary: Something broke.\nevidence: [a, b]\n"
            f"fixes: [fix-{i}]\n---\nDetails.\n"
        )
        (kb / "errors" / f"error-{i}.md").write_text(
            f"---\nid: error-{i}\ntitle: Error {i}\nsummary: It failed.\nsignatures:\n"
            f"  - regex: 'CUDA error: failure number {i}\\b'\ncauses:\n  - cause: cause-{i}\n"
            f"diagnostics:\n  - id: d{i}\n    title: check\n    probe: gpu\n---\nText.\n"
        )
    for n in range(entries - 3 * kinds):
        i = n % kinds
        text = bug_text(n, f"error-{i}", f"cause-{i}", f"fix-{i}")
        bug_id = text.split("\n", 2)[1].removeprefix("id: ")
        (kb / "bugs" / f"{bug_id}.md").write_text(text)


def timed(cmd: list[str], repeat: int, cwd: Path | None = None) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
        runs.append(time.perf_counter() - start)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--entries", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kbgen-bench-") as tmp:
        root = Path(tmp)
        make_kb(root, args.entries)
        size = sum(p.stat().st_size for p in root.rglob("*.md"))
        print(f"generated {args.entries} entries, {size / 1e6:.1f} MB")
        reference = timed([PY, "-c", PARSE_ONLY, str(root)], args.repeat)
        validate = timed([PY, "-m", "kbgen", "--kb", str(root), "validate"], args.repeat)
    click_ref = timed([PY, "-c", "import click"], args.repeat * 3)
    helped = timed([PY, "-m", "kbgen", "--help"], args.repeat * 3)
    rows = [
        ("kbgen validate (5,000 entries)", validate, "CSafeLoader parse only", reference, 1.5),
        ("kbgen --help", helped, 'python -c "import click"', click_ref, 2.0),
    ]
    print(f"{'measure':34} {'seconds':>8}   {'reference':28} {'seconds':>8}   {'ratio':>6} {'goal':>6}")
    for name, value, ref_name, ref, goal in rows:
        ratio = value / ref
        mark = "ok" if ratio <= goal else "OVER"
        print(f"{name:34} {value:8.3f}   {ref_name:28} {ref:8.3f}   {ratio:6.2f} {goal:6.2f} {mark}")


if __name__ == "__main__":
    main()
