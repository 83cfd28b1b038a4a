"""The command itself: help, the JSON report's schema, and what `kbgen --help` must not import."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import invoke
from kbgen.probes.report import ProbeReport
from probes_fixtures import PASS, probe_file


def test_help_shows_examples() -> None:
    result = invoke("probe", "--help")
    assert result.exit_code == 0
    for line in (
        "kbgen probe --fill BUG-20251109-002",
        "kbgen probe --list",
        "--python PATH",
        "--timeout SECONDS",
        "--redact-paths",
    ):
        assert line in result.stdout


def test_json_report_is_the_versioned_model(kb_project: Path) -> None:
    (kb_project / "kb" / "probes" / "ok.py").write_text(probe_file("ok", PASS))
    result = invoke("probe", "--json", "ok", "system")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    report = ProbeReport.model_validate(data)
    assert report.schema_version == 1
    assert report.host == "testhost"
    assert report.collected_at.isoformat() == "2025-11-21T10:00:00+00:00"
    assert [r.id for r in report.results] == ["ok", "system"]
    assert report.results[0].model_dump(exclude={"duration_s"}) == {
        "id": "ok",
        "title": "Test probe ok",
        "builtin": False,
        "status": "pass",
        "message": "all good",
        "facts": {"answer": 42},
        "signal": None,
        "exit_code": None,
        "stderr_tail": None,
    }
    assert report.facts()["ok.answer"] == 42
    assert "system.os" in report.facts()
    assert report.torch_import is None  # no probe needed torch, so none was imported


def test_bad_timeout_is_a_usage_error(kb_project: Path) -> None:
    result = invoke("probe", "--timeout", "0")
    assert result.exit_code == 2
    assert "--timeout" in result.stderr and "Traceback" not in result.stderr


def test_probe_command_imports_neither_rich_nor_pydantic_nor_torch_for_help() -> None:
    code = (
        "import sys\n"
        "from kbgen.cli import cli\n"
        "try:\n    cli.main(['probe', '--help'], prog_name='kbgen')\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('rich', 'pydantic', 'torch') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_kbgen_help_lists_probe_and_the_probe_module_stays_light() -> None:
    result = invoke("--help")
    assert "  probe " in result.stdout
    # `kbgen --help` imports every command module; this one must not pull in rich, pydantic or torch
    code = (
        "import sys, kbgen.cli.probe; print([m for m in ('rich', 'pydantic', 'torch') if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
