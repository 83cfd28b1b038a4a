"""Measure how well kbgen recognises a crash it has seen: the real pairs and distractors of
tests/data/seen, filed and triaged through the CLI as a user would, and the robustness set."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kbgen.cli import cli

DATA = Path(__file__).parent / "data" / "seen"


@dataclass
class Figures:
    pairs: int = 0
    pairs_hit: int = 0
    distractors: int = 0
    distractors_claimed: int = 0
    misses: list[str] = field(default_factory=list)
    claimed: list[str] = field(default_factory=list)


def manifest() -> dict[str, Any]:
    return json.loads((DATA / "manifest.json").read_text(encoding="utf-8"))


def file_bug(kb: Path, log: Path) -> str:
    result = CliRunner().invoke(
        cli, ["--kb", str(kb), "new-bug", "--from-log", str(log), "--json", "--severity", "high"]
    )
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if x.startswith("{"))
    return str(json.loads(line)["id"])


def known(kb: Path, log: Path) -> list[dict[str, Any]]:
    result = CliRunner().invoke(cli, ["--kb", str(kb), "triage", str(log), "--json"])
    assert result.exit_code in (0, 1), result.output
    return list(json.loads(result.output).get("known_bugs", []))


def measure(kb: Path, split: str) -> Figures:
    """File each first log of ``split``, then triage each later log and each distractor."""
    data = manifest()
    figures = Figures()
    filed = {p["id"]: file_bug(kb, DATA / p["first"]["log"]) for p in data["pairs"] if p["split"] == split}
    for pair in data["pairs"]:
        if pair["split"] != split:
            continue
        figures.pairs += 1
        ranked = known(kb, DATA / pair["later"]["log"])
        if ranked and ranked[0]["id"] == filed[pair["id"]] and ranked[0]["same"]:
            figures.pairs_hit += 1
        else:
            figures.misses.append(pair["id"])
    for dis in data["distractors"]:
        if dis["split"] != split:
            continue
        figures.distractors += 1
        if any(k["same"] for k in known(kb, DATA / dis["log"])):
            figures.distractors_claimed += 1
            figures.claimed.append(dis["id"])
    return figures
