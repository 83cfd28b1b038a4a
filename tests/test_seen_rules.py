"""What a second sighting of a crash may look like and still be the same bug: raised under
another torch release, pasted as a markdown quote, or filed before kbgen's rules changed."""

from __future__ import annotations

import re
from pathlib import Path

from kbgen.fingerprint import FINGERPRINT_VERSION, fingerprint_of
from kbgen.seen.compare import compare
from seen_measure import file_bug, known

FRAMES = (
    "Traceback (most recent call last):\n"
    '  File "ocr/models/loss/bce_loss.py", line 31, in forward\n'
    "    positive_count = int(positive.sum().item())\n"
)
#: torch 1.x raised CUDA failures as RuntimeError; 2.8 raises them as torch.AcceleratorError
OLD_TORCH = FRAMES + "RuntimeError: CUDA error: an illegal memory access was encountered\n"
NEW_TORCH = FRAMES + "torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n"


def test_a_crash_renamed_by_a_torch_upgrade_is_the_same_bug() -> None:
    like = compare(fingerprint_of(NEW_TORCH), fingerprint_of(OLD_TORCH))
    assert like.same, like.why
    assert "raised as AcceleratorError" in like.why


def test_another_exception_class_is_still_another_bug() -> None:
    other = FRAMES + "ValueError: CUDA error: an illegal memory access was encountered\n"
    like = compare(fingerprint_of(other), fingerprint_of(OLD_TORCH))
    assert not like.same and "another exception" in like.why


def test_a_log_pasted_as_a_markdown_quote_keeps_its_fingerprint() -> None:
    quoted = "".join(f"> {line}\n" for line in NEW_TORCH.splitlines())
    assert fingerprint_of(quoted) == fingerprint_of(NEW_TORCH)
    elided = NEW_TORCH.replace("torch.AcceleratorError: ", "...")
    assert fingerprint_of(elided).message == fingerprint_of(NEW_TORCH).message


def test_a_bug_filed_under_older_rules_is_compared_by_the_current_ones(
    kb_project: Path, base_layer: None
) -> None:
    log = kb_project / "crash.log"
    log.write_text(NEW_TORCH, encoding="utf-8")
    bug_id = file_bug(kb_project, log)
    (path,) = (kb_project / "kb" / "bugs").glob(f"{bug_id}*.md")
    text = path.read_text(encoding="utf-8")
    assert f"version: {FINGERPRINT_VERSION}" in text
    # what the first kbgen stored: no version, and a message its rules made differently
    stale = re.sub(r"\n\s+version: \d+", "", text, count=1)
    stale = re.sub(r"(\n\s+message: ).*", r"\1'stored by older rules'", stale, count=1)
    assert stale != text
    path.write_text(stale, encoding="utf-8")
    (first, *_) = known(kb_project, log)
    assert first["id"] == bug_id and first["same"], first
