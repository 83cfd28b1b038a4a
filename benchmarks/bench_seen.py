"""What remembering crashes costs, printed beside a reference taken in the same run.

1. ``kbgen validate`` on 1,000 bugs that carry a stored fingerprint  <=  1.10 x  the same bugs
   without one (the goal: fingerprinting adds at most 10 % to validate).
2. ``kbgen migrate`` fingerprinting those 1,000 bugs, once (seconds; no goal).
3. ``kbgen triage --json`` of a crash log against the 1,000 bugs (known_bugs included), beside
   triage of the same log in a project without bugs.

Usage: python benchmarks/bench_seen.py [--bugs 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_core import PY, make_kb, timed

LOG = (
    "Traceback (most recent call last):\n"
    '  File "ocr/models/loss/bce_loss.py", line 31, in forward\n'
    "    positive_count = int(positive.sum().item())\n"
    "torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n"
)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bugs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kbgen-bench-seen-") as tmp:
        plain, marked, empty = Path(tmp) / "plain", Path(tmp) / "marked", Path(tmp) / "empty"
        make_kb(plain, args.bugs + 3 * max(args.bugs // 50, 1))
        shutil.copytree(plain, marked)
        shutil.copytree(plain, empty)
        shutil.rmtree(empty / "kb" / "bugs")
        (empty / "kb" / "bugs").mkdir()
        bugs = sum(1 for _ in (plain / "kb" / "bugs").glob("*.md"))
        migrate = timed([PY, "-m", "kbgen", "--kb", str(marked), "migrate"], 1)
        stored = sum("fingerprint:" in p.read_text() for p in (marked / "kb" / "bugs").glob("*.md"))
        print(f"{bugs} bugs; kbgen migrate fingerprinted {stored} of them in {migrate:.2f} s")
        validate = [PY, "-m", "kbgen", "--kb"]
        without = timed([*validate, str(plain), "validate"], args.repeat)
        with_ = timed([*validate, str(marked), "validate"], args.repeat)
        print(f"validate, no fingerprints:    {without:6.2f} s")
        print(f"validate, with fingerprints:  {with_:6.2f} s   ratio {with_ / without:.3f}  (goal <= 1.10)")
        log = Path(tmp) / "crash.log"
        log.write_text(LOG)
        alone = timed([PY, "-m", "kbgen", "--kb", str(empty), "triage", "--json", str(log)], args.repeat)
        known = timed([PY, "-m", "kbgen", "--kb", str(marked), "triage", "--json", str(log)], args.repeat)
        print(f"triage, project without bugs: {alone:6.2f} s")
        print(f"triage, against {bugs} bugs:  {known:6.2f} s   ratio {known / alone:.3f}  (no goal)")


if __name__ == "__main__":
    main()
