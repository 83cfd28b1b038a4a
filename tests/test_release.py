"""The release as it runs in .github/workflows/release.yml: build the sdist and the wheel, check
them, install the wheel in a clean venv and use it; and the install line `kbgen init` writes,
pointed at the built wheel as the README says to do until kbgen is on PyPI."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml

import kbgen

REPO = Path(__file__).resolve().parent.parent
WORKFLOW = REPO / ".github" / "workflows" / "release.yml"

pytestmark = pytest.mark.slow


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KBGEN_", "VIRTUAL_ENV", "PYTHONPATH"))}
    env["NO_MKDOCS_2_WARNING"] = "1"
    return env


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=600, check=False)


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel, built the way the workflow builds them."""
    out = tmp_path_factory.mktemp("dist")
    built = _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(REPO)], REPO)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    return out


def test_the_workflow_builds_and_checks_with_the_steps_tested_here() -> None:
    steps = yaml.safe_load(WORKFLOW.read_text())["jobs"]["build"]["steps"]
    commands = [step.get("run", "") for step in steps]
    assert any(c.startswith("python -m build --no-isolation") for c in commands)
    assert "sh scripts/release-check.sh dist python" in commands
    publish = yaml.safe_load(WORKFLOW.read_text())["jobs"]["publish"]
    assert publish["permissions"] == {"id-token": "write"}  # trusted publishing, no stored token


def test_both_artifacts_carry_the_one_version_and_what_kbgen_needs_at_run_time(dist: Path) -> None:
    version = kbgen.__version__
    wheel = dist / f"kbgen-{version}-py3-none-any.whl"
    sdist = dist / f"kbgen-{version}.tar.gz"
    assert sorted(p.name for p in dist.iterdir()) == sorted([wheel.name, sdist.name])
    names = zipfile.ZipFile(wheel).namelist()
    for needed in ("kbgen/templates/bug.md.j2", "kbgen/scaffold/requirements.txt", "kbgen/assets/kbgen.css"):
        assert needed in names, needed
    assert any(n.startswith("kbgen/knowledge/errors/") for n in names)
    metadata = zipfile.ZipFile(wheel).read(f"kbgen-{version}.dist-info/METADATA").decode()
    assert f"\nVersion: {version}\n" in metadata
    torch_lines = [line for line in metadata.splitlines() if line.startswith("Requires-Dist: torch")]
    assert torch_lines == ["Requires-Dist: torch==2.13.0; extra == 'torch'"]  # never a plain dependency
    with tarfile.open(sdist) as tar:
        members = tar.getnames()
    for needed in ("templates/bug.md.j2", "CHANGELOG.md", "pyproject.toml", "requirements/test.lock"):
        assert f"kbgen-{version}/{needed}" in members, needed
    assert not any("/.hypothesis/" in m or "/.venv" in m for m in members)


def test_the_release_check_installs_the_wheel_and_uses_it(dist: Path) -> None:
    done = _run(["sh", str(REPO / "scripts" / "release-check.sh"), str(dist), sys.executable], REPO)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Checking" in done.stdout and "PASSED" in done.stdout  # twine's verdict on each file
    assert done.stdout.rstrip().endswith("ok")
    assert "created kb/requirements.txt" in done.stdout


def test_the_install_line_init_writes_resolves_to_the_built_wheel(dist: Path, tmp_path: Path) -> None:
    """What a team does before the first release: point kb/requirements.txt at a wheel (here, a
    folder of wheels standing in for a private index) and install from it."""
    init = _run([sys.executable, "-m", "kbgen", "init"], tmp_path)
    assert init.returncode == 0, init.stderr
    line = (tmp_path / "kb" / "requirements.txt").read_text().splitlines()[-1]
    assert line == f"kbgen=={kbgen.__version__}"
    workflow = yaml.safe_load((tmp_path / ".github/workflows/kb.yml").read_text())
    assert "pip install -r kb/requirements.txt" in [s.get("run") for s in workflow["jobs"]["kb"]["steps"]]
    pip = [sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--no-index", "--target", "t"]
    resolved = _run([*pip, "--find-links", str(dist), "-r", "kb/requirements.txt"], tmp_path)
    assert resolved.returncode == 0, resolved.stderr
    assert f"Would install kbgen-{kbgen.__version__}" in resolved.stdout
    wheel = next(dist.glob("kbgen-*.whl"))
    (tmp_path / "kb" / "requirements.txt").write_text(f"{wheel}\n")
    direct = _run([*pip, "-r", "kb/requirements.txt"], tmp_path)
    assert direct.returncode == 0, direct.stderr
    assert f"Would install kbgen-{kbgen.__version__}" in direct.stdout
