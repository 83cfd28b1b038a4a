"""Run every benchmark in this folder, one after another, and print their figures.

Benchmarks are not tests: they print measurements and ratios against a reference taken in the
same run, and never fail the build. Run one alone with ``python benchmarks/bench_<name>.py``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def main() -> int:
    here = Path(__file__).resolve().parent
    failed = []
    for script in sorted(here.glob("bench_*.py")):
        print(f"\n== {script.name}", flush=True)
        if subprocess.run([sys.executable, str(script)], check=False).returncode != 0:
            failed.append(script.name)
    if failed:
        print(f"\nbenchmarks that could not run: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
