"""`kbgen validate`: cross-record checks and output formats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import edit, run, write_tree

SEED_002_LEFTOVERS = """\

## Environment
- **OS**: Not specified

## Expected Behavior
What should happen.

## Status
- [ ] Confirmed
"""


def test_clean_kb_passes(kb_project: Path) -> None:
    assert run("validate") == (0, "4 file(s) checked: no problems\n")


def test_dangling_references_everywhere_are_all_reported(kb_project: Path) -> None:
    edit(kb_project, "kb/errors/cuda-illegal-memory-access.md", "probe: gpu", "probe: gpus")
    edit(kb_project, "kb/causes/out-of-range-index.md", "  - clamp-labels", "  - clamp-label")
    edit(
        kb_project, "kb/bugs/BUG-20251109-002.md", "tags: [loss]", "tags: [loss]\nrelated: [BUG-20250101-001]"
    )
    code, out = run("validate")
    assert code == 1
    assert (
        "kb/errors/cuda-illegal-memory-access.md:16: diagnostics.0.probe: no probe 'gpus' "
        "in the built-in probes or kb/probes/; did you mean 'gpu'?"
    ) in out
    assert (
        "kb/causes/out-of-range-index.md:8: fixes.0: no fix 'clamp-label' in kb/fixes/; "
        "did you mean 'clamp-labels'?"
    ) in out
    assert (
        "kb/bugs/BUG-20251109-002.md:11: related.0: no bug 'BUG-20250101-001' in kb/bugs/; "
        "did you mean 'BUG-20251109-002'?"
    ) in out
    assert out.endswith("3 error(s), 0 warning(s) in 4 file(s)\n")


ERROR = "kb/errors/cuda-illegal-memory-access.md"
BUG = "kb/bugs/BUG-20251109-002.md"


#: (file, text, its replacement, the problem validate reports) for each kind of id a record names
REFERENCES = [
    (ERROR, "- cause: out-of-range-index", "- cause: out-of-range-indx", "causes.0.cause: no cause"),
    (ERROR, "related: []", "related: [cuda-oom]", "related.0: no error 'cuda-oom' in kb/errors/"),
    (ERROR, "related: []", "secondary_to: [cuda-oom]", "secondary_to.0: no error 'cuda-oom'"),
    ("kb/fixes/clamp-labels.md", "verify_probe: gpu", "verify_probe: gpus", "verify_probe: no probe"),
    (BUG, "error: cuda-illegal-memory-access", "error: cuda-oom", "error: no error 'cuda-oom'"),
    (BUG, "suspected_causes: [out-of-range-index]", "suspected_causes: [oom]", "suspected_causes.0: no"),
    (BUG, "tags: [loss]", "confirmed_causes: [oom]", "confirmed_causes.0: no cause 'oom'"),
    (
        BUG,
        "tags: [loss]",
        "fixes_tried: [{fix: clamp}]",
        "fixes_tried.0.fix: no fix 'clamp' in kb/fixes/",
    ),
    (BUG, "tags: [loss]", "repro: gpus", "repro: no probe 'gpus'"),
    (
        BUG,
        "tags: [loss]",
        "progress: [{id: a, title: b, probe: gpus}]",
        "progress.0.probe: no probe",
    ),
    (
        BUG,
        "tags: [loss]",
        "environments:\n  - host: box\n    findings:\n      - probe: gpus\n        status: pass",
        "environments.0.findings.0.probe: no probe 'gpus'",
    ),
]


@pytest.mark.parametrize(
    ("rel", "old", "new", "problem"), REFERENCES, ids=[r[3].split(":")[0] for r in REFERENCES]
)
def test_every_kind_of_reference_is_checked(
    kb_project: Path, rel: str, old: str, new: str, problem: str
) -> None:
    edit(kb_project, rel, old, new)
    code, out = run("validate")
    assert code == 1
    assert f"{rel}:" in out and f": {problem}" in out, out
    assert "\n1 error(s), " in out


def test_placeholders_of_a_never_filled_template_are_errors(kb_project: Path) -> None:
    path = kb_project / "kb/bugs/BUG-20251109-002.md"
    path.write_text(path.read_text() + SEED_002_LEFTOVERS)
    code, out = run("validate")
    assert code == 1
    assert "kb/bugs/BUG-20251109-002.md:17: template placeholder left in the text: 'Not specified'" in out
    assert (
        "kb/bugs/BUG-20251109-002.md:20: template placeholder left in the text: 'What should happen.'" in out
    )


def test_step_placeholders_only_count_as_whole_lines(kb_project: Path) -> None:
    path = kb_project / "kb/bugs/BUG-20251109-002.md"
    path.write_text(
        path.read_text() + "\n- [x] **Step 1:** check the driver\n\n## Steps\n1. Step 1\n2. Step 2\n"
    )
    code, out = run("validate")
    assert code == 1
    assert out == (
        "kb/bugs/BUG-20251109-002.md:19: template placeholder left in the text: '1. Step 1'\n"
        "kb/bugs/BUG-20251109-002.md:20: template placeholder left in the text: '2. Step 2'\n"
        "2 error(s), 0 warning(s) in 4 file(s)\n"
    )


def test_placeholder_words_inside_code_blocks_are_fine(kb_project: Path) -> None:
    path = kb_project / "kb/bugs/BUG-20251109-002.md"
    path.write_text(path.read_text() + "\n```python\n# TODO: upstream fix\n```\n")
    assert run("validate")[0] == 0


def test_mojibake_is_found_with_its_line(kb_project: Path) -> None:
    path = kb_project / "kb/bugs/BUG-20251109-002.md"
    path.write_text(path.read_text() + "\n- [x] Step done - \u00e2\u0153\u2026 Complete\n")
    code, out = run("validate")
    assert code == 1
    assert "kb/bugs/BUG-20251109-002.md:16: mojibake 'âœ'" in out


def test_verified_without_a_passing_repro_is_an_error(kb_project: Path) -> None:
    edit(kb_project, "kb/bugs/BUG-20251109-002.md", "status: open", "status: verified")
    code, out = run("validate")
    assert code == 1
    assert "kb/bugs/BUG-20251109-002.md:6: status: verified needs a passing repro record" in out


def test_empty_sections_warn_and_fail_only_under_strict(kb_project: Path) -> None:
    path = kb_project / "kb/bugs/BUG-20251109-002.md"
    path.write_text(path.read_text() + "\n## Steps to reproduce\n\n<!-- fill me -->\n")
    code, out = run("validate")
    assert code == 0
    assert "kb/bugs/BUG-20251109-002.md:16: warning: section 'Steps to reproduce' is empty" in out
    assert run("validate", "--strict")[0] == 1


def test_github_and_json_formats(kb_project: Path) -> None:
    edit(kb_project, "kb/bugs/BUG-20251109-002.md", "severity: high", "severity: urgent")
    code, out = run("validate", "--format", "github")
    assert code == 1
    assert out.startswith(
        "::error file=kb/bugs/BUG-20251109-002.md,line=7,title=kbgen validate::"
        "kb/bugs/BUG-20251109-002.md:7: severity: must be one of low, medium, high, critical\n"
    )
    code, out = run("validate", "--format", "json")
    report = json.loads(out)
    assert (report["errors"], report["warnings"]) == (1, 0)
    assert report["problems"][0]["field"] == "severity"


def test_id_must_match_file_name(kb_project: Path) -> None:
    edit(kb_project, "kb/fixes/clamp-labels.md", "id: clamp-labels", "id: clamp-label")
    _code, out = run("validate")
    assert (
        "kb/fixes/clamp-labels.md:2: id: 'clamp-label' does not match the file name 'clamp-labels.md'" in out
    )


def test_base_records_never_mention_a_projects_bug(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every project reads the shipped knowledge, and no project has this repository's bugs."""
    base = write_tree(
        tmp_path / "base",
        {
            "errors/.keep": "",
            "causes/seen.md": "---\nid: seen\ntitle: A cause\nsummary: Short.\n---\n"
            "Body.\n\nThe team found it in BUG-20251109-002 first.\n",
        },
    )
    root = write_tree(tmp_path / "proj", {"kb/bugs/.keep": ""})
    monkeypatch.setattr("kbgen.layers.base_dir", lambda: base)
    monkeypatch.chdir(root)
    code, out = run("validate")
    assert code == 1
    assert "kbgen/knowledge/causes/seen.md:8: the base layer mentions the bug BUG-20251109-002" in out
    (base / "causes/seen.md").write_text("---\nid: seen\ntitle: A cause\nsummary: Short.\n---\nBody.\n")
    code, out = run("validate")
    assert code == 0, out


