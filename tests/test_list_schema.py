"""`kbgen list` (filters and JSON) and `kbgen schema` (one JSON Schema file per record kind)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run


def test_list_filters_and_json(kb_project: Path) -> None:
    run("new-bug", "--title", "low one", "--severity", "low", "--tag", "x", "--date", "2025-11-20")
    assert run("list", "--severity", "high")[1] == (
        "BUG-20251109-002  open  high      cuda-illegal-memory-access    Illegal memory access in BCE loss\n"
    )
    _code, out = run("list", "--tag", "x", "--json")
    assert [b["id"] for b in json.loads(out)] == ["BUG-20251120-001"]
    assert run("list", "--status", "fixed") == (0, "no bugs match\n")


def test_schema_writes_one_file_per_kind(kb_project: Path, tmp_path: Path) -> None:
    code, _out = run("schema", "--out", str(tmp_path / "schemas"))
    assert code == 0
    names = sorted(p.name for p in (tmp_path / "schemas").iterdir())
    assert names == [f"{k}.schema.json" for k in ("bug", "cause", "error", "fix", "probe")]
    bug_schema = json.loads((tmp_path / "schemas/bug.schema.json").read_text())
    assert bug_schema["additionalProperties"] is False
    assert "history" in bug_schema["properties"]
