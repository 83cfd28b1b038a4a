"""The shipped signatures on the real variants of each error message, one line at a time.

tests/data/triage-wordings.txt lists error messages as real programs print them (PyTorch old and
new, the CUDA runtime and driver, NCCL, cuDNN, cuBLAS, compute-sanitizer, cuda-gdb, shells,
nvidia-smi, the kernel log), each under the error type it must reach first, and look-alike lines
from ordinary errors and healthy runs that must reach none. The logs in tests/data/logs show the
signatures on whole logs; these pin down that every known form of a message is recognised on its
own, as in a log that is nothing but an issue title or a one-line report.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import REQUIRED_ERROR_IDS
from kbgen.store import Kb, find_project, load_kb
from kbgen.triage import triage_text

pytestmark = pytest.mark.usefixtures("base_layer")

REPO = Path(__file__).resolve().parent.parent
WORDINGS = REPO / "tests" / "data" / "triage-wordings.txt"


def read_wordings() -> list[tuple[str | None, str]]:
    """(error id or None, line) for each line under a [section] of the wordings file."""
    cases: list[tuple[str | None, str]] = []
    section: str | None = None
    for raw in WORDINGS.read_text(encoding="utf-8").splitlines():
        if not raw.strip() or raw.startswith("#"):
            continue
        if raw.startswith("[") and raw.endswith("]"):
            section = raw[1:-1]
            continue
        assert section is not None, f"{WORDINGS.name}: a line before the first [section]"
        cases.append((None if section == "none" else section, raw))
    return cases


CASES = read_wordings()


@pytest.fixture(scope="module")
def shipped_kb() -> Kb:
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("KBGEN_BASE", raising=False)
        return load_kb(find_project(REPO))


def test_every_error_type_has_wordings_and_there_are_look_alikes() -> None:
    assert {error for error, _ in CASES if error} == REQUIRED_ERROR_IDS
    assert sum(error is None for error, _ in CASES) >= 10


@pytest.mark.parametrize(("error", "line"), [case for case in CASES if case[0]])
def test_each_known_wording_reaches_its_error_type(shipped_kb: Kb, error: str, line: str) -> None:
    matches = triage_text(line, shipped_kb).matches
    assert [m.error for m in matches[:1]] == [error], [(m.error, m.score) for m in matches]


@pytest.mark.parametrize("line", [line for error, line in CASES if error is None])
def test_look_alike_lines_match_nothing(shipped_kb: Kb, line: str) -> None:
    assert [m.error for m in triage_text(line, shipped_kb).matches] == []
