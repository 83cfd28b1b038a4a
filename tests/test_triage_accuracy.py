"""Triage against the shipped KB on a labelled set of real logs from public issue threads.

tests/data/logs/manifest.json maps each log file to its label (the error type a person
reading the thread would name, or null for a non-CUDA error that must match nothing), the
thread it was taken from, and the part of the old tune/held-out split it was in. The old
held-out part has been looked at since (see tests/data/logs/README.md), so every log here is
tuning data: the figures over all logs say how well the signatures fit what they were written
against, and each old part is still reported on its own. tests/data/logs-fresh/ and
tests/data/logs-fresh2/ were each measured once as unseen logs and are tuning data too since their
misses were fixed class by class (their READMEs say what changed); how well the signatures
generalise is measured on newer logs gathered separately. This is the one place the tests use the
shipped kb/: the figures measure the KB's signatures as much as the matcher.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import REQUIRED_ERROR_IDS
from kbgen.store import Kb, find_project, load_kb
from kbgen.triage import triage_log

pytestmark = pytest.mark.usefixtures("base_layer")

REPO = Path(__file__).resolve().parent.parent
LOGS = REPO / "tests" / "data" / "logs"
MANIFEST = json.loads((LOGS / "manifest.json").read_text(encoding="utf-8"))
ERROR_TYPES = REQUIRED_ERROR_IDS
SPLITS = ("tune", "heldout")

#: top-1 over every log here (all of them tuning data) when the signatures were last tuned
#: (240 of 240); a change to a signature may not lose more than a few of them
ALL_TOP1 = 0.98

#: the once-fresh set (tests/data/logs-fresh/README.md). Its one measurement as unseen logs, with
#: the signatures as tuned on tests/data/logs: top-1 101 of 107 (0.944), top-3 101 of 107, and 1
#: of 20 negatives matched (an autograd in-place error matched import-hang on a stray
#: KeyboardInterrupt line). Its six misses and the false match were then fixed class by class, so
#: it is tuning data now, and these are the figures reached on it (107 of 107, no false match): a
#: floor that a change may not go under. Generalisation is measured on tests/data/logs-fresh2/.
FRESH = REPO / "tests" / "data" / "logs-fresh"
FRESH_MANIFEST = json.loads((FRESH / "manifest.json").read_text(encoding="utf-8"))
FRESH_TOP1 = 107
FRESH_FALSE_MATCHES = 0

#: the second once-fresh set (tests/data/logs-fresh2/README.md): 133 labelled logs and 28 negatives
#: from threads neither set above uses, committed before the first once-fresh set's misses were
#: fixed. Its one measurement as unseen logs, with the signatures as tuned on both sets above:
#: top-1 117 of 133 (0.880), top-3 117 of 133, and 1 of 28 negatives matched (a tool's own hint
#: "If you encounter CUDA out of memory, try ..." in a host-RAM failure). Its misses were then
#: fixed class by class, so it is tuning data now, and these are the figures reached on it (127
#: of 133, no false match; the six left are hangs told only in prose or cut before any evidence):
#: a floor that a change may not go under.
FRESH2 = REPO / "tests" / "data" / "logs-fresh2"
FRESH2_MANIFEST = json.loads((FRESH2 / "manifest.json").read_text(encoding="utf-8"))
FRESH2_TOP1 = 127
FRESH2_FALSE_MATCHES = 0


def heldout_by_rule(name: str) -> bool:
    return int(hashlib.sha256(name.encode("utf-8")).hexdigest(), 16) % 3 == 0


@dataclass
class Figures:
    logs: int = 0
    top1: int = 0
    top3: int = 0
    negatives: int = 0
    false_matches: list[str] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)

    def add(self, name: str, label: str | None, ranked: list[str]) -> None:
        if label is None:
            self.negatives += 1
            if ranked:
                self.false_matches.append(f"{name}: matched {ranked[:3]}")
            return
        self.logs += 1
        self.top1 += ranked[:1] == [label]
        self.top3 += label in ranked[:3]
        if ranked[:1] != [label]:
            self.misses.append(f"{name}: expected {label}, got {ranked[:3]}")

    def line(self, split: str) -> str:
        return (
            f"{split}: top-1 {self.top1 / self.logs:.3f} ({self.top1}/{self.logs}), "
            f"top-3 {self.top3 / self.logs:.3f} ({self.top3}/{self.logs}), "
            f"false matches on negatives {len(self.false_matches)}/{self.negatives}"
        )


@pytest.fixture(scope="module")
def shipped_kb() -> Kb:
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("KBGEN_BASE", raising=False)
        kb = load_kb(find_project(REPO))
    assert kb.problems == [], [p.format() for p in kb.problems]
    return kb


@pytest.fixture(scope="module")
def figures(shipped_kb: Kb) -> dict[str, Figures]:
    """Figures over all logs ("all"), and over each part of the old split."""
    result = {part: Figures() for part in ("all", *SPLITS)}
    for name, info in sorted(MANIFEST.items()):
        ranked = [m.error for m in triage_log(str(LOGS / name), shipped_kb).matches]
        for fig in (result["all"], result[info["split"]]):
            fig.add(name, info["label"], ranked)
    return result


def measure(folder: Path, manifest: dict[str, dict[str, object]], kb: Kb) -> Figures:
    result = Figures()
    for name, info in sorted(manifest.items()):
        label = info["label"]
        assert label is None or isinstance(label, str)
        result.add(name, label, [m.error for m in triage_log(str(folder / name), kb).matches])
    return result


@pytest.fixture(scope="module")
def fresh_figures(shipped_kb: Kb) -> Figures:
    return measure(FRESH, FRESH_MANIFEST, shipped_kb)


@pytest.fixture(scope="module")
def fresh2_figures(shipped_kb: Kb) -> Figures:
    return measure(FRESH2, FRESH2_MANIFEST, shipped_kb)


def test_corpus_is_complete_and_sourced() -> None:
    files = {p.name for p in LOGS.glob("*.log")}
    assert files == set(MANIFEST), "every log is listed in manifest.json and every listed log exists"
    for name, info in MANIFEST.items():
        assert info["source"].startswith("https://github.com/"), name
        assert info["label"] is None or info["label"] in ERROR_TYPES, name
        assert info["split"] in SPLITS, name
    per_type = Counter(info["label"] for info in MANIFEST.values() if info["label"])
    assert {t: n for t, n in per_type.items() if n < 5} == {}
    assert set(per_type) == ERROR_TYPES
    assert sum(info["label"] is None for info in MANIFEST.values()) >= 30


def test_split_follows_the_file_name_rule() -> None:
    # no log can be moved into or out of the held-out split by hand: the rule decides for every
    # log added with the split; the logs that predate it are tune (signatures were written on them)
    for name, info in MANIFEST.items():
        expected = "tune" if info.get("before_split") else ("heldout" if heldout_by_rule(name) else "tune")
        assert info["split"] == expected, name
    assert sum(info["split"] == "heldout" for info in MANIFEST.values()) >= 60


def test_top1_and_top3_accuracy_on_all_logs(
    figures: dict[str, Figures], capsys: pytest.CaptureFixture[str]
) -> None:
    with capsys.disabled():
        print()
        print(f"triage accuracy, {figures['all'].line('all logs (tuning data)')}")
        for split in SPLITS:
            print(f"triage accuracy, {figures[split].line(f'old {split} split')}")
        for miss in figures["all"].misses:
            print(f"  miss: {miss}")
    every = figures["all"]
    assert every.logs == sum(figures[split].logs for split in SPLITS)
    assert every.top1 / every.logs >= ALL_TOP1, every.line("all logs")
    assert every.top3 >= every.top1


def test_no_false_matches_on_non_cuda_errors(figures: dict[str, Figures]) -> None:
    assert figures["all"].negatives >= 30
    assert figures["all"].false_matches == []


def test_every_shipped_error_type_is_exercised(shipped_kb: Kb) -> None:
    assert set(shipped_kb.errors) >= ERROR_TYPES


def test_fresh_set_is_complete_sourced_and_new() -> None:
    assert {p.name for p in FRESH.glob("*.log")} == set(FRESH_MANIFEST)
    old_sources = {info["source"] for info in MANIFEST.values()}
    for name, info in FRESH_MANIFEST.items():
        assert info["source"].startswith("https://github.com/"), name
        assert info["source"] not in old_sources, f"{name}: a thread the tuning data already uses"
        assert info["label"] is None or info["label"] in ERROR_TYPES, name
        assert info["split"] == "fresh", name
    per_type = Counter(info["label"] for info in FRESH_MANIFEST.values() if info["label"])
    assert set(per_type) == ERROR_TYPES and min(per_type.values()) >= 3
    assert sum(info["label"] is None for info in FRESH_MANIFEST.values()) >= 15


def test_accuracy_on_the_once_fresh_set_never_drops(
    fresh_figures: Figures, capsys: pytest.CaptureFixture[str]
) -> None:
    with capsys.disabled():
        print()
        print(f"triage accuracy, {fresh_figures.line('once-fresh set (tuning data now)')}")
        for miss in fresh_figures.misses:
            print(f"  miss: {miss}")
        for false in fresh_figures.false_matches:
            print(f"  false match: {false}")
    assert fresh_figures.top1 >= FRESH_TOP1, fresh_figures.line("once-fresh set")
    assert len(fresh_figures.false_matches) <= FRESH_FALSE_MATCHES, fresh_figures.false_matches


def test_second_fresh_set_is_complete_sourced_and_new() -> None:
    assert {p.name for p in FRESH2.glob("*.log")} == set(FRESH2_MANIFEST)
    older = {info["source"] for info in [*MANIFEST.values(), *FRESH_MANIFEST.values()]}
    sources = [info["source"] for info in FRESH2_MANIFEST.values()]
    assert len(set(sources)) == len(sources), "one log per thread"
    for name, info in FRESH2_MANIFEST.items():
        assert info["source"].startswith("https://"), name
        assert info["source"] not in older, f"{name}: a thread the tuning data already uses"
        assert info["label"] is None or info["label"] in ERROR_TYPES, name
        assert info["split"] == "fresh2", name
    per_type = Counter(info["label"] for info in FRESH2_MANIFEST.values() if info["label"])
    assert set(per_type) == ERROR_TYPES and min(per_type.values()) >= 5
    assert sum(info["label"] is None for info in FRESH2_MANIFEST.values()) >= 25


def test_accuracy_on_the_second_once_fresh_set_never_drops(
    fresh2_figures: Figures, capsys: pytest.CaptureFixture[str]
) -> None:
    with capsys.disabled():
        print()
        print(f"triage accuracy, {fresh2_figures.line('second once-fresh set (tuning data now)')}")
        for miss in fresh2_figures.misses:
            print(f"  miss: {miss}")
        for false in fresh2_figures.false_matches:
            print(f"  false match: {false}")
    assert fresh2_figures.top1 >= FRESH2_TOP1, fresh2_figures.line("second once-fresh set")
    assert len(fresh2_figures.false_matches) <= FRESH2_FALSE_MATCHES, fresh2_figures.false_matches
