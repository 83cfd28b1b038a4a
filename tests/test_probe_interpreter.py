"""--python: a missing interpreter, one that cannot start, one without torch, one whose torch dies."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import invoke
from probes_fixtures import PASS, probe_file

TORCH_PROBES = ("cpu", "torch-build", "gpu", "compat", "cuda-smoke")


def script(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A plain ``python -m venv``: no torch, no kbgen, no pydantic."""
    folder = tmp_path_factory.mktemp("bare") / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(folder)], check=True)
    return folder / "bin" / "python"


def test_missing_interpreter_is_one_clear_error(kb_project: Path) -> None:
    result = invoke("probe", "--python", "nowhere/bin/python")
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: nowhere/bin/python: no such interpreter\n  hint: pass --python PATH (e.g. .venv/bin/python)\n"
    )
    assert result.stdout == ""


def test_a_folder_is_not_an_interpreter(kb_project: Path) -> None:
    result = invoke("probe", "--python", str(kb_project))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {kb_project}: is a folder, not a Python interpreter\n")


def test_interpreter_that_crashes_at_start_is_reported_once(kb_project: Path, tmp_path: Path) -> None:
    python = script(tmp_path / "python", "#!/bin/sh\necho 'cannot load libpython' >&2\nkill -SEGV $$\n")
    result = invoke("probe", "--python", str(python))
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        f"Error: the interpreter cannot run probes: {python} died of SIGSEGV (segmentation fault) before "
        "running anything; it printed:\ncannot load libpython\n"
    )


def test_interpreter_that_hangs_at_start_costs_one_timeout_not_one_per_probe(
    kb_project: Path, tmp_path: Path
) -> None:
    starts = tmp_path / "starts.log"
    python = script(tmp_path / "python", f"#!/bin/sh\necho started >> {starts}\nexec sleep 600\n")
    result = invoke("probe", "--json", "--timeout", "1", "--python", str(python))
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["interpreter_error"] == f"{python} did not start within 1 s"
    assert report["results"] == []
    # the eight default probes (two lanes) found it out by starting the interpreter once
    assert starts.read_text() == "started\n"


def test_interpreter_without_torch_skips_torch_probes_with_the_reason(
    kb_project: Path, bare_venv: Path
) -> None:
    (kb_project / "kb" / "probes" / "plain.py").write_text(probe_file("plain", PASS))
    result = invoke(
        "probe", "--json", "--python", str(bare_venv), "system", "torch-build", "cuda-smoke", "cpu", "plain"
    )
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    results = {r["id"]: r for r in report["results"]}
    assert report["torch_import"]["status"] == "missing"
    assert "No module named 'torch'" in report["torch_import"]["message"]
    for probe_id in ("torch-build", "cuda-smoke"):
        assert results[probe_id]["status"] == "skip"
        assert results[probe_id]["message"] == (
            f"needs torch, which is not importable in {bare_venv} "
            "(ModuleNotFoundError: No module named 'torch')"
        )
    # the CPU probe still reports the CPU; it only cannot check torch against it
    assert results["cpu"]["status"] == "pass"
    assert results["cpu"]["facts"]["capability"] is None
    assert results["system"]["status"] == "pass"
    assert results["system"]["facts"]["venv"] == str(bare_venv.parent.parent)
    assert results["plain"]["status"] == "pass"


def test_python_from_environment_variable(
    kb_project: Path, bare_venv: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KBGEN_PYTHON", str(bare_venv))
    report = json.loads(invoke("probe", "--json", "system").stdout)
    assert report["python"]["executable"] == str(bare_venv)


@pytest.fixture
def torch_that_sigills(tmp_path: Path) -> dict[str, str]:
    """An environment where ``import torch`` dies of SIGILL, as on a CPU without the needed ISA."""
    fake = tmp_path / "fake-site" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("import os, signal\nos.kill(os.getpid(), signal.SIGILL)\n")
    return {"PYTHONPATH": str(fake.parent)}


def test_torch_import_that_dies_of_sigill_becomes_results(
    kb_project: Path, torch_that_sigills: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in torch_that_sigills.items():
        monkeypatch.setenv(key, value)
    result = invoke("probe", "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    results = {r["id"]: r for r in report["results"]}
    assert report["torch_import"]["status"] == "crash"
    assert report["torch_import"]["signal"] == "SIGILL"
    # the probes that cannot run without torch say why, once each, without a timeout
    for probe_id in ("torch-build", "cuda-smoke"):
        assert results[probe_id]["status"] == "crash"
        assert results[probe_id]["signal"] == "SIGILL"
        assert "importing torch died of SIGILL (illegal instruction)" in results[probe_id]["message"]
    # the CPU probe turns the crash into its verdict
    assert results["cpu"]["status"] == "fail"
    assert results["cpu"]["message"].startswith("importing torch dies of SIGILL (illegal instruction)")
    assert results["gpu"]["status"] in ("skip", "pass")
    for probe_id in ("system", "packages", "debug-env"):
        assert results[probe_id]["status"] == "pass"


@pytest.mark.skipif(shutil.which("python3") is None, reason="no system python3")
def test_interpreter_by_command_name_is_found_on_path(kb_project: Path) -> None:
    report = json.loads(invoke("probe", "--json", "--python", "python3", "system").stdout)
    assert Path(report["python"]["executable"]).is_absolute()
