"""The small things a person at the terminal meets: suggestions, any-case values, completion, --json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PATIENCE, run

BUG = "BUG-20251109-002"


def test_a_misspelled_command_gets_a_suggestion() -> None:
    code, out = run("tirage", "crash.log")
    assert code != 0
    assert "No such command 'tirage'. Did you mean 'triage'?" in out
    code, out = run("xyzzy")
    assert code != 0 and "No such command 'xyzzy'." in out and "Did you mean" not in out


def test_unknown_error_id_suggests_the_nearest(kb_project: Path) -> None:
    code, out = run("new-bug", "--title", "x", "--error", "cuda-ilegal-memory-access")
    assert code == 1
    assert "did you mean 'cuda-illegal-memory-access'?" in out
    assert not list((kb_project / "kb/bugs").glob("BUG-20251121-*"))


def test_statuses_and_severities_in_any_case(kb_project: Path) -> None:
    code, out = run("status", BUG, "Fixed", "--json")
    assert code == 0, out
    assert json.loads(out) == {"id": BUG, "from": "open", "to": "fixed", "changed": True}
    assert "status: fixed" in (kb_project / f"kb/bugs/{BUG}.md").read_text()
    code, out = run("list", "--status", "FIXED", "--severity", "High")
    assert code == 0 and BUG in out
    code, out = run("new-bug", "--title", "loud", "--severity", "CRITICAL", "--json")
    assert code == 0, out
    made = json.loads(out)
    assert made["id"].startswith("BUG-20251121-") and made["path"].startswith("kb/bugs/")
    assert "severity: critical" in (kb_project / made["path"]).read_text()


def test_status_help_lists_the_statuses() -> None:
    code, out = run("status", "--help")
    assert code == 0
    for name in ("open", "confirmed", "investigating", "fix-in-progress", "fixed", "verified", "wontfix"):
        assert name in out


def test_every_command_help_has_an_example() -> None:
    for name in ("renumber", "schema", "show", "status", "new-bug", "list", "validate"):
        code, out = run(name, "--help")
        assert code == 0 and "Example" in out and f"kbgen {name} " in out, name


def test_open_without_a_terminal_starts_no_editor(kb_project: Path, tmp_path: Path) -> None:
    marker = tmp_path / "editor-ran"
    env = {**os.environ, "EDITOR": f"touch {marker}; true", "VISUAL": f"touch {marker}; true"}
    done = subprocess.run(
        [sys.executable, "-m", "kbgen", "new-bug", "--title", "no tty", "--open"],
        cwd=kb_project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=PATIENCE,
    )
    assert done.returncode == 0, done.stderr
    assert "not opening an editor: no terminal" in done.stderr
    assert not marker.exists()


def complete(kb_project: Path, words: str) -> list[str]:
    env = {
        **os.environ,
        "_KBGEN_COMPLETE": "bash_complete",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1)),
    }
    done = subprocess.run(
        [sys.executable, "-c", "from kbgen.cli import main; main()"],
        cwd=kb_project,
        env=env,
        capture_output=True,
        text=True,
        timeout=PATIENCE,
    )
    return [line.split(",", 1)[1] for line in done.stdout.splitlines() if "," in line]


def test_shell_completion_offers_ids(kb_project: Path) -> None:
    assert complete(kb_project, "kbgen show BUG-2025") == [BUG]
    assert complete(kb_project, "kbgen status ") == [BUG]
    assert complete(kb_project, "kbgen new-bug --error cuda-il") == ["cuda-illegal-memory-access"]
    assert "cuda-smoke" in complete(kb_project, "kbgen probe cu")
    assert complete(kb_project, "kbgen probe --fill BUG") == [BUG]
    assert complete(kb_project, "kbgen tri") == ["triage"]


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
            "new-error",
            "import",
            "fleet",
            "fix",
            "step",
            "migrate",
            "init",
            "kb",
            "run",
            "env",
        ]
    )
    for name in commands:
        sub_code, sub_out = run(name, "--help")
        assert sub_code == 0 and f" {name} [OPTIONS]" in sub_out.splitlines()[0], name
        assert f"kbgen {name}" in readme, f"{name} is not documented in README.md"


@pytest.mark.parametrize(
    ("command", "kind"), [("status", "cause"), ("status", "fix"), ("fix", "fix"), ("new-bug", "error")]
)
def test_help_names_ids_the_way_a_team_repository_finds_them(command: str, kind: str) -> None:
    """A team's repository has no kb/errors/, kb/causes/ or kb/fixes/ of its own at first: the ids
    come from the base layer, which `kbgen kb list` shows."""
    code, out = run(command, "--help")
    assert code == 0
    assert f"kbgen kb list --kind {kind}" in " ".join(out.split())
    for folder in ("(kb/errors/)", "(kb/causes/)", "(kb/fixes/)", "from templates/bug.md.j2"):
        assert folder not in out
