"""The functions other commands build on: signature_problems, without_anchors, draft_from_text."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kbgen.errors import KbgenError
from kbgen.store import Kb, find_project, load_kb
from kbgen.triage import LogDraft, draft_from_text, signature_problems
from kbgen.triage.signatures import without_anchors

OOM = """\
---
id: cuda-out-of-memory
title: CUDA out of memory
summary: The allocator could not find room.
signatures:
  - regex: 'CUDA out of memory\\. Tried to allocate'
    weight: 5
---
"""

TRACEBACK = """\
epoch 3 step 120 loss 0.41
epoch 3 step 121 loss 0.40
Traceback (most recent call last):
  File "/home/alice/ocr/train.py", line 88, in <module>
    loss.backward()
  File "/home/alice/ocr/models/loss/bce_loss.py", line 31, in forward
    positive_count = int(positive.sum().item())
torch.AcceleratorError: CUDA error: an illegal memory access was encountered
CUDA kernel errors might be asynchronously reported at some other API call.

wandb: syncing run with WANDB_API_KEY=abcd1234efgh5678
"""


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("CUDA error(?=: out of memory)", "RE2 cannot run this pattern (invalid perl operator: (?=)"),
        ("(?<!NCCL )error", "RE2 cannot run this pattern (invalid perl operator: (?<!)"),
        (r"(CUBLAS|CUDNN)_\1", "RE2 cannot run this pattern (invalid escape sequence: \\1)"),
        ("a++b", "RE2 cannot run this pattern (bad repetition operator: ++)"),
        ("x{1001}", "RE2 cannot run this pattern (invalid repetition size: {1001})"),
        ("[unclosed", "RE2 cannot run this pattern (missing ]: [unclosed)"),
        (
            r"NCCL WARN[^\n]{,80}failed",
            "{,n} is literal text to RE2 (Python's re reads it as {0,n}); write {0,n}",
        ),
        ("a*", "matches an empty line"),
        ("^$", "matches an empty line"),
    ],
)
def test_signature_problems_names_what_re2_cannot_run(pattern: str, reason: str) -> None:
    problems = signature_problems(pattern)
    assert len(problems) == 1
    assert problems[0].startswith(reason), problems


@pytest.mark.parametrize(
    "pattern",
    [
        "CUDA error: an illegal memory access was encountered",
        r"(?:RuntimeError|torch\.AcceleratorError): CUDA error: device-side assert triggered",
        r"CUDA out of memory\. Tried to allocate [\d.]+ [GMK]iB",
        r"(?i)cuda error: all cuda-capable devices are busy",
        r"NCCL (?:error|WARN).*unhandled (?:system|cuda) error",
        # shapes that backtrack in Python's re; RE2 runs them in linear time
        "(a+)+$",
        "(.*)*x",
        "(a|a)*b",
        r"(?:\w+){1,63}qqq",
        r"literal \{,3} and [{,]",
    ],
)
def test_signature_problems_accepts_what_re2_runs(pattern: str) -> None:
    assert signature_problems(pattern) == []


@pytest.mark.parametrize(
    ("pattern", "screen"),
    [
        ("^RuntimeError: (.*)$", "(?:)RuntimeError: (.*)(?:)"),
        (r"\AKilled\z", "(?:)Killed(?:)"),
        (r"[^$^]\$\^ [\]^$]", r"[^$^]\$\^ [\]^$]"),
        (r"[]^]x[[:alpha:]^]", r"[]^]x[[:alpha:]^]"),
        (r"\Q^$\E$", r"\Q^$\E(?:)"),
        ("^*a", "(?:)*a"),
    ],
)
def test_the_screen_drops_only_line_anchors(pattern: str, screen: str) -> None:
    assert without_anchors(pattern) == screen


def _project(make_tree: Callable[[dict[str, str | bytes]], Path], **logs: str) -> Path:
    from conftest import ERROR_IMA

    files: dict[str, str | bytes] = {
        "kb/errors/cuda-illegal-memory-access.md": ERROR_IMA,
        "kb/errors/cuda-out-of-memory.md": OOM,
    }
    files.update({f"logs/{name}.log": text for name, text in logs.items()})
    return make_tree(files)


def _draft(log: Path, kb: Kb) -> LogDraft:
    """The draft ``kbgen new-bug --from-log`` starts from, of the log as it reads it."""
    return draft_from_text(log.read_text(encoding="utf-8"), kb, str(log))


def test_draft_from_text_picks_error_title_and_redacted_excerpt(
    make_tree: Callable[[dict[str, str | bytes]], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", "/home/alice")
    root = _project(make_tree, train=TRACEBACK)
    kb = load_kb(find_project(root))
    draft = _draft(root / "logs/train.log", kb)
    assert draft == LogDraft(
        title="CUDA illegal memory access in bce_loss.py:31 (forward)",
        error="cuda-illegal-memory-access",
        message="Traceback (most recent call last):\n"
        '  File "~/ocr/train.py", line 88, in <module>\n'
        "    loss.backward()\n"
        '  File "~/ocr/models/loss/bce_loss.py", line 31, in forward\n'
        "    positive_count = int(positive.sum().item())\n"
        "torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n"
        "CUDA kernel errors might be asynchronously reported at some other API call.",
    )


def test_draft_from_text_redacts_secrets_in_the_excerpt(
    make_tree: Callable[[dict[str, str | bytes]], Path],
) -> None:
    log = "HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123 python train.py\n" + TRACEBACK.replace(
        "CUDA kernel errors", "token=s3cr3tvalue99 CUDA kernel errors"
    )
    root = _project(make_tree, train=log)
    draft = _draft(root / "logs/train.log", find_kb(root))
    assert "s3cr3tvalue99" not in draft.message
    assert "token=<redacted>" in draft.message


def find_kb(root: Path) -> Kb:
    return load_kb(find_project(root))


def test_draft_from_text_without_a_match_keeps_the_log_tail(
    make_tree: Callable[[dict[str, str | bytes]], Path],
) -> None:
    log = "starting\nloading shards\nValueError: checkpoint has no key 'encoder.weight' secret=hunter2222\n"
    root = _project(make_tree, other=log)
    draft = _draft(root / "logs/other.log", find_kb(root))
    assert draft.error is None
    assert draft.title == "ValueError: checkpoint has no key 'encoder.weight' secret=<redacted>"
    assert draft.message == (
        "starting\nloading shards\nValueError: checkpoint has no key 'encoder.weight' secret=<redacted>"
    )


def test_draft_from_text_bounds_the_excerpt(make_tree: Callable[[dict[str, str | bytes]], Path]) -> None:
    frames = "".join(f'  File "lib{i}.py", line {i}, in f{i}\n    {"x" * 300}\n' for i in range(400))
    log = (
        "Traceback (most recent call last):\n"
        + frames
        + "RuntimeError: CUDA out of memory. Tried to allocate 2 GiB\n"
    )
    root = _project(make_tree, big=log)
    draft = _draft(root / "logs/big.log", find_kb(root))
    assert draft.error == "cuda-out-of-memory"
    assert len(draft.message) <= 8000
    assert draft.message.endswith("RuntimeError: CUDA out of memory. Tried to allocate 2 GiB")


def test_draft_from_text_refuses_an_empty_log(make_tree: Callable[[dict[str, str | bytes]], Path]) -> None:
    root = _project(make_tree, empty="\n  \n")
    with pytest.raises(KbgenError, match=r"empty\.log: the log is empty"):
        _draft(root / "logs/empty.log", find_kb(root))
