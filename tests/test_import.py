"""`kbgen import` on reports of the shapes the team writes by hand."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import Result

from conftest import invoke
from kbgen.models import Bug, EventKind, Severity, Status
from kbgen.store import find_project, load_kb

# The shape of a well-filled report (seed 003), shortened.
FILLED = """\
---
title: "CUDA Illegal Memory Access in BCE Loss Computation"
author: "someone"
date: "2025-11-09"
timestamp: "2025-11-09 23:04 KST"
type: "bug_report"
status: "open"
tags: ['bug', 'cuda', 'loss']
bug_id: "BUG-20251109-007"
severity: "High"
---

# Bug Report: CUDA Illegal Memory Access in BCE Loss Computation

## Bug ID
BUG-20251109-007

## Summary
The loss crashes at `positive.sum().item()`.

## Environment
- **OS:** Linux 6.6.87.2-microsoft-standard-WSL2 (WSL2)
- **Python:** 3.10.12
- **PyTorch:** 2.8.0+cu128
- **GPU:** NVIDIA GeForce RTX 3060 (compute_86)
- **Package Manager:** UV 0.9.8

## Error Messages
```
torch.AcceleratorError: CUDA error: an illegal memory access was encountered
```

## Investigation

### Root Cause Analysis
**Primary Issue:** the count is taken on a poisoned context.

```python
# the failing line
positive_count = int(positive.sum().item())
```

## Status
- [x] Confirmed
- [x] Investigating
- [x] Fix in progress
- [ ] Fixed
- [ ] Verified

## Notes
- Moving the sum to the CPU did not help.
"""

# The shape of seed 002: the template pasted unfilled, then the real content below it.
PASTED_TWICE = """\
---
title: "Bug 20251112 014 Cuda Illegal Instruction"
date: "2025-12-06 18:08 (KST)"
status: "active"
tags: ['bug_report']
---

# Bug Report: CUDA Illegal Instruction in the FPN decoder

## Bug ID
BUG-20251112-014

## Summary
Brief description of the bug.

## Environment
- **OS**: Not specified
- **Python Version**: Not specified

## Steps to Reproduce
1. Step 1
2. Step 2

## Error Messages
```
Error message here
```

## Impact
- **Severity**: High
- **Affected Users**: Who is affected

## Investigation

### Root Cause Analysis
- **Cause**: What is causing the issue
- **Location**: Where in the code

### Related Issues
Related issue 1
Related issue 2

## Priority
High/Medium/Low

---

*This bug report follows the project's standardized format for issue tracking.*

## Summary
Validation sanity check dies with an illegal instruction, then the failure handler cannot write.

## Environment
- **Pipeline Version:** Training pipeline with PyTorch Lightning
- **Components:**
  - `UniqueModelCheckpoint` callback
  - FPN decoder with convolution operations

## Steps to Reproduce
1. Run training with CUDA enabled: ðŸš€ Performance Preset: none
2. The run stops in the sanity check âœ… reproducible

## Actual Behavior

