"""Writes never lose an edit: concurrent kbgen writers take turns, modes are kept, no litter."""

from __future__ import annotations

import os
import stat
import subprocess
import threading
from pathlib import Path

import pytest

from conftest import KBGEN, PATIENCE, run
from kbgen import fileio
from kbgen.bugs.edit import set_status
from kbgen.models import Status
from kbgen.store import Entry, find_project, load_kb

BUG_ID = "BUG-20251109-002"
BUG_PATH = "kb/bugs/BUG-20251109-002.md"


def kbgen(project: Path, *args: str, **kwargs: object) -> subprocess.Popen[str]:
    env = {**os.environ, "KBGEN_KB": str(project), "KBGEN_USER": "tester"}
    return subprocess.Popen(
        [*KBGEN, *args],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,  # type: ignore[call-overload]
    )


def test_concurrent_status_notes_are_all_kept(kb_project: Path) -> None:
    """Many `kbgen status --note` processes on one bug at once: each success is in the file."""
    notes = [f"note number {n} from a parallel writer" for n in range(12)]
    procs = [kbgen(kb_project, "status", BUG_ID, "investigating", "--note", note) for note in notes]
    results = [(proc, *proc.communicate(timeout=PATIENCE)) for proc in procs]
    text = (kb_project / BUG_PATH).read_text()
    succeeded = [note for note, (proc, _, _) in zip(notes, results, strict=True) if proc.returncode == 0]
    for _proc, _, err in results:
        assert "Traceback" not in err, err
    for note in succeeded:
        assert note in text, f"reported success, but the note is gone: {note}"
    # the writers wait for each other instead of failing: all of them succeed
    assert succeeded == notes, [err for _, _, err in results]
    kb = load_kb(find_project(kb_project))
    assert not kb.problems
    history_notes = [e.note for e in kb.bugs[BUG_ID].record.history]
    assert sorted(n for n in history_notes if n) == sorted(notes)


def test_a_rename_delayed_by_the_first_writer_loses_nothing(
    kb_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lost-edit race made deterministic: writer A is held between its check and its rename
    while writer B, which read the same version, tries to write."""
    kb_a, kb_b = load_kb(find_project()), load_kb(find_project())
    a_entry, b_entry = kb_a.bugs[BUG_ID], kb_b.bugs[BUG_ID]
    in_window = threading.Event()
    real_replace = os.replace

    def slow_replace(src: str, dst: str) -> None:
        if threading.current_thread().name == "writer-a":
            in_window.set()
            threading.Event().wait(0.5)
        real_replace(src, dst)

    monkeypatch.setattr(fileio.os, "replace", slow_replace)
    errors: list[BaseException] = []

    def write(entry: Entry, note: str) -> None:
        try:
            set_status(kb_a, entry, Status.investigating, note)
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    a = threading.Thread(target=write, args=(a_entry, "note from A"), name="writer-a")
    a.start()
    assert in_window.wait(10)
    b = threading.Thread(target=write, args=(b_entry, "note from B"), name="writer-b")
    b.start()
    a.join(10)
    b.join(10)
    assert not errors
    text = (kb_project / BUG_PATH).read_text()
    assert "note from A" in text
    assert "note from B" in text


def test_an_editor_save_between_read_and_write_is_still_caught(kb_project: Path) -> None:
    entry = load_kb(find_project()).bugs[BUG_ID]
    path = kb_project / BUG_PATH
    path.write_text(path.read_text() + "\nSaved by an editor.\n")
    from kbgen.bugs.roundtrip import save_changes
    from kbgen.errors import ConflictError

    with pytest.raises(ConflictError, match="changed on disk since kbgen read it; nothing was written"):
        save_changes(entry.source, {"status": Status.fixed})
    assert path.read_text().endswith("Saved by an editor.\n")


@pytest.mark.parametrize("mode", [0o644, 0o664, 0o600, 0o640])
def test_a_write_keeps_the_mode_of_the_file(kb_project: Path, mode: int) -> None:
    path = kb_project / BUG_PATH
    path.chmod(mode)
    assert run("status", BUG_ID, "fixed", "--note", "done")[0] == 0
    assert stat.S_IMODE(path.stat().st_mode) == mode


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_a_new_bug_gets_the_mode_of_the_umask(kb_project: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        code, out = run("new-bug", "--title", "Mode check")
    finally:
        os.umask(old)
    assert code == 0, out
    path = kb_project / out.split()[1]
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask


def test_no_temporary_or_lock_files_are_left_in_kb_bugs(kb_project: Path) -> None:
    bugs = kb_project / "kb/bugs"
    assert run("new-bug", "--title", "First", "--date", "2025-11-09")[0] == 0
    assert run("status", BUG_ID, "confirmed", "--note", "seen twice")[0] == 0
    assert run("renumber", BUG_ID)[0] == 0
    names = sorted(p.name for p in bugs.iterdir())
    assert all(name.endswith(".md") and not name.startswith(".") for name in names), names
    assert len(names) == 2


def test_a_note_that_would_make_the_record_unreadable_is_refused(kb_project: Path) -> None:
    path = kb_project / BUG_PATH
    before = path.read_bytes()
    code, out = run("status", BUG_ID, "investigating", "--note", "x" * fileio.MAX_ENTRY_BYTES)
    assert code == 1
    assert out.startswith(f"Error: {BUG_PATH}: the record would grow to ")
    assert "past the 2,097,152 kbgen reads; nothing was written" in out
    assert "Traceback" not in out
    assert path.read_bytes() == before
    # everything still works afterwards
    code, out = run("status", BUG_ID, "investigating", "--note", "a short note")
    assert code == 0, out
    assert run("list")[0] == 0


def test_notes_that_add_up_past_the_limit_stop_at_the_limit(kb_project: Path) -> None:
    note = "y" * (fileio.MAX_ENTRY_BYTES // 3)
    results = [run("status", BUG_ID, "investigating", "--note", note)[0] for _ in range(4)]
    assert results[:2] == [0, 0]
    assert results[-1] == 1
    assert (kb_project / BUG_PATH).stat().st_size <= fileio.MAX_ENTRY_BYTES
    code, out = run("show", BUG_ID)
    assert code == 0, out


def test_importing_a_report_too_big_for_a_record_writes_nothing(kb_project: Path, tmp_path: Path) -> None:
    report = tmp_path / "huge.md"
    head = "# Loss is NaN\n\n## What happened\n\n"
    lines = "a paragraph of what happened in the run\n" * 60_000
    # just under the read limit: the frontmatter an import adds takes the record past it
    report.write_text(head + lines[: fileio.MAX_ENTRY_BYTES - 100 - len(head)])
    assert report.stat().st_size == fileio.MAX_ENTRY_BYTES - 100
    before = sorted(p.name for p in (kb_project / "kb/bugs").iterdir())
    code, out = run("import", str(report))
    assert code == 1
    assert "the record would grow to" in out
    assert "Traceback" not in out
    assert sorted(p.name for p in (kb_project / "kb/bugs").iterdir()) == before
