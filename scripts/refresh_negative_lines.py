#!/usr/bin/env python3
"""Refresh the base layer's negative lines from the negative logs of the triage test sets.

    python scripts/refresh_negative_lines.py          # rewrite knowledge/data/negative-lines.json
    python scripts/refresh_negative_lines.py --check  # exit 1 when the file is out of date

A negative log (``"label": null`` in a ``tests/data/logs*/manifest.json``) is a real failure
posted in a public thread that is no GPU failure. ``kbgen new-error`` refuses a drafted signature
that matches any of their lines: such a signature would name logs it has nothing to do with.
Run it after a test set's negatives change (a log added, or relabelled to an error type).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "src" / "kbgen" / "knowledge" / "data" / "negative-lines.json"
MAX_LINE = 500


def collect() -> tuple[list[str], list[str]]:
    lines: dict[str, None] = {}
    sources: dict[str, None] = {}
    for manifest in sorted(ROOT.glob("tests/data/logs*/manifest.json")):
        entries = json.loads(manifest.read_text(encoding="utf-8"))
        for name, entry in sorted(entries.items()):
            if not isinstance(entry, dict) or entry.get("label") is not None:
                continue
            sources[entry["source"]] = None
            text = (manifest.parent / name).read_text(encoding="utf-8", errors="replace")
            for line in text.splitlines():
                line = line.strip()
                if 8 <= len(line) <= MAX_LINE:
                    lines[line] = None
    return list(lines), list(sources)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say whether the file is current")
    args = parser.parse_args()
    lines, sources = collect()
    if args.check:
        current = json.loads(TARGET.read_text(encoding="utf-8"))
        same = current.get("lines") == lines and current.get("sources") == sources
        print("negative-lines.json is current" if same else "negative-lines.json is out of date: refresh it")
        return 0 if same else 1
    data = {
        "about": "Lines of real failure logs that are no GPU failure (the negatives of kbgen's triage "
        "test sets). A drafted signature must match none of them.",
        "refreshed": f"{dt.date.today():%Y-%m-%d}",
        "sources": sources,
        "lines": lines,
    }
    TARGET.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{TARGET.relative_to(ROOT)}: {len(lines)} lines from {len(sources)} threads")
    return 0


if __name__ == "__main__":
    sys.exit(main())