### Primary Error: CUDA Illegal Instruction
```
torch.AcceleratorError: CUDA error: an illegal instruction was encountered
```
"""


def run_import(*args: str) -> Result:
    return invoke("import", *args)


def write(root: Path, name: str, text: str | bytes) -> str:
    (root / name).write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return name


def bug_files(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "kb" / "bugs").glob("*.md"))


def load_bug(root: Path, bug_id: str) -> tuple[Bug, str]:
    kb = load_kb(find_project(root))
    assert kb.problems == [], [p.format() for p in kb.problems]
    entry = kb.bugs[bug_id]
    return entry.record, entry.source.body


def test_filled_report_maps_sections_to_fields(kb_project: Path) -> None:
    result = run_import(write(kb_project, "report.md", FILLED))
    assert result.exit_code == 0, result.output
    assert result.output == (
        "report.md: wrote kb/bugs/BUG-20251109-007-cuda-illegal-memory-access-in-bce.md\n"
        "  error type cuda-illegal-memory-access recognised in the error message\n"
    )
    bug, body = load_bug(kb_project, "BUG-20251109-007")
    assert bug.title == "CUDA Illegal Memory Access in BCE Loss Computation"
    assert (bug.status, bug.severity) == (Status.fix_in_progress, Severity.high)
    assert bug.tags == ["bug", "cuda", "loss"]
    assert bug.created.isoformat() == "2025-11-09T23:04:00+09:00"
    assert bug.message == "torch.AcceleratorError: CUDA error: an illegal memory access was encountered"
    assert bug.error == "cuda-illegal-memory-access"
    assert [step.id for step in bug.progress] == ["check-gpu"]
    assert bug.primary.facts == {
        "os": "Linux 6.6.87.2-microsoft-standard-WSL2 (WSL2)",
        "python": "3.10.12",
        "torch": "2.8.0+cu128",
        "gpu": "NVIDIA GeForce RTX 3060 (compute_86)",
        "package_manager": "UV 0.9.8",
    }
    assert [(e.kind, e.by, e.note) for e in bug.history] == [
        (
            EventKind.imported,
            "tester",
            "imported from report.md (error type cuda-illegal-memory-access recognised in the error message)",
        )
    ]
    # what has a field left the body; everything else stays as written
    assert body == (
        "## Summary\n\nThe loss crashes at `positive.sum().item()`.\n\n"
        "## Investigation\n\n"
        "### Root Cause Analysis\n\n**Primary Issue:** the count is taken on a poisoned context.\n\n"
        "```python\n# the failing line\npositive_count = int(positive.sum().item())\n```\n\n"
        "## Notes\n\n- Moving the sum to the CPU did not help.\n\n"
        "## Imported metadata\n\nKeys of the original frontmatter kbgen has no field for:\n\n"
        "- **author:** someone\n- **type:** bug_report\n"
    )


def test_pasted_template_leftovers_are_dropped_and_mojibake_repaired(kb_project: Path) -> None:
    result = run_import(write(kb_project, "pasted.md", PASTED_TWICE))
    assert result.exit_code == 0, result.output
    assert result.output == (
        "pasted.md: wrote kb/bugs/BUG-20251112-014-cuda-illegal-instruction-in-the-fpn.md\n"
        "  repaired 2 mojibake sequence(s)\n"
        "  dropped 6 unfilled template section(s)\n"
    )
    bug, body = load_bug(kb_project, "BUG-20251112-014")
    assert bug.title == "CUDA Illegal Instruction in the FPN decoder"
    assert (bug.status, bug.severity) == (Status.investigating, Severity.high)
    assert bug.message == "torch.AcceleratorError: CUDA error: an illegal instruction was encountered"
    assert bug.primary.facts == {
        "pipeline_version": "Training pipeline with PyTorch Lightning",
        "components": "`UniqueModelCheckpoint` callback; FPN decoder with convolution operations",
    }
    for leftover in ("Brief description", "Not specified", "Step 1", "Error message here", "Related issue"):
        assert leftover not in body
    assert body.count("## Summary") == 1
    assert "Validation sanity check dies" in body
    assert "1. Run training with CUDA enabled: 🚀 Performance Preset: none" in body
    assert "✅ reproducible" in body
    assert "## Impact\n\n- **Severity**: High\n- **Affected Users**: Who is affected" in body
    assert "- **title:** Bug 20251112 014 Cuda Illegal Instruction" in body


def test_bytes_lost_to_mojibake_are_marked_not_guessed(kb_project: Path) -> None:
    report = "# Progress\n\n- [ ] **Step 9:** shapes - â³ Pending\n- [x] **Step 1:** setup - âœ… Complete\n"
    result = run_import(write(kb_project, "tracker.md", report))
    assert result.exit_code == 0, result.output
    assert "  1 mojibake sequence(s) had lost bytes and are marked with \ufffd\n" in result.output
    bug, body = load_bug(kb_project, "BUG-20251121-001")
    assert bug.title == "Progress"
    assert body == "- [ ] **Step 9:** shapes - \ufffd Pending\n- [x] **Step 1:** setup - ✅ Complete\n"


def test_a_report_without_id_gets_the_next_free_one(kb_project: Path) -> None:
    report = FILLED.replace('bug_id: "BUG-20251109-007"\n', "").replace("## Bug ID\nBUG-20251109-007\n", "")
    result = run_import(write(kb_project, "report.md", report))
    assert result.exit_code == 0, result.output
    # BUG-20251109-002 is taken in the fixture KB; the report's own date picks the day
    assert "BUG-20251109-003-cuda-illegal-memory-access-in-bce.md" in bug_files(kb_project)
    load_bug(kb_project, "BUG-20251109-003")


def test_an_existing_id_is_reported_not_overwritten(kb_project: Path) -> None:
    existing = kb_project / "kb" / "bugs" / "BUG-20251109-002.md"
    before = existing.read_bytes()
    report = FILLED.replace("BUG-20251109-007", "BUG-20251109-002")
    result = run_import(write(kb_project, "report.md", report))
    assert result.exit_code == 1
    assert result.output == (
        "report.md: skipped: BUG-20251109-002 already exists (kb/bugs/BUG-20251109-002.md)\n"
    )
    assert existing.read_bytes() == before
    assert bug_files(kb_project) == ["BUG-20251109-002.md"]


def test_dry_run_shows_the_file_and_writes_nothing(kb_project: Path) -> None:
    result = run_import("--dry-run", write(kb_project, "report.md", FILLED))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[:4] == [
        "report.md: would write kb/bugs/BUG-20251109-007-cuda-illegal-memory-access-in-bce.md",
        "  error type cuda-illegal-memory-access recognised in the error message",
        "    ---",
        "    id: BUG-20251109-007",
    ]
    assert "    ## Notes" in lines
    assert bug_files(kb_project) == ["BUG-20251109-002.md"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            '---\ntitle: "unclosed\nseverity: high\n---\nbody\n',
            # libyaml's own words sit between kbgen's prefix and its hint; only kbgen's are pinned
            "bad.md: not imported: bad.md:4: invalid YAML: …; "
            "nothing was written\n  hint: fix the block between the '---' lines and import again\n",
        ),
        ("---\ntitle: no closing line\n", "bad.md: not imported: bad.md:1: unclosed frontmatter: "),
        ("", "bad.md: not imported: bad.md: the file is empty; nothing was written\n"),
        (
            b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
            "bad.md: not imported: bad.md: looks like a binary file, not a Markdown report; "
            "nothing was written\n",
        ),
    ],
)
def test_bad_reports_write_nothing(kb_project: Path, content: str | bytes, message: str) -> None:
    result = run_import(write(kb_project, "bad.md", content))
    assert result.exit_code == 1
    head, _, tail = message.partition("…")
    assert result.output.startswith(head) and tail in result.output
    assert bug_files(kb_project) == ["BUG-20251109-002.md"]


def test_one_bad_report_does_not_stop_the_others(kb_project: Path) -> None:
    write(kb_project, "good.md", FILLED)
    result = run_import("missing.md", "good.md")
    assert result.exit_code == 1
    assert "missing.md: not imported: missing.md: cannot read: No such file or directory\n" in result.output
    assert "good.md: wrote kb/bugs/BUG-20251109-007-cuda-illegal-memory-access-in-bce.md\n" in result.output


def test_statuses_kbgen_does_not_know_become_open_with_a_note(kb_project: Path) -> None:
    report = FILLED.replace('status: "open"', 'status: "parked"').replace("## Status\n", "## Checks\n")
    result = run_import(write(kb_project, "report.md", report))
    assert result.exit_code == 0
    assert "  status 'parked' is not one kbgen knows; set to open\n" in result.output
    assert load_bug(kb_project, "BUG-20251109-007")[0].status == Status.open


def test_a_verified_tick_is_kept_as_fixed_until_a_repro_passes(kb_project: Path) -> None:
    report = FILLED.replace("- [ ] Fixed\n- [ ] Verified", "- [x] Fixed\n- [x] Verified")
    result = run_import(write(kb_project, "report.md", report))
    assert result.exit_code == 0
    assert "  marked verified by hand; kept as fixed until a repro probe passes\n" in result.output
    assert load_bug(kb_project, "BUG-20251109-007")[0].status == Status.fixed
