"""Sections of a bug page as a new team meets them: `kbgen new-bug`, then `kbgen build-pages`."""

from __future__ import annotations

from pathlib import Path

from conftest import run
from site_kb import make_site_project


def test_a_report_of_prompts_only_has_no_heading_and_validate_says_so(tmp_path: Path) -> None:
    project = make_site_project(tmp_path)
    code, out = run("--kb", str(project), "new-bug", "--title", "Loss is NaN", "--date", "2025-11-21")
    assert code == 0, out
    bug_id = out.split()[0]
    code, out = run("--kb", str(project), "build-pages", str(tmp_path / "pages"))
    assert code == 0, out
    page = (tmp_path / "pages" / "bugs" / f"{bug_id}.md").read_text()
    assert "## Report" not in page and "What happened" not in page  # nothing but prompts
    assert "## History" in page
    # a new bug's prompts are for later; once it is closed as fixed, validate asks for the story
    assert "only prompts" not in run("--kb", str(project), "validate", "--strict")[1]
    code, out = run("--kb", str(project), "status", bug_id, "fixed", "--note", "upgraded torch")
    assert code == 0, out
    code, out = run("--kb", str(project), "validate", "--strict")
    assert code != 0
    assert f"kb/bugs/{bug_id}" in out and "warning: fixed, but the report holds only prompts" in out
    (filled,) = (project / "kb" / "bugs").glob(f"{bug_id}*.md")
    filled.write_text(
        filled.read_text().replace("## What happened\n", "## What happened\n\nLoss went NaN.\n")
    )
    run("--kb", str(project), "build-pages", str(tmp_path / "pages"))
    page = (tmp_path / "pages" / "bugs" / f"{bug_id}.md").read_text()
    assert "## Report" in page and "Loss went NaN." in page
    assert "the report holds only prompts" not in run("--kb", str(project), "validate", "--strict")[1]


def test_machines_lists_only_the_machines_besides_the_failing_one(tmp_path: Path) -> None:
    project = make_site_project(tmp_path)
    code, out = run("--kb", str(project), "build-pages", str(tmp_path / "pages"))
    assert code == 0, out
    page = (tmp_path / "pages" / "bugs" / "BUG-20251109-002.md").read_text()
    failing, machines = page.split("## Failing machine", 1)[1].split("## Machines", 1)
    assert "`wsl-rtx3060`" in failing and "Full probe report" in failing
    machines = machines.split("\n## ", 1)[0]
    assert "wsl-rtx3060" not in machines  # the failing machine is not repeated
    assert '??? info "Machine 2: also probed"' in machines and "mina-laptop" in machines
    assert "Machine 1" not in page


def test_a_bug_probed_on_one_machine_has_no_machines_section(tmp_path: Path) -> None:
    project = make_site_project(tmp_path)
    code, out = run("--kb", str(project), "build-pages", str(tmp_path / "pages"))
    assert code == 0, out
    single = [
        p
        for p in (tmp_path / "pages" / "bugs").glob("BUG-*.md")
        if "## Failing machine\n\nProbed" in p.read_text()
    ]
    assert single, "the fixture has a probed bug"
    for path in single:
        text = path.read_text()
        assert ("## Machines" in text) == ("Also probed on" in text), path.name
