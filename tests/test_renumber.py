"""`kbgen renumber`: the same bug id minted on two branches is caught by `validate` and moved to a
free id, and a file edited meanwhile is left alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import run
from kbgen.store import find_project, load_kb


def test_merge_duplicates_are_caught_and_renumbered(kb_project: Path) -> None:
    bugs = kb_project / "kb/bugs"
    # the same id minted on two branches, merged: two files, one id
    (bugs / "BUG-20251109-002-from-branch-b.md").write_text(
        (bugs / "BUG-20251109-002.md")
        .read_text()
        .replace("2025-11-09T23:04:00+09:00", "2025-11-10T08:00:00+09:00")
    )
    (bugs / "BUG-20251110-001.md").write_text(
        (bugs / "BUG-20251109-002.md")
        .read_text()
        .replace("BUG-20251109-002", "BUG-20251110-001")
        .replace("tags: [loss]", "tags: [loss]\nrelated: [BUG-20251109-002]")
    )
    code, out = run("validate")
    assert code == 1
    assert (
        "kb/bugs/BUG-20251109-002-from-branch-b.md: id: BUG-20251109-002 is also claimed by "
        "kb/bugs/BUG-20251109-002.md (two branches minted the same id); "
        "run `kbgen renumber BUG-20251109-002` to move the newer one to a free id"
    ) in out
    code, out = run("renumber", "BUG-20251109-002")
    assert out == "BUG-20251109-002 -> BUG-20251109-003 kb/bugs/BUG-20251109-003-from-branch-b.md\n"
    code, out = run("validate")
    assert code == 0, out
    kb = load_kb(find_project())
    moved = kb.bugs["BUG-20251109-003"].record
    assert moved.aliases == []  # the old id is the other bug's: the move is kept in the history
    assert moved.history[-1].kind.value == "renumber"
    assert (moved.history[-1].old, moved.history[-1].new) == ("BUG-20251109-002", "BUG-20251109-003")
    assert kb.bugs["BUG-20251109-002"].record.created.day == 9  # the older one kept its id
    code, out = run("show", "BUG-20251109-002")
    assert out.startswith("BUG-20251109-002: Illegal memory access in BCE loss\n")


def test_renumber_leaves_a_file_edited_meanwhile_alone(
    kb_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kbgen.bugs.renumber

    bug = kb_project / "kb/bugs/BUG-20251109-002.md"
    claim = kbgen.bugs.renumber.claim_id

    def claim_then_edit(*args: object, **kwargs: object) -> tuple[str, Path]:
        result = claim(*args, **kwargs)  # type: ignore[arg-type]
        bug.write_text(bug.read_text() + "\nAn edit made while renumbering.\n")
        return result

    monkeypatch.setattr(kbgen.bugs.renumber, "claim_id", claim_then_edit)
    code, out = run("renumber", "BUG-20251109-002")
    assert code == 1
    assert out == (
        "Error: kb/bugs/BUG-20251109-002.md: changed on disk since kbgen read it; nothing was renumbered\n"
        "  hint: run the command again to work from the new version\n"
    )
    assert sorted(p.name for p in bug.parent.glob("*.md")) == ["BUG-20251109-002.md"]
    assert bug.read_text().endswith("An edit made while renumbering.\n")
