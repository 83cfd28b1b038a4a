"""`kbgen status` and `kbgen fix`: a status change is recorded in the bug's history without touching
its body, and a closed bug says why (the cause found, the fix that worked)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import BUG_ID, add_keys, add_probe, frontmatter, invoke, run
from kbgen.store import find_project, load_kb
from probes_fixtures import PASS


def test_status_records_history_and_keeps_body(kb_project: Path) -> None:
    path = kb_project / "kb/bugs/BUG-20251109-002.md"
    before = path.read_text()
    code, out = run("status", "BUG-20251109-002", "investigating", "--note", "bisecting the data loader")
    assert (code, out) == (0, "BUG-20251109-002: open -> investigating\n")
    after = path.read_text()
    assert after.split("\n---\n", 1)[1] == before.split("\n---\n", 1)[1]
    bug = load_kb(find_project()).bugs["BUG-20251109-002"].record
    event = bug.history[-1]
    assert (event.kind.value, event.old, event.new, event.note, event.by) == (
        "status",
        "open",
        "investigating",
        "bisecting the data loader",
        "tester",
    )
    assert run("status", "BUG-20251109-002", "investigating") == (
        0,
        "BUG-20251109-002: already investigating\n",
    )


def test_status_fixed_with_cause_and_fix_round_trips_and_validates(kb_project: Path) -> None:
    result = invoke("status", BUG_ID, "fixed", "--cause", "out-of-range-index", "--fix", "clamp-labels")
    assert result.output == f"{BUG_ID}: open -> fixed\n"
    data = frontmatter(kb_project)
    assert data["confirmed_causes"] == ["out-of-range-index"]
    assert data["fixes_tried"] == [
        {"fix": "clamp-labels", "outcome": "worked", "date": data["updated"].date()}
    ]
    assert data["history"][-1]["note"] == "cause: out-of-range-index; fix: clamp-labels (worked)"
    assert invoke("validate", "--strict").exit_code == 0
    shown = json.loads(invoke("show", BUG_ID, "--json").output)
    assert shown["status"] == "fixed" and shown["fixes_tried"][0]["outcome"] == "worked"
    assert shown["body"].startswith("## What happened")


def test_a_fixed_bug_without_cause_or_fix_fails_validate_strict(kb_project: Path) -> None:
    add_keys(kb_project, "fixes_tried:\n  - fix: clamp-labels\n    outcome: failed")
    assert invoke("status", BUG_ID, "fixed", "--note", "labels clamped").exit_code == 0
    plain = invoke("validate")
    assert plain.exit_code == 0
    expected = (
        "warning: status: fixed with no confirmed cause and no fix that worked: say why it is closed with "
        f"`kbgen status {BUG_ID} fixed --cause CAUSE-ID --fix FIX-ID`"
    )
    assert expected in plain.output
    assert invoke("validate", "--strict").exit_code == 1


def test_fix_records_an_attempt_while_open_and_rejects_unknown_fixes(kb_project: Path) -> None:
    result = invoke("fix", BUG_ID, "clamp-labels", "--outcome", "failed", "--note", "still asserts")
    assert result.output == f"{BUG_ID}: clamp-labels failed\n"
    data = frontmatter(kb_project)
    assert data["fixes_tried"][0]["outcome"] == "failed" and data["status"] == "open"
    assert data["history"][-1]["kind"] == "fix"
    bad = invoke("fix", BUG_ID, "clamp-label", "--outcome", "worked")
    assert bad.exit_code == 1
    assert bad.stderr == (
        "Error: FIX-ID 'clamp-label': no such fix in the base layer or kb/fixes/\n"
        "  hint: did you mean 'clamp-labels'?\n"
    )


def test_a_repro_verifying_a_fixed_bug_stamps_the_fix_that_worked(kb_project: Path) -> None:
    add_probe(kb_project, "repro", PASS)
    add_keys(kb_project, "repro: repro")
    invoke("status", BUG_ID, "fixed", "--cause", "out-of-range-index", "--fix", "clamp-labels")
    result = invoke("probe", "--fill", BUG_ID, "repro", KBGEN_NOW="2025-11-25T09:00:00+00:00")
    assert "; status fixed -> verified; last_verified set on clamp-labels" in result.output
    assert "last_verified: 2025-11-25" in (kb_project / "kb/fixes/clamp-labels.md").read_text()
    assert invoke("validate", "--strict").exit_code == 0
