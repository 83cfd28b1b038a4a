"""`kbgen new-bug`, `renumber`, `status`, `list`, `show` and `schema`, as a user runs them."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from kbgen.cli import cli
from kbgen.kinds import BUG
from kbgen.store import find_project, load_kb

KBGEN = [sys.executable, "-m", "kbgen"]


def run(*args: str, input: str | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), input=input)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


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
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 20, outputs
    ids = sorted(out.split()[0] for out, _ in outputs)
    assert ids == [f"BUG-20251201-{n:03d}" for n in range(1, 21)]
    titles = {
        b.title for b in load_kb(find_project()).records(BUG).values() if b.id.startswith("BUG-20251201")
    }
    assert titles == {f"race {i}" for i in range(20)}


def test_no_title_without_a_terminal_is_an_error_not_a_hang(kb_project: Path) -> None:
    proc = subprocess.run(
        [*KBGEN, "new-bug", "--error", "cuda-illegal-memory-access"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
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
    monkeypatch.setattr("kbgen.cli.core.has_terminal", lambda: True)  # as when run in a terminal
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
            timeout=60,
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
    assert moved.aliases == ["BUG-20251109-002"]
    assert moved.history[-1].kind.value == "renumber"
    assert (moved.history[-1].old, moved.history[-1].new) == ("BUG-20251109-002", "BUG-20251109-003")
    assert kb.bugs["BUG-20251109-002"].record.created.day == 9  # the older one kept its id
    code, out = run("show", "BUG-20251109-002")
    assert out.startswith("BUG-20251109-002: Illegal memory access in BCE loss\n")


def test_renumber_leaves_a_file_edited_meanwhile_alone(
    kb_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kbgen.bugs

    bug = kb_project / "kb/bugs/BUG-20251109-002.md"
    claim = kbgen.bugs.claim_id

    def claim_then_edit(*args: object, **kwargs: object) -> tuple[str, Path]:
        result = claim(*args, **kwargs)  # type: ignore[arg-type]
        bug.write_text(bug.read_text() + "\nAn edit made while renumbering.\n")
        return result

    monkeypatch.setattr(kbgen.bugs, "claim_id", claim_then_edit)
    code, out = run("renumber", "BUG-20251109-002")
    assert code == 1
    assert out == (
        "Error: kb/bugs/BUG-20251109-002.md: changed on disk since kbgen read it; nothing was renumbered\n"
        "  hint: run the command again to work from the new version\n"
    )
    assert sorted(p.name for p in bug.parent.glob("*.md")) == ["BUG-20251109-002.md"]
    assert bug.read_text().endswith("An edit made while renumbering.\n")


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


def test_every_command_has_help_and_is_in_the_readme() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    code, out = run("--help")
    assert code == 0
    commands = [line.split()[0] for line in out.split("Commands:\n", 1)[1].splitlines() if line.strip()]
    assert sorted(commands) == sorted(
        [
            "validate",
            "new-bug",
            "list",
            "show",
            "status",
            "renumber",
            "schema",
            "probe",
            "serve",
            "build-pages",
            "triage",
            "import",
            "fleet",
            "fix",
            "step",
            "migrate",
            "init",
            "kb",
            "run",
        ]
    )
    for name in commands:
        sub_code, sub_out = run(name, "--help")
        assert sub_code == 0 and sub_out.startswith(f"Usage: cli {name} "), name
        assert f"kbgen {name}" in readme, f"{name} is not documented in README.md"


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
