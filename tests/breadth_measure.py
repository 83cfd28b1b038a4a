"""Measure triage on the neutral sample of real GPU failure threads in tests/data/breadth/.

Each thread is labelled with the answer a person reading it would give: an error id, or
``not-gpu`` for a plain error in the program, or ``outside:<family>`` for a GPU failure no
error type covers. Triage's answer is its top match, else ``not-gpu`` when it says so, else
nothing (silent). Over the threads whose posted text shows the error line:

- right: the top match is the label, or the verdict is ``not-gpu`` and so is the label;
- false: a top match that is not the label, or ``not-gpu`` for a thread that is a GPU failure;
- silent: neither (no match, verdict ``unknown``).

    python tests/breadth_measure.py heldout      # or tune, fresh, all; --misses lists them
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data" / "breadth"
REPO = DATA.parents[2]


@dataclass
class Figures:
    shown: int = 0
    right: int = 0
    false: int = 0
    silent: int = 0
    by_family: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    misses: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.right / self.shown if self.shown else 0.0


#: samplers whose whole sample was gathered after the tuning, to be measured once as it stands
FRESH = ("c",)


def entries(split: str) -> dict[str, dict[str, Any]]:
    """``{file: entry}`` of the sample for ``split``: ``tune`` and ``heldout`` (samplers a and b,
    split by split.json), ``fresh`` (the later samplers, whole), or ``all``."""
    taken: dict[str, dict[str, Any]] = {}
    fresh: dict[str, dict[str, Any]] = {}
    for manifest in sorted(DATA.glob("manifest-*.json")):
        sampler = manifest.stem.removeprefix("manifest-")
        (fresh if sampler in FRESH else taken).update(
            json.loads(manifest.read_text(encoding="utf-8"))["taken"]
        )
    if split == "fresh":
        return fresh
    if split == "all":
        return {**taken, **fresh}
    held = set(json.loads((DATA / "split.json").read_text(encoding="utf-8"))["heldout"])
    return {k: v for k, v in taken.items() if (k in held) == (split == "heldout")}


def answer(path: Path) -> tuple[str | None, str]:
    """Triage's top match (or None) and its verdict, as ``kbgen triage --json`` prints them."""
    from click.testing import CliRunner

    from kbgen.cli import cli

    result = CliRunner().invoke(cli, ["--kb", str(REPO), "triage", "--json", str(path)])
    data = json.loads(result.output)
    top = data["matches"][0]["error"] if data["matches"] else None
    return top, str(data.get("verdict", "unknown"))  # kbgen before the verdict: never not-gpu


def measure(split: str) -> Figures:
    figures = Figures()
    for name, entry in sorted(entries(split).items()):
        label, family = entry["label"], entry["family"]
        if not entry.get("error_line_shown"):
            figures.by_family[family]["not shown"] += 1
            continue
        figures.shown += 1
        top, verdict = answer(DATA / name)
        said = top if top is not None else ("not-gpu" if verdict == "not-gpu" else None)
        if said == label:
            outcome = "right"
            figures.right += 1
        elif said is None:
            outcome = "silent"
            figures.silent += 1
            figures.misses.append(f"silent {name}: label {label}")
        else:
            outcome = "false"
            figures.false += 1
            figures.misses.append(f"FALSE  {name}: label {label}, said {said}")
        figures.by_family[family][outcome] += 1
    return figures


def report(split: str, figures: Figures, misses: bool) -> str:
    lines = [
        f"{split}: right {figures.right} of {figures.shown} ({figures.rate:.1%}), false {figures.false}, "
        f"silent {figures.silent}",
        f"{'family':<14} {'right':>6} {'false':>6} {'silent':>7} {'not shown':>10}",
    ]
    for family, counts in sorted(figures.by_family.items()):
        row = [counts[k] for k in ("right", "false", "silent", "not shown")]
        lines.append(f"{family:<14} {row[0]:>6} {row[1]:>6} {row[2]:>7} {row[3]:>10}")
    if misses:
        lines += figures.misses
    return "\n".join(lines)


if __name__ == "__main__":
    sys.path.insert(0, str(REPO / "src"))
    which = sys.argv[1] if len(sys.argv) > 1 else "heldout"
    print(report(which, measure(which), "--misses" in sys.argv))
