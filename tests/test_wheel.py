"""kbgen as a new user gets it: the built wheel in a fresh venv (not editable, no torch), used in an
empty git repository after `kbgen init`, with nothing copied from this repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kbgen.init import FORM_FIELDS
from kbgen.models import Bug

REPO = Path(__file__).resolve().parent.parent
OOM_LOG = (
    "Traceback (most recent call last):\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 23.69 GiB of which 1.20 GiB is free.\n"
)
IMA = "CUDA error: an illegal memory access was encountered"

pytestmark = pytest.mark.slow


def _run(
    args: list[str], cwd: Path, env: dict[str, str], stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, input=stdin or "", check=False
    )


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel built from this checkout installed; dependencies come from the
    package index pip is configured with, torch stays out."""
    root = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KBGEN_", "VIRTUAL_ENV", "PYTHONPATH"))}
    built = _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(REPO), "-w", str(root / "dist")],
        root,
        env,
    )
    assert built.returncode == 0, built.stderr
    wheel = next((root / "dist").glob("kbgen-*.whl"))
    made = _run([sys.executable, "-m", "venv", str(root / "venv")], root, env)
    assert made.returncode == 0, made.stderr
    python = root / "venv" / "bin" / "python"
    installed = _run([str(python), "-m", "pip", "install", "-q", "--no-compile", str(wheel)], root, env)
    assert installed.returncode == 0, installed.stderr
    return root / "venv"


@pytest.fixture(scope="module")
def user(venv: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """An empty git repository after `kbgen init`, and the environment its user has."""
    repo = tmp_path_factory.mktemp("project")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KBGEN_", "VIRTUAL_ENV", "PYTHONPATH"))}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["NO_MKDOCS_2_WARNING"] = "1"
    if shutil.which("git"):
        assert _run(["git", "init", "-q"], repo, env).returncode == 0
    init = _run([str(venv / "bin" / "kbgen"), "init"], repo, env)
    assert init.returncode == 0, init.stderr
    return repo, env


def kbgen(
    user: tuple[Path, dict[str, str]], *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    repo, env = user
    return _run(["kbgen", *args], repo, env, stdin)


def test_the_wheel_has_no_torch_and_is_not_editable(venv: Path) -> None:
    python = str(venv / "bin" / "python")
    code = "import importlib.util, kbgen; print(importlib.util.find_spec('torch') is None, kbgen.__file__)"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KBGEN_", "VIRTUAL_ENV", "PYTHONPATH"))}
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True, cwd=venv, env=env)
    out = done.stdout
    no_torch, where = out.split()
    assert no_torch == "True" and where.startswith(str(venv))


def test_a_new_project_works_from_the_wheel(user: tuple[Path, dict[str, str]]) -> None:
    repo, _ = user
    checked = kbgen(user, "validate", "--strict")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    triage = kbgen(user, "triage", "-", stdin=OOM_LOG)
    assert "1. cuda-out-of-memory" in triage.stdout, triage.stdout + triage.stderr
    built = _run(["mkdocs", "build", "--strict", "--site-dir", "site"], repo, user[1])
    assert built.returncode == 0, built.stderr
    page = (repo / "site" / "errors" / "cuda-out-of-memory" / "index.html").read_text()
    assert "assets/kbgen.css" in page and (repo / "site" / "assets" / "kbgen.css").is_file()
    assert (repo / "site" / "assets" / "favicon.svg").is_file()
    new = kbgen(user, "new-bug", "--error", "cuda-out-of-memory", "--title", "OOM in the eval loop")
    assert new.returncode == 0, new.stderr
    bug_file = repo / new.stdout.split()[1]
    assert "error: cuda-out-of-memory" in bug_file.read_text()


def test_the_issue_form_matches_the_bug_schema(user: tuple[Path, dict[str, str]]) -> None:
    repo, _ = user
    form = yaml.safe_load((repo / ".github/ISSUE_TEMPLATE/gpu-failure.yml").read_text())
    ids = [item["id"] for item in form["body"] if item["type"] != "markdown"]
    assert ids == [field_id for field_id, *_ in FORM_FIELDS]
    assert all(bug_field is None or bug_field in Bug.model_fields for _, _, bug_field, _, _ in FORM_FIELDS)


def test_run_files_a_filled_bug_and_a_second_init_changes_nothing(user: tuple[Path, dict[str, str]]) -> None:
    repo, _ = user
    code = f"raise RuntimeError({IMA!r})"
    plain = kbgen(user, "run", "--", "python", "-c", code)
    assert plain.returncode == 1 and "looks like cuda-illegal-memory-access" in plain.stderr
    before = set((repo / "kb" / "bugs").glob("BUG-*.md"))
    filed = kbgen(user, "run", "--file-bug", "--", "python", "-c", code)
    assert filed.returncode == 1, filed.stderr
    (new,) = set((repo / "kb" / "bugs").glob("BUG-*.md")) - before
    data = yaml.safe_load(new.read_text().split("---")[1])
    assert data["error"] == "cuda-illegal-memory-access"
    [machine] = data["environments"]
    assert "system.os" in machine["facts"]
    venv_python = Path(user[1]["PATH"].split(os.pathsep)[0]) / "python"
    assert machine["python"].endswith(f"({venv_python})")  # probed in the command's Python
    assert (repo / "kb" / "bugs" / machine["report"]).is_file()  # the full report beside the bug
    files = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
    again = kbgen(user, "init")
    assert again.returncode == 0 and again.stdout == "Nothing to do: every file is in place.\n"
    assert files == {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
