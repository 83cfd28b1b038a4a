"""Every kind of credential stays out of what kbgen writes, and `kbgen validate` points at it.

The samples (tests/redact_samples.py) go through the commands as a user runs them: a log handed to
``kbgen new-bug --from-log``, a record edited by hand and checked with ``kbgen validate``.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from conftest import BUG_ID, KBGEN, bug_path, kbgen, run
from redact_samples import KINDS, leaks, sample

ERROR_LINE = "RuntimeError: CUDA error: an illegal memory access was encountered"


def written(project: Path) -> str:
    """Every file under kb/, as text."""
    return "".join(p.read_text(encoding="utf-8") for p in sorted((project / "kb").rglob("*")) if p.is_file())


@pytest.mark.parametrize("kind", KINDS)
def test_new_bug_from_a_log_keeps_no_secret(kb_project: Path, kind: str) -> None:
    found = sample(kind)
    log = kb_project / "train.log"
    # the excerpt runs from the traceback to the error: the secret's lines are in it
    log.write_text(f"Traceback (most recent call last):\n{found.text}\n{ERROR_LINE}\n", encoding="utf-8")
    code, out = run("new-bug", "--from-log", str(log), "--date", "2025-11-24")
    assert code == 0, out
    text = written(kb_project)
    assert ERROR_LINE in text
    for secret in found.secrets:
        assert leaks(text + out, secret) == [], secret
    for kept in found.kept:
        assert kept in text, kept  # the lines did reach the bug, with only the secrets taken out


@pytest.mark.parametrize("kind", KINDS)
def test_validate_points_at_every_line_holding_a_secret(kb_project: Path, kind: str) -> None:
    found = sample(kind)
    path = bug_path(kb_project)
    path.write_text(path.read_text(encoding="utf-8") + f"\n```\n{found.text}\n```\n", encoding="utf-8")
    code, out = run("validate")
    assert code == 0, out  # a warning
    lines = path.read_text(encoding="utf-8").splitlines()
    holding = {n for n, line in enumerate(lines, 1) if any(secret in line for secret in found.secrets)}
    warned = {int(n) for n in re.findall(rf"kb/bugs/{BUG_ID}\.md:(\d+): warning: looks like", out)}
    assert warned == holding, out
    for secret in found.secrets:
        assert leaks(out, secret) == []  # the report does not repeat the secret
    assert run("validate", "--strict")[0] == 1


def test_a_hostile_line_does_not_stall_validate_or_import(kb_project: Path) -> None:
    # Lines a backtracking scan takes minutes over (each doubles the work of the one before);
    # every scan is linear, so the commands finish at once. A hang fails this test alone.
    hostile = "x-" * 100_000 + "key\n" + "token " + "a." * 100_000 + "\nhttp://u:" + "@a" * 100_000 + "\n"
    path = bug_path(kb_project)
    path.write_text(path.read_text(encoding="utf-8") + f"\n```\n{hostile}```\nDB_PASSWORD=Tr4x9\n")
    done = kbgen("validate", cwd=kb_project, timeout=90)
    assert done.returncode == 0, done.stderr
    assert "warning: looks like a secret in a name = value pair" in done.stdout
    # a message is at most 200,000 characters: shorter lines for import
    shorter = "x-" * 30_000 + "key\n" + "token " + "a." * 30_000 + "\nhttp://u:" + "@a" * 30_000 + "\n"
    report = kb_project / "report.md"
    report.write_text(f"---\ntitle: Stalls\n---\n## Error message\n\n```\n{shorter}DB_PASSWORD=Tr4x9\n```\n")
    done = kbgen("import", str(report), cwd=kb_project, timeout=90)
    assert done.returncode == 0, done.stderr
    (imported,) = set((kb_project / "kb" / "bugs").iterdir()) - {path}
    text = imported.read_text(encoding="utf-8")
    assert "DB_PASSWORD=<redacted>" in text and "Tr4x9" not in text


def test_an_argument_with_an_undecodable_byte_is_redacted_not_a_traceback(kb_project: Path) -> None:
    # Python hands such a byte over as a lone surrogate, which UTF-8 (and so RE2) cannot carry
    done = subprocess.run(
        [*KBGEN, "new-bug", "--title", b"bad \xff byte password=hunter2pw"],
        cwd=kb_project,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    text = written(kb_project)
    assert "title: bad \ufffd byte password=<redacted>" in text and "hunter2pw" not in text
