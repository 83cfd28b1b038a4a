"""`kbgen new-bug`, as a user runs it: in a terminal or not, from a log, many at once."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import KBGEN, PATIENCE, kbgen, run
from kbgen.kinds import BUG
from kbgen.store import find_project, load_kb


def test_new_bug_is_filled_and_valid(kb_project: Path) -> None:
    title = 'OOM: "quoted" {{ not.jinja }} <script>alert(1)</script>'
    message = 'Traceback (most recent call last):\n  File "t.py"\nRuntimeError: CUDA error: {% raw %}'
    code, out = run(
        "new-bug",
        "--title",
        title,
        "--error",
        "cuda-illegal-memory-access",
        "--severity",
        "high",
        "--tag",
        "loss",
        "--tag",
        "wsl2",
        "--assignee",
        "mina",
        "--message",
        message,
        "--date",
        "2025-11-21",
    )
    assert code == 0, out
    assert out == "BUG-20251121-001 kb/bugs/BUG-20251121-001-oom-quoted-not-jinja-script-alert.md\n"
    bug = load_kb(find_project()).bugs["BUG-20251121-001"].record
    assert bug.title == title
    assert bug.message == message
    assert bug.tags == ["loss", "wsl2"]
    assert bug.severity.value == "high"
    assert [(s.id, s.probe, s.state.value) for s in bug.progress] == [("check-gpu", "gpu", "pending")]
    assert [e.kind.value for e in bug.history] == ["created"]
    text = next((kb_project / "kb/bugs").glob("BUG-20251121-001-*.md")).read_text()
    for placeholder in ("Not specified", "Step 1", "What should happen", "TODO"):
        assert placeholder not in text
    code, out = run("validate")
    assert code == 0, out


def test_ids_count_up_per_day_and_skip_aliases(kb_project: Path) -> None:
    bug = kb_project / "kb/bugs/BUG-20251109-002.md"
    bug.write_text(bug.read_text().replace("tags: [loss]", "tags: [loss]\naliases: [BUG-20251109-003]"))
    assert run("new-bug", "--title", "second", "--date", "20251109")[1].startswith("BUG-20251109-004 ")
    _, out = run("new-bug", "--title", "other day", "--date", "2025-11-10")
    assert out.startswith("BUG-20251110-001 "), out


def test_twenty_processes_get_twenty_distinct_ids(kb_project: Path) -> None:
    env = {**os.environ, "KBGEN_KB": str(kb_project)}
    procs = [
        subprocess.Popen(
            [*KBGEN, "new-bug", "--title", f"race {i}", "--date", "2025-12-01"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env=env,
            text=True,
        )
        for i in range(20)
    ]
    outputs = [p.communicate(timeout=PATIENCE) for p in procs]
    assert [p.returncode for p in procs] == [0] * 20, outputs
    ids = sorted(out.split()[0] for out, _ in outputs)
    assert ids == [f"BUG-20251201-{n:03d}" for n in range(1, 21)]
    titles = {
        b.title for b in load_kb(find_project()).records(BUG).values() if b.id.startswith("BUG-20251201")
    }
    assert titles == {f"race {i}" for i in range(20)}


def test_no_title_without_a_terminal_is_an_error_not_a_hang(kb_project: Path) -> None:
    proc = kbgen("new-bug", "--error", "cuda-illegal-memory-access", timeout=PATIENCE)
    assert proc.returncode == 1
    assert proc.stderr.startswith("Error: --title is required when stdin is not a terminal\n")
    assert not list((kb_project / "kb/bugs").glob("BUG-2025112*"))


def test_prompts_for_what_is_missing_in_a_terminal(kb_project: Path) -> None:
    import pty

    pid, fd = pty.fork()
    if pid == 0:  # child: kbgen on a real terminal
        os.execv(sys.executable, [*KBGEN, "new-bug", "--date", "2025-11-22"])
    answers = [b"Loss NaN then illegal access\r", b"cuda-illegal-memory-access\r", b"critical\r"]
    seen = b""
    while True:
        try:
            chunk = os.read(fd, 1024)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
        if (answers and seen.rstrip().endswith(b":")) or (answers and seen.rstrip().endswith(b"]:")):
            os.write(fd, answers.pop(0))
            seen += b"\n"
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, seen.decode(errors="replace")
    bug = load_kb(find_project()).bugs["BUG-20251122-001"].record
    assert (bug.title, bug.error, bug.severity.value) == (
        "Loss NaN then illegal access",
        "cuda-illegal-memory-access",
        "critical",
    )


def test_unknown_error_type_is_rejected(kb_project: Path) -> None:
    code, out = run("new-bug", "--title", "x", "--error", "cuda-ilegal-memory-access")
    assert code == 1
    assert "Error: --error 'cuda-ilegal-memory-access': no such error type" in out


def test_open_starts_the_editor(kb_project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\necho "Edited by the editor." >> "$1"\n')
    editor.chmod(0o755)
    monkeypatch.setenv("EDITOR", str(editor))
    monkeypatch.setattr("kbgen.cli.records.has_terminal", lambda: True)  # as when run in a terminal
    code, out = run("new-bug", "--title", "edit me", "--open", "--date", "2025-11-23")
    assert code == 0, out
    path = next((kb_project / "kb/bugs").glob("BUG-20251123-001-*.md"))
    assert path.read_text().endswith("Edited by the editor.\n")


def _without_dac_override() -> None:
    """Root ignores permission bits; drop that power (CAP_DAC_*) so a read-only folder is one."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def test_read_only_kb_is_a_clear_error(kb_project: Path) -> None:
    bugs = kb_project / "kb/bugs"
    bugs.chmod(0o555)
    try:
        proc = subprocess.run(
            [*KBGEN, "new-bug", "--title", "x"],
            capture_output=True,
            text=True,
            timeout=PATIENCE,
            stdin=subprocess.DEVNULL,
            preexec_fn=_without_dac_override if os.geteuid() == 0 else None,
        )
    finally:
        bugs.chmod(stat.S_IRWXU)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == (
        "Error: kb/bugs: cannot write here: Permission denied\n  hint: check the folder's permissions\n"
    )
    assert sorted(p.name for p in bugs.iterdir()) == ["BUG-20251109-002.md"]


def test_new_bug_from_a_log_takes_error_title_and_redacted_message(kb_project: Path) -> None:
    home = str(Path.home())
    log = kb_project / "train.log"
    log.write_text(
        "\x1b[33mWARNING\x1b[0m loading data from " + home + "/data\n"
        "Epoch 3:  41%|####      | 120/292\r"
        "Epoch 3:  42%|####      | 121/292\n"
        "HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz012345\n"
        "Traceback (most recent call last):\n"
        '  File "' + home + '/proj/train.py", line 88, in <module>\n'
        "    loss.backward()\n"
        "torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n"
    )
    code, out = run("new-bug", "--from-log", str(log), "--date", "2025-11-24")
    assert code == 0, out
    bug = load_kb(find_project()).bugs[out.split()[0]].record
    assert bug.error == "cuda-illegal-memory-access"
    assert "illegal memory access" in bug.title
    assert bug.message is not None
    assert bug.message.endswith(
        "torch.AcceleratorError: CUDA error: an illegal memory access was encountered"
    )
    assert 'File "~/proj/train.py", line 88' in bug.message
    assert "hf_abcdefghijklmnop" not in bug.message and home not in bug.message
    assert [s.id for s in bug.progress] == ["check-gpu"]
    assert run("validate")[0] == 0
