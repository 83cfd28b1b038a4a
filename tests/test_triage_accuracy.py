"""Triage against the shipped KB on a labelled set of real logs from public issue threads.

tests/data/logs/manifest.json maps each log file to its label (the error type a person
reading the thread would name) and the thread it was taken from. This is the one place the
tests use the shipped kb/: the figures measure the KB's signatures as much as the matcher.
"""

from __future__ import annotations

import json
from collections import Counter
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


@pytest.fixture(scope="module")
def shipped_kb() -> Kb:
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("KBGEN_BASE", raising=False)
        kb = load_kb(find_project(REPO))
    assert kb.problems == [], [p.format() for p in kb.problems]
    return kb


def test_corpus_is_complete_and_sourced() -> None:
    files = {p.name for p in LOGS.glob("*.log")}
    assert files == set(MANIFEST), "every log is listed in manifest.json and every listed log exists"
    for name, info in MANIFEST.items():
        assert info["source"].startswith("https://github.com/"), name
        assert info["label"] in ERROR_TYPES, name
    per_type = Counter(info["label"] for info in MANIFEST.values())
    assert {t: n for t, n in per_type.items() if n < 3} == {}
    assert set(per_type) == ERROR_TYPES


def test_top1_and_top3_accuracy(shipped_kb: Kb, capsys: pytest.CaptureFixture[str]) -> None:
    misses = []
    top1 = top3 = 0
    for name, info in sorted(MANIFEST.items()):
        ranked = [m.error for m in triage_log(str(LOGS / name), shipped_kb).matches]
        top1 += ranked[:1] == [info["label"]]
        top3 += info["label"] in ranked[:3]
        if ranked[:1] != [info["label"]]:
            misses.append(f"{name}: expected {info['label']}, got {ranked[:3]}")
    total = len(MANIFEST)
    figures = (
        f"triage accuracy on {total} logs: top-1 {top1 / total:.3f} ({top1}/{total}), "
        f"top-3 {top3 / total:.3f} ({top3}/{total})"
    )
    with capsys.disabled():
        print(f"\n{figures}")
        for miss in misses:
            print(f"  miss: {miss}")
    assert top1 / total >= 0.90, figures
    assert top3 >= top1


def test_every_shipped_error_type_is_exercised(shipped_kb: Kb) -> None:
    assert set(shipped_kb.errors) >= ERROR_TYPES
