"""Figures of the parser and the judge on labelled reports (``tests/data/env-reports``).

- facts exact: labelled facts read back with exactly the labelled value;
- cause first: on reports whose confirmed cause is the environment, that cause ranked first for
  the text (triage's top match ranked with the verdicts, else the worst indicted cause);
- controls clean: on controls, no check fails.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kbgen.store import Kb


@dataclass
class Figures:
    facts: int = 0
    facts_exact: int = 0
    causes: int = 0
    causes_first: int = 0
    controls: int = 0
    controls_clean: int = 0
    misses: list[str] = field(default_factory=list)

    def ratio(self, part: str) -> float:
        total = {"facts": self.facts, "causes": self.causes, "controls": self.controls}[part]
        done = {"facts": self.facts_exact, "causes": self.causes_first, "controls": self.controls_clean}[part]
        return done / total if total else 1.0

    def line(self) -> str:
        return (
            f"facts exact {self.facts_exact}/{self.facts} ({self.ratio('facts'):.3f}); "
            f"cause first {self.causes_first}/{self.causes} ({self.ratio('causes'):.3f}); "
            f"controls with no fail {self.controls_clean}/{self.controls} ({self.ratio('controls'):.3f})"
        )


def measure(folder: Path, kb: Kb, split: str) -> Figures:
    from kbgen.envreport import environment_of
    from kbgen.envreport.rank import first_cause
    from kbgen.triage import triage_text

    manifest: list[dict[str, Any]] = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    fig = Figures()
    for item in manifest:
        if item["split"] != split:
            continue
        text = (folder / item["file"]).read_text(encoding="utf-8")
        env = environment_of(text)
        for key, value in item["facts"].items():
            fig.facts += 1
            if env.facts.get(key) == value:
                fig.facts_exact += 1
            else:
                fig.misses.append(f"{item['id']}: {key} = {env.facts.get(key)!r}, labelled {value!r}")
        if item["cause"] == "control":
            fig.controls += 1
            failing = [v.check for v in env.verdicts if v.status == "fail"]
            fig.controls_clean += not failing
            if failing:
                fig.misses.append(f"{item['id']}: control, but {', '.join(failing)} fail")
            continue
        fig.causes += 1
        first = first_cause(triage_text(text, kb, item["id"]), kb, env.verdicts)
        if first == item["cause"]:
            fig.causes_first += 1
        else:
            fig.misses.append(f"{item['id']}: first cause {first}, confirmed {item['cause']}")
    return fig
