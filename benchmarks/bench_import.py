"""How fast `kbgen import --github` turns a large issue export into bugs.

    .venv/bin/python benchmarks/bench_import.py                 # 10,000 issues
    .venv/bin/python benchmarks/bench_import.py --issues 2000   # a quicker run

The issues are generated in the shape the gpu-failure issue form gives them (error message,
severity, a fenced log with a traceback, one in ten with a pasted `kbgen probe --json` report
as its environment), over the error types of the shipped KB, into a project made by
`kbgen init`. Every figure is the whole command as a user runs it, in a new process. The goal
is 10,000 issues in under 60 s (at least 167 issues/s) on a 2-core machine. Beside it, from the
same run: the start-up floor (`kbgen --version`), `kbgen list` over the imported KB (every bug
read once, the least any command that looks at each bug costs) and a second import of the
same file (every issue recognised as imported, nothing written). CPU seconds are printed beside
wall seconds because they move less when the machine is busy. Nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fleet_fixtures import report  # noqa: E402

PY = sys.executable
GOAL_ISSUES, GOAL_S = 10_000, 60.0
ERRORS = [
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 23.69 GiB of which 1.20 GiB is free.",
    "RuntimeError: CUDA error: device-side assert triggered",
    "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled "
    "system error, NCCL version 2.21.5",
    "RuntimeError: CUDA error: no kernel image is available for execution on the device",
    "ValueError: the batch is empty",  # no error type matches
]


def issue_body(rng: random.Random, number: int) -> str:
    message = rng.choice(ERRORS)
    frames = "".join(
        f'  File "/home/dev/project/train_{k}.py", line {rng.randint(1, 400)}, in step_{k}\n'
        f"    loss = model(batch_{k})\n"
        for k in range(rng.randint(2, 8))
    )
    log = f"Epoch 3: 40%|####      | 40/100\nTraceback (most recent call last):\n{frames}{message}\n"
    environment = "_No response_"
    if number % 10 == 0:
        environment = "```json\n" + json.dumps(report(f"gpu{number % 97:02d}"), indent=2) + "\n```"
    return (
        f"### Error message\n\n{message}\n\n### Error type\n\n_No response_\n\n"
        f"### Severity\n\n{rng.choice(['low', 'medium', 'high', 'critical'])}\n\n"
        f"### Log\n\n```text\n{log}```\n\n### Environment\n\n{environment}\n\n"
        "### Reproducing probe\n\n_No response_\n"
    )


def write_issues(path: Path, count: int, seed: int = 11) -> None:
    rng = random.Random(seed)
    issues = [
        {
            "number": n,
            "title": f"Training run {n} stops: {rng.choice(['loss', 'eval', 'data', 'sync'])}",
            "body": issue_body(rng, n),
            "labels": [{"name": "GPU failure"}, {"name": rng.choice(["p1", "p2", "infra"])}],
            "createdAt": f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T10:00:00Z",
        }
        for n in range(1, count + 1)
    ]
    path.write_text(json.dumps(issues), encoding="utf-8")


def run(command: list[str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one command (its own process)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, env=ENV, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr.decode()[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


ENV = {**os.environ, "KBGEN_USER": "bench", "NO_MKDOCS_2_WARNING": "1"}
ENV.pop("KBGEN_BASE", None)  # the knowledge shipped with kbgen, as users get it


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--issues", type=int, default=GOAL_ISSUES)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kbgen-bench-import-") as tmp:
        root = Path(tmp)
        run([PY, "-m", "kbgen", "init"], root)
        write_issues(root / "issues.json", args.issues)
        size = (root / "issues.json").stat().st_size / (1024 * 1024)
        floor, _ = run([PY, "-m", "kbgen", "--version"], root)
        wall, cpu = run([PY, "-m", "kbgen", "import", "--github", "issues.json"], root)
        bugs = sum(1 for _ in (root / "kb" / "bugs").glob("BUG-*.md"))
        listed, _ = run([PY, "-m", "kbgen", "list"], root)
        again, again_cpu = run([PY, "-m", "kbgen", "import", "--github", "issues.json"], root)
        after = sum(1 for _ in (root / "kb" / "bugs").glob("BUG-*.md"))
    print(f"{args.issues:,} issues ({size:.1f} MB of JSON) -> {bugs:,} bugs")
    print(
        f"kbgen import --github:        {wall:7.2f} s  cpu {cpu:6.2f} s  {args.issues / wall:7.1f} issues/s"
    )
    goal_rate = GOAL_ISSUES / GOAL_S
    met = "met" if args.issues / wall >= goal_rate else "NOT met"
    print(f"goal: {GOAL_ISSUES:,} issues in {GOAL_S:.0f} s ({goal_rate:.0f} issues/s): {met}")
    print(
        f"the same import again:        {again:7.2f} s  cpu {again_cpu:6.2f} s  ({after - bugs} bugs added)"
    )
    print(f"kbgen list over the KB:       {listed:7.2f} s  (every bug read once)")
    print(f"kbgen --version (start-up):   {floor:7.2f} s")


if __name__ == "__main__":
    main()
