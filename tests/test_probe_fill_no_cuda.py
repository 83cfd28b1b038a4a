"""`kbgen probe --fill` for a CUDA error on a machine whose torch cannot run CUDA (a CPU-only build,
or no visible GPU): the output and the bug say this machine cannot reproduce it, and the bug keeps
asking for a GPU machine's facts until one is filled in, which then becomes the failing machine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import kbgen

pytestmark = pytest.mark.usefixtures("base_layer")

#: an empty list of visible devices: torch sees no GPU here, whatever the machine has
NO_GPU = {"CUDA_VISIBLE_DEVICES": "", "KBGEN_HOSTNAME": "laptop"}
CANNOT = "cannot reproduce cuda-illegal-memory-access, a CUDA error: torch "
NO_CUDA_HERE = ("is a CPU-only build (no CUDA)", "sees no CUDA device")


@pytest.fixture
def bug(tmp_path: Path) -> tuple[Path, str]:
    assert kbgen("init", cwd=tmp_path).returncode == 0
    made = kbgen(
        "new-bug",
        "--title",
        "Illegal memory access in the loss",
        "--error",
        "cuda-illegal-memory-access",
        "--json",
        cwd=tmp_path,
    )
    assert made.returncode == 0, made.stderr
    return tmp_path, json.loads(made.stdout)["id"]


def shown(project: Path, bug_id: str) -> dict[str, object]:
    result = kbgen("show", bug_id, "--json", cwd=project)
    assert result.returncode == 0, result.stderr
    data: dict[str, object] = json.loads(result.stdout)
    return data


def test_a_machine_without_cuda_is_marked_and_a_gpu_machine_still_asked_for(bug: tuple[Path, str]) -> None:
    project, bug_id = bug
    fill = kbgen("probe", "--fill", bug_id, cwd=project, env=NO_GPU)
    assert fill.returncode == 0, fill.stderr
    said = [line for line in fill.stdout.splitlines() if "cannot reproduce" in line]
    assert len(said) == 1 and said[0].startswith(f"{bug_id}: this machine {CANNOT}"), fill.stdout
    assert any(why in said[0] for why in NO_CUDA_HERE), said
    assert f"run `kbgen probe --fill {bug_id}` where torch sees a CUDA GPU" in said[0]

    data = shown(project, bug_id)
    [env] = data["environments"]  # type: ignore[misc]
    assert env["host"] == "laptop"
    assert env["cannot_reproduce"].startswith(CANNOT)
    step = data["progress"][-1]  # type: ignore[index]
    assert (step["id"], step["state"]) == ("fill-on-a-gpu-machine", "pending")
    assert step["decided_by"] == "torch-build: cuda_available == true"
    assert step["evidence"].startswith("on laptop: not yet: cuda_available == true does not hold")
    assert CANNOT in data["history"][-1]["note"]  # type: ignore[index]

    text = kbgen("show", bug_id, cwd=project).stdout
    assert f"Machine 1 (probed, but {CANNOT}" in text
    assert "fill-on-a-gpu-machine: Fill from a machine where torch sees a CUDA GPU" in text

    # the same machine again: still marked, the step still asked for once
    again = kbgen("probe", "--fill", bug_id, cwd=project, env=NO_GPU)
    assert again.returncode == 0 and "this machine cannot reproduce" in again.stdout
    steps = [s["id"] for s in shown(project, bug_id)["progress"]]  # type: ignore[attr-defined]
    assert steps.count("fill-on-a-gpu-machine") == 1


def test_a_gpu_machine_filled_later_becomes_the_failing_machine(bug: tuple[Path, str]) -> None:
    project, bug_id = bug
    assert kbgen("probe", "--fill", bug_id, cwd=project, env=NO_GPU).returncode == 0
    # a GPU node's report, as `kbgen probe --json` writes it there (this machine's, with torch
    # seeing a device), reaches the fleet and fills the bug
    report = json.loads(kbgen("probe", "--json", "torch-build", "system", cwd=project, env=NO_GPU).stdout)
    report["host"] = "gpu07"
    for result in report["results"]:
        if result["id"] == "torch-build":
            result["facts"].update({"cuda_available": True, "cpu_only": False, "cuda": "12.4"})
    (project / "gpu07.json").write_text(json.dumps(report), encoding="utf-8")
    assert kbgen("fleet", "ingest", "gpu07.json", cwd=project).returncode == 0
    fill = kbgen("probe", "--fill", bug_id, "--from-fleet", "gpu07", cwd=project)
    assert fill.returncode == 0, fill.stderr
    assert "cannot reproduce" not in fill.stdout

    data = shown(project, bug_id)
    hosts = [(e["host"], bool(e.get("cannot_reproduce"))) for e in data["environments"]]  # type: ignore[attr-defined]
    assert hosts == [("gpu07", False), ("laptop", True)]
    step = next(s for s in data["progress"] if s["id"] == "fill-on-a-gpu-machine")  # type: ignore[attr-defined]
    assert (step["state"], step["host"]) == ("passed", "gpu07")
    assert "Machine 1 (failing machine): gpu07" in kbgen("show", bug_id, cwd=project).stdout


def test_an_error_that_needs_no_gpu_is_not_marked(tmp_path: Path) -> None:
    assert kbgen("init", cwd=tmp_path).returncode == 0
    made = kbgen(
        "new-bug", "--title", "Bad label", "--error", "cpu-index-out-of-range", "--json", cwd=tmp_path
    )
    bug_id = json.loads(made.stdout)["id"]
    fill = kbgen("probe", "--fill", bug_id, cwd=tmp_path, env=NO_GPU)
    assert fill.returncode == 0 and "cannot reproduce" not in fill.stdout
    data = shown(tmp_path, bug_id)
    assert data["environments"][0]["cannot_reproduce"] is None  # type: ignore[index]
    assert all(s["id"] != "fill-on-a-gpu-machine" for s in data["progress"])  # type: ignore[attr-defined]
