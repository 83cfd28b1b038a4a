"""Records are never destroyed: build-pages stays inside OUT, and renumber can be run again."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from conftest import run
from kbgen.store import find_project, load_kb
from site_kb import TODAY, make_site_project


@pytest.fixture(autouse=True)
def _today(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBGEN_NOW", TODAY)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = make_site_project(tmp_path / "project")
    (root / "templates").mkdir()
    (root / "templates/note.txt").write_text("a project template folder\n")
    return root


# --------------------------------------------------------------------------- build-pages OUT


@pytest.mark.parametrize(
    "out", ["kb", "kb/bugs", "kb/new", "templates", "templates/pages", ".", "docs/generated"]
)
def test_build_pages_refuses_an_out_that_would_overwrite_what_people_wrote(project: Path, out: str) -> None:
    before = snapshot(project)
    code, output = run("--kb", str(project), "build-pages", str(project / out))
    assert code == 1
    assert output.startswith(f"Error: {project / out}: not a safe place for the pages: ")
    assert output.count("\n") == 2  # the message and its hint
    assert snapshot(project) == before


def test_build_pages_refuses_a_link_that_leads_into_kb(project: Path, tmp_path: Path) -> None:
    link = tmp_path / "pages-link"
    link.symlink_to(project / "kb/bugs", target_is_directory=True)
    before = snapshot(project)
    code, output = run("--kb", str(project), "build-pages", str(link))
    assert code == 1
    assert "it is inside kb/" in output
    assert snapshot(project) == before


def test_build_pages_into_an_empty_docs_is_allowed(tmp_path: Path) -> None:
    project = make_site_project(tmp_path / "project")
    for path in sorted((project / "docs").rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    code, output = run("--kb", str(project), "build-pages", str(project / "docs/generated"))
    assert code == 0, output


def test_a_doctored_manifest_removes_nothing_outside_out(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "pages"
    victims = tmp_path / "victims"
    victims.mkdir()
    for name in ("a.md", "b.md", "c.md"):
        (victims / name).write_text("keep me\n")
    assert run("--kb", str(project), "build-pages", str(out))[0] == 0
    (out / "old").symlink_to(victims, target_is_directory=True)  # a folder link inside OUT
    (out / "stale.md").symlink_to(victims / "c.md")  # a file link at a name the manifest lists
    manifest = out / ".kbgen-pages.json"
    names = json.loads(manifest.read_text())
    doctored = [
        *names,
        "old/a.md",
        "../victims/b.md",
        str(victims / "b.md"),
        "stale.md",
        "old/../../victims/a.md",
    ]
    manifest.write_text(json.dumps(doctored))
    code, output = run("--kb", str(project), "build-pages", str(out))
    assert code == 0, output
    assert output.endswith("0 removed\n")
    assert sorted(p.name for p in victims.iterdir()) == ["a.md", "b.md", "c.md"]
    assert all(p.read_text() == "keep me\n" for p in victims.iterdir())
    assert (out / "stale.md").is_symlink()


def test_pages_are_never_written_through_a_linked_folder(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "pages"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out.mkdir()
    (out / "bugs").symlink_to(elsewhere, target_is_directory=True)
    code, output = run("--kb", str(project), "build-pages", str(out))
    assert code == 1
    assert output.startswith(f"Error: {out.resolve() / 'bugs'}: a symbolic link; kbgen writes pages only")
    assert list(elsewhere.iterdir()) == []


def test_a_page_that_is_a_link_is_replaced_not_written_through(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "pages"
    target = tmp_path / "README.md"
    target.write_text("mine\n")
    out.mkdir()
    (out / "index.md").symlink_to(target)
    assert run("--kb", str(project), "build-pages", str(out))[0] == 0
    assert target.read_text() == "mine\n"
    assert not (out / "index.md").is_symlink()


def test_a_rewritten_page_keeps_its_permission_bits(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "pages"
    assert run("--kb", str(project), "build-pages", str(out))[0] == 0
    page = out / "bugs/index.md"
    page.chmod(0o640)
    bug = project / "kb/bugs/BUG-20251020-001.md"
    bug.write_text(bug.read_text().replace("severity: medium", "severity: low"))
    code, output = run("--kb", str(project), "build-pages", str(out))
    assert (code, output) == (0, f"{out}: 4 written, 17 unchanged, 0 removed\n")
    assert stat.S_IMODE(page.stat().st_mode) == 0o640
    assert not list(out.rglob(".*.tmp"))  # no temporary file left behind


# --------------------------------------------------------------------------- renumber


BUG = "BUG-20251109-002"


def interrupt_renumber(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stop `kbgen renumber` between writing the new file and removing the old one (Ctrl+C)."""
    import kbgen.bugs.renumber

    def interrupted(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(kbgen.bugs.renumber, "_remove_old", interrupted)


def test_an_interrupted_renumber_is_reported_and_finished_by_running_it_again(
    kb_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as patch:
        interrupt_renumber(patch)
        code, _ = run("renumber", BUG)
    assert code == 130
    bugs = kb_project / "kb/bugs"
    assert sorted(p.name for p in bugs.iterdir()) == ["BUG-20251109-002.md", "BUG-20251109-003.md"]
    code, out = run("validate")
    assert code == 1
    assert (
        "kb/bugs/BUG-20251109-002.md:2: id: an interrupted `kbgen renumber` left this old copy of "
        "BUG-20251109-003 (kb/bugs/BUG-20251109-003.md); run `kbgen renumber BUG-20251109-002` to finish it"
    ) in out
    code, out = run("list")
    assert code == 1
    assert out.startswith("Error: kb/bugs/BUG-20251109-002.md:2: id: an interrupted `kbgen renumber`")
    assert out.count("BCE loss") == 0  # no bug listed, let alone twice

    code, out = run("renumber", BUG)
    assert (code, out) == (
        0,
        "BUG-20251109-002 -> BUG-20251109-003 kb/bugs/BUG-20251109-003.md "
        "(finished an interrupted renumber)\n",
    )
    assert sorted(p.name for p in bugs.iterdir()) == ["BUG-20251109-003.md"]
    assert run("validate")[0] == 0
    code, out = run("list")
    assert code == 0
    assert out.count("BCE loss") == 1
    # and once more: nothing left to do, nothing changes
    code, out = run("renumber", BUG)
    assert (code, out) == (
        0,
        "BUG-20251109-002 -> BUG-20251109-003 kb/bugs/BUG-20251109-003.md (already renumbered)\n",
    )
    assert sorted(p.name for p in bugs.iterdir()) == ["BUG-20251109-003.md"]


def test_an_old_copy_edited_after_the_interruption_is_not_removed(
    kb_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as patch:
        interrupt_renumber(patch)
        run("renumber", BUG)
    old = kb_project / "kb/bugs/BUG-20251109-002.md"
    old.write_text(old.read_text().replace("Training died in the loss.", "Training died in the loss, twice."))
    code, out = run("validate")
    assert code == 1
    assert (
        "kb/bugs/BUG-20251109-002.md:2: id: an old copy of BUG-20251109-003 (kb/bugs/BUG-20251109-003.md) "
        "left by an interrupted `kbgen renumber`, edited since: copy those edits into that file, then "
        "delete this one"
    ) in out
    code, out = run("renumber", BUG)
    assert code == 1
    assert out.startswith(
        "Error: kb/bugs/BUG-20251109-002.md: an old copy of BUG-20251109-003 edited after an "
        "interrupted renumber; nothing was removed\n"
    )
    assert old.exists()


def test_renumbering_a_merged_duplicate_twice_moves_only_the_newer_one(kb_project: Path) -> None:
    bugs = kb_project / "kb/bugs"
    (bugs / "BUG-20251109-002-from-branch-b.md").write_text(
        (bugs / "BUG-20251109-002.md")
        .read_text()
        .replace("2025-11-09T23:04:00+09:00", "2025-11-10T08:00:00+09:00")
    )
    assert run("renumber", BUG)[0] == 0
    after = snapshot(bugs)
    code, out = run("renumber", BUG)
    assert code == 0
    assert out.endswith("(already renumbered; BUG-20251109-002 stays with kb/bugs/BUG-20251109-002.md)\n")
    assert snapshot(bugs) == after
    kb = load_kb(find_project())
    assert sorted(kb.bugs) == ["BUG-20251109-002", "BUG-20251109-003"]
    assert not kb.problems


def test_aliases_that_name_no_single_bug_are_reported(kb_project: Path) -> None:
    bugs = kb_project / "kb/bugs"
    text = (bugs / "BUG-20251109-002.md").read_text()
    (bugs / "BUG-20251110-001.md").write_text(
        text.replace("id: BUG-20251109-002", "id: BUG-20251110-001").replace(
            "tags: [loss]", "tags: [loss]\naliases: [BUG-20251101-001, BUG-20251110-001]"
        )
    )
    (bugs / "BUG-20251109-002.md").write_text(
        text.replace("tags: [loss]", "tags: [loss]\naliases: [BUG-20251101-001]")
    )
    code, out = run("validate")
    assert code == 1
    assert "kb/bugs/BUG-20251110-001.md:11: aliases.1: an alias cannot be the bug's own id" in out
    assert (
        "kb/bugs/BUG-20251109-002.md:11: aliases.0: BUG-20251101-001 is also an alias of BUG-20251110-001; "
        "`kbgen show BUG-20251101-001` cannot tell which is meant"
    ) in out
