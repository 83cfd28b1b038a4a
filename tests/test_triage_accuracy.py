"""Triage against the shipped KB on a labelled set of real logs from public issue threads.

tests/data/logs/manifest.json maps each log file to its label (the error type a person
reading the thread would name, or null for a non-CUDA error that must match nothing), the
thread it was taken from, and the part of the old tune/held-out split it was in. The old
held-out part has been looked at since (see tests/data/logs/README.md), so every log here is
tuning data: the figures over all logs say how well the signatures fit what they were written
against, and each old part is still reported on its own. tests/data/logs-fresh/ and
tests/data/logs-fresh2/ were each measured once as unseen logs and are tuning data too since their
misses were fixed class by class (their READMEs say what changed); how well the signatures
generalise is measured on tests/data/logs-fresh3/, the held-out split, gathered separately and
never tuned on. This is the one place the tests use the shipped kb/: the figures measure the KB's
signatures as much as the matcher.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from conftest import REQUIRED_ERROR_IDS
from kbgen.store import Kb, find_project, load_kb
from kbgen.triage import triage_log

pytestmark = pytest.mark.usefixtures("base_layer")

REPO = Path(__file__).resolve().parent.parent
LOGS = REPO / "tests" / "data" / "logs"
MANIFEST = json.loads((LOGS / "manifest.json").read_text(encoding="utf-8"))
#: a label may be any error type the base layer must ship
ERROR_TYPES = REQUIRED_ERROR_IDS
#: the error types the sets were gathered for, each with its floor of logs; a label may also be a
#: type added since (a negative relabelled when a type for it arrived, as READMEs there record)
GATHERED_FOR = frozenset(
    {
        "cpu-index-out-of-range",
        "cpu-illegal-instruction",
        "cublas-error",
        "cuda-device-busy",
        "cuda-device-side-assert",
        "cuda-driver-too-old",
        "cuda-illegal-instruction",
        "cuda-illegal-memory-access",
        "cuda-invalid-device-ordinal",
        "cuda-launch-failure",
        "cuda-misaligned-address",
        "cuda-no-kernel-image",
        "cuda-not-available",
        "cuda-out-of-memory",
        "cudnn-error",
        "dataloader-worker-died",
        "device-mismatch",
        "gpu-ecc-error",
        "import-hang",
        "nccl-error",
    }
)
#: negatives left in tests/data/logs after its autograd, dtype, shape and state_dict negatives were
#: relabelled with the error types that now cover them (34 before; CPU index and CUDA_HOME ones too)
LOGS_NEGATIVES = 11
SPLITS = ("tune", "heldout")

#: top-1 over every log here (all of them tuning data) when the signatures were last tuned
#: (240 of 240); a change to a signature may not lose more than a few of them
ALL_TOP1 = 0.98


@dataclass(frozen=True)
class LogSet:
    """A labelled set gathered after the signatures, from threads no earlier set uses."""

    folder: str
    split: str
    top1: int  # the floor: top-1 hits a change to a signature may not go under
    false_matches: int  # the most negatives that may match anything
    per_type: int  # the fewest logs of each error type it holds
    negatives: int  # the fewest negatives it holds

    @property
    def manifest(self) -> dict[str, dict[str, Any]]:
        return json.loads(
            (REPO / "tests" / "data" / self.folder / "manifest.json").read_text(encoding="utf-8")
        )


#: the once-fresh set (tests/data/logs-fresh/README.md). Its one measurement as unseen logs, with
#: the signatures as tuned on tests/data/logs: top-1 101 of 107 (0.944), top-3 101 of 107, and 1
#: of 20 negatives matched (an autograd in-place error matched import-hang on a stray
#: KeyboardInterrupt line). Its six misses and the false match were then fixed class by class, so
#: it is tuning data now, and these are the figures reached on it (107 of 107, no false match): a
#: floor that a change may not go under.
#: Its negatives floor counts what is left after the relabels its README lists (20 before).
FRESH = LogSet("logs-fresh", "fresh", top1=107, false_matches=0, per_type=3, negatives=5)
#: the second once-fresh set (tests/data/logs-fresh2/README.md): 133 labelled logs and 28 negatives
#: from threads neither set above uses, committed before the first once-fresh set's misses were
#: fixed. Its one measurement as unseen logs, with the signatures as tuned on both sets above:
#: top-1 117 of 133 (0.880), top-3 117 of 133, and 1 of 28 negatives matched (a tool's own hint
#: "If you encounter CUDA out of memory, try ..." in a host-RAM failure). Its misses were then
#: fixed class by class, so it is tuning data now, and these are the figures reached on it (127
#: of 133, no false match; the six left are hangs told only in prose or cut before any evidence):
#: a floor that a change may not go under.
#: Its negatives floor counts what is left after the relabels its README lists (28 before).
FRESH2 = LogSet("logs-fresh2", "fresh2", top1=127, false_matches=0, per_type=5, negatives=14)
#: the held-out split (tests/data/logs-fresh3/README.md): 123 labelled logs and 25 negatives from
#: threads no set above uses, committed before the second once-fresh set's misses were fixed and
#: never tuned on. Its one measurement, with the signatures as tuned on all three sets above: top-1
#: 118 of 123 (0.959), top-3 119 of 123 (0.967), no negative matched; the goals are 0.95 and no
#: false match. These figures are a floor a change may not go under. Two of its negatives were CPU
#: index errors ("index out of range in self"), the readable twin of a device-side assert; since
#: kbgen names those (cpu-index-out-of-range) they are labelled so, beside one log added for it.
#: Four more were extension builds stopped by an unset CUDA_HOME, relabelled extension-build-failed
#: when that type was added, and nine autograd, dtype, shape and state_dict errors with the types
#: that now cover them (tests/data/logs-fresh3/README.md): 10 negatives are left.
HELD_OUT = LogSet("logs-fresh3", "fresh3", top1=118, false_matches=0, per_type=3, negatives=10)
LATER_SETS = {"once-fresh set": FRESH, "second once-fresh set": FRESH2, "held-out set": HELD_OUT}


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


def test_corpus_is_complete_and_sourced() -> None:
    files = {p.name for p in LOGS.glob("*.log")}
    assert files == set(MANIFEST), "every log is listed in manifest.json and every listed log exists"
    for name, info in MANIFEST.items():
        assert info["source"].startswith("https://github.com/"), name
        assert info["label"] is None or info["label"] in ERROR_TYPES, name
        assert info["split"] in SPLITS, name
    per_type = Counter(info["label"] for info in MANIFEST.values() if info["label"])
    assert {t: n for t, n in per_type.items() if n < 5 and t in GATHERED_FOR} == {}
    assert GATHERED_FOR <= set(per_type) <= ERROR_TYPES
    assert sum(info["label"] is None for info in MANIFEST.values()) >= LOGS_NEGATIVES


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
    assert figures["all"].negatives >= LOGS_NEGATIVES
    assert figures["all"].false_matches == []


def test_every_shipped_error_type_is_exercised(shipped_kb: Kb) -> None:
    assert set(shipped_kb.errors) >= ERROR_TYPES


@pytest.mark.parametrize("name", LATER_SETS)
def test_later_set_is_complete_sourced_and_new(name: str) -> None:
    log_set = LATER_SETS[name]
    manifest = log_set.manifest
    assert {p.name for p in (REPO / "tests" / "data" / log_set.folder).glob("*.log")} == set(manifest)
    earlier = [MANIFEST, *(s.manifest for s in list(LATER_SETS.values())[: list(LATER_SETS).index(name)])]
    older = {info["source"] for m in earlier for info in m.values()}
    sources = [info["source"] for info in manifest.values()]
    assert len(set(sources)) == len(sources), "one log per thread"
    for file, info in manifest.items():
        assert info["source"].startswith("https://"), file
        assert info["source"] not in older, f"{file}: a thread an earlier set already uses"
        assert info["label"] is None or info["label"] in ERROR_TYPES, file
        assert info["split"] == log_set.split, file
    per_type = Counter(info["label"] for info in manifest.values() if info["label"])
    assert GATHERED_FOR <= set(per_type) <= ERROR_TYPES
    assert min(per_type[t] for t in GATHERED_FOR) >= log_set.per_type
    assert sum(info["label"] is None for info in manifest.values()) >= log_set.negatives


@pytest.mark.parametrize("name", LATER_SETS)
def test_accuracy_on_a_later_set_never_drops(
    name: str, shipped_kb: Kb, capsys: pytest.CaptureFixture[str]
) -> None:
    log_set = LATER_SETS[name]
    found = measure(REPO / "tests" / "data" / log_set.folder, log_set.manifest, shipped_kb)
    kind = "never tuned on" if log_set is HELD_OUT else "tuning data now"
    with capsys.disabled():
        print()
        print(f"triage accuracy, {found.line(f'{name} ({kind})')}")
        for miss in found.misses:
            print(f"  miss: {miss}")
        for false in found.false_matches:
            print(f"  false match: {false}")
    assert found.top1 >= log_set.top1, found.line(name)
    assert len(found.false_matches) <= log_set.false_matches, found.false_matches