def test_an_alias_that_is_a_live_bugs_id_is_reported_however_it_arose(kb_project: Path) -> None:
    """A hand or git merge can leave one bug's alias equal to another bug's id: `show` and every
    link then reach the other bug, and `list` shows one bug under two ids."""
    bugs = kb_project / "kb/bugs"
    text = (bugs / "BUG-20251109-002.md").read_text().replace("BUG-20251109-002", "BUG-20251110-001")
    (bugs / "BUG-20251110-001.md").write_text(
        text.replace("tags: [loss]", "tags: [loss]\naliases: [BUG-20251109-002]")
    )
    code, out = run("validate")
    assert code == 1
    assert (
        "kb/bugs/BUG-20251110-001.md:11: aliases.0: BUG-20251109-002 is also the id of "
        "kb/bugs/BUG-20251109-002.md; links and `kbgen show BUG-20251109-002` reach that bug"
    ) in out


def test_duplicate_of_must_name_a_bug_that_exists(kb_project: Path) -> None:
    edit(
        kb_project,
        "kb/bugs/BUG-20251109-002.md",
        "tags: [loss]",
        "tags: [loss]\nduplicate_of: BUG-20251109-009",
    )
    code, out = run("validate")
    assert code == 1
    assert "kb/bugs/BUG-20251109-002.md:11: duplicate_of: " in out and "BUG-20251109-009" in out
