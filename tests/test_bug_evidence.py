"""Bug records that tell the truth: evidence per machine, steps decided only by what decides
them, and titles that say where a run failed (closing a bug with its why: test_bug_status)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import BUG_ID, add_keys, add_probe, frontmatter, invoke
from kbgen import clock
from kbgen.bugs.create import draft_new_bug, steps_from
from kbgen.bugs.fill import step_verdict
from kbgen.checks import CheckSyntaxError, parse_check
from kbgen.models import ProbeStatus, StepState
from kbgen.probes.report import ProbeResult
from kbgen.store import find_project, load_kb
from probes_fixtures import PASS

REPO = Path(__file__).resolve().parent.parent
LOGS = REPO / "tests" / "data" / "logs"


LABELS_STEP = """
progress:
  - id: labels
    title: Labels are in range
    decided_by: 'check-labels: status == "pass"'
    fails_if: 'check-labels: status == "fail"'
"""
FAIL = 'return {"status": "fail", "message": "label 7 >= 5 classes"}'
SKIP = 'return {"status": "skip", "message": "no saved batch on this machine"}'


# --------------------------------------------------------------------------- machines


def test_a_second_machine_keeps_the_first_machines_facts_and_steps(kb_project: Path) -> None:
    add_keys(kb_project, LABELS_STEP)
    add_probe(kb_project, "check-labels", FAIL)
    assert invoke("probe", "--fill", BUG_ID, "system", "check-labels").exit_code == 0
    first = frontmatter(kb_project)
    [gpu_box] = first["environments"]
    assert first["progress"][0]["state"] == "failed"

    add_probe(kb_project, "check-labels", PASS)  # the laptop's data passes
    result = invoke(
        "probe",
        "--fill",
        BUG_ID,
        "system",
        "check-labels",
        KBGEN_HOSTNAME="laptop",
        KBGEN_NOW="2025-11-22T09:00:00Z",
    )
    assert result.exit_code == 0, result.stderr
    data = frontmatter(kb_project)
    assert [e["host"] for e in data["environments"]] == ["testhost", "laptop"]
    assert data["environments"][0] == gpu_box  # facts, findings and report of the first machine untouched
    laptop = data["environments"][1]
    assert {f["probe"]: f["status"] for f in laptop["findings"]} == {"system": "pass", "check-labels": "pass"}
    assert laptop["facts"]["system.os"]
    assert laptop["report"] != gpu_box["report"]
    assert (kb_project / "kb" / "bugs" / laptop["report"]).is_file()
    assert (kb_project / "kb" / "bugs" / gpu_box["report"]).is_file()
    # the step keeps the failing machine's verdict; the laptop's pass is in its own findings
    assert data["progress"][0]["state"] == "failed"
    assert data["progress"][0]["host"] == "testhost"
    assert data["history"][-1]["note"].startswith("on new machine laptop: 2 probes")

    shown = invoke("show", BUG_ID).output
    assert "Machine 1 (failing machine): testhost" in shown
    assert "Machine 2 (also probed): laptop" in shown


def test_a_skip_never_overwrites_and_a_rerun_on_the_same_machine_does(kb_project: Path) -> None:
    add_keys(kb_project, LABELS_STEP)
    add_probe(kb_project, "check-labels", PASS)
    assert invoke("probe", "--fill", BUG_ID, "check-labels").exit_code == 0
    add_probe(kb_project, "check-labels", SKIP)
    assert invoke("probe", "--fill", BUG_ID, "check-labels", KBGEN_NOW="2025-11-22T09:00:00Z").exit_code == 0
    step = frontmatter(kb_project)["progress"][0]
    assert (step["state"], step["evidence"]) == ("passed", "on testhost: pass: all good")
    add_probe(kb_project, "check-labels", FAIL)
    assert invoke("probe", "--fill", BUG_ID, "check-labels", KBGEN_NOW="2025-11-23T09:00:00Z").exit_code == 0
    data = frontmatter(kb_project)
    assert data["progress"][0]["state"] == "failed"
    event = [e for e in data["history"] if e["kind"] == "step"]
    assert [(e["from"], e["to"]) for e in event] == [("passed", "failed")]


def test_primary_names_the_failing_machine(kb_project: Path) -> None:
    assert invoke("probe", "--fill", BUG_ID, "system", KBGEN_HOSTNAME="laptop").exit_code == 0
    assert (
        invoke("probe", "--fill", BUG_ID, "system", "--primary", KBGEN_HOSTNAME="trainbox-2").exit_code == 0
    )
    assert [e["host"] for e in frontmatter(kb_project)["environments"]] == ["trainbox-2", "laptop"]


# --------------------------------------------------------------------------- what decides a step


def _shipped_step(error_id: str, step_id: str):
    kb = load_kb(find_project(REPO))
    [step] = [s for s in steps_from(kb.errors[error_id].record.diagnostics) if s.id == step_id]
    return step


@pytest.mark.usefixtures("base_layer")
def test_cuda_launch_blocking_step_stays_pending_when_the_flag_is_unset(
    kb_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    step = _shipped_step("cuda-illegal-memory-access", "rerun-synchronously")
    assert step.decided_by == 'debug-env: CUDA_LAUNCH_BLOCKING == "1"'
    add_keys(
        kb_project,
        f"progress:\n  - id: {step.id}\n    title: {step.title}\n    decided_by: '{step.decided_by}'",
    )
    monkeypatch.delenv("CUDA_LAUNCH_BLOCKING", raising=False)
    assert invoke("probe", "--fill", BUG_ID, "debug-env").exit_code == 0
    data = frontmatter(kb_project)
    assert data["environments"][0]["findings"][0]["status"] == "pass"  # the probe passed ...
    assert data["progress"][0].get("state", "pending") == "pending"  # ... which does not tick the step
    assert data["progress"][0]["evidence"] == (
        'on testhost: not yet: CUDA_LAUNCH_BLOCKING == "1" does not hold (CUDA_LAUNCH_BLOCKING=None)'
    )
    monkeypatch.setenv("CUDA_LAUNCH_BLOCKING", "1")
    assert invoke("probe", "--fill", BUG_ID, "debug-env", KBGEN_NOW="2025-11-22T09:00:00Z").exit_code == 0
    assert frontmatter(kb_project)["progress"][0]["state"] == "passed"


def _result(probe: str, status: str, **facts: object) -> ProbeResult:
    return ProbeResult(id=probe, status=ProbeStatus(status), facts=facts)  # type: ignore[arg-type]


@pytest.mark.usefixtures("base_layer")
def test_build_matches_gpu_is_decided_by_the_arch_and_driver_verdicts() -> None:
    step = _shipped_step("cuda-illegal-memory-access", "build-matches-gpu")
    assert step_verdict(step, _result("compat", "pass", arch_ok=True, driver_ok=True)) == StepState.passed
    assert step_verdict(step, _result("compat", "fail", arch_ok=False, driver_ok=True)) == StepState.failed
    assert step_verdict(step, _result("compat", "warn", arch_ok=True, driver_ok=None)) is None
    assert step_verdict(step, _result("compat", "skip")) == StepState.skipped


@pytest.mark.usefixtures("base_layer")
def test_fresh_process_smoke_and_a_manual_step() -> None:
    smoke = _shipped_step("cuda-illegal-instruction", "fresh-process-smoke")
    assert step_verdict(smoke, _result("cuda-smoke", "pass", steps_passed=4)) == StepState.passed
    assert step_verdict(smoke, _result("cuda-smoke", "fail", failed_step="matmul")) == StepState.failed
    assert step_verdict(smoke, _result("cuda-smoke", "error")) is None
    # "GPU or CPU?" is read off the log by a person; a passing cpu probe does not answer it
    manual = _shipped_step("cuda-illegal-instruction", "cpu-or-gpu")
    assert (manual.decided_by, manual.probe) == ("manual", "cpu")
    assert parse_check(manual.decided_by) is None


@pytest.mark.usefixtures("base_layer")
def test_no_shipped_step_is_ticked_by_a_bare_pass() -> None:
    """A probe's pass means 'nothing wrong found', not 'this step was done': a step passes on a
    bare pass only when its condition asks for nothing but the probe's status."""
    kb = load_kb(find_project(REPO))
    decided = 0
    for error in kb.errors.values():
        for step in steps_from(error.record.diagnostics):
            check = parse_check(step.decided_by)
            if check is None:
                continue
            decided += 1
            assert step.probe == check.probe
            ticked = step_verdict(step, _result(check.probe, "pass")) == StepState.passed
            assert ticked == (check.names() == ["status"]), (error.record.id, step.id)
    assert decided >= 30


@pytest.mark.parametrize(
    "text",
    ['gpu: __import__("os")', "gpu: name.upper() == 'X'", "gpu: [x for x in y]", "gpu name == 1", "gpu: =="],
)
def test_conditions_are_parsed_never_run(text: str) -> None:
    with pytest.raises(CheckSyntaxError):
        parse_check(text)


def test_a_bad_condition_is_a_validate_error_with_file_and_line(kb_project: Path) -> None:
    path = kb_project / "kb/errors/cuda-illegal-memory-access.md"
    path.write_text(path.read_text().replace("    probe: gpu", "    decided_by: 'gpu: open(\"x\")'"))
    result = invoke("validate")
    assert result.exit_code == 1
    assert (
        "kb/errors/cuda-illegal-memory-access.md:14: diagnostics.0: 'gpu: open(\"x\")': "
        "Call is not allowed; use facts, literals, comparisons, and/or/not\n"
    ) in result.output


def test_step_ticks_a_manual_step_by_hand(kb_project: Path) -> None:
    result = invoke("step", BUG_ID, "check-gpu", "done", "--note", "nvidia-smi lists the card")
    assert result.output == f"{BUG_ID}: step check-gpu pending -> passed\n"
    step = frontmatter(kb_project)["progress"][0]
    assert (step["state"], step["evidence"], step["by"]) == ("passed", "nvidia-smi lists the card", "tester")
    missing = invoke("step", BUG_ID, "nope", "done")
    assert missing.exit_code == 1
    assert missing.stderr == f"Error: {BUG_ID} has no step 'nope'\n  hint: its steps: check-gpu\n"


# --------------------------------------------------------------------------- new bugs and titles


def test_a_fresh_bug_from_a_real_log_passes_validate_strict(kb_project: Path) -> None:
    result = invoke("new-bug", "--from-log", str(LOGS / "ima-regtr.log"))
    assert result.exit_code == 0, result.stderr
    bug_id = result.output.split()[0]
    assert invoke("validate", "--strict").output.endswith("checked: no problems\n")
    data = json.loads(invoke("show", bug_id, "--json").output)
    assert data["title"] == "CUDA illegal memory access in trainer.py:101"
    assert data["history"][0]["by"] == "tester"
    assert "<!-- prompt:" in data["body"]


@pytest.mark.parametrize(
    ("log", "title"),
    [
        ("launch-basicsr.log", "CUDA launch failure in SR_model.py:119 (optimize_parameters)"),
        ("launch-deepsdf.log", "CUDA launch failure in train_deep_sdf.py:501 (main_function)"),
        ("cudaii-fooocus.log", "CUDA illegal instruction in core.py:210 (preview_function)"),
        ("dsa-detectors.log", "CUDA device side assert in SpatialClassNLLCriterion.cu:104"),
    ],
)
@pytest.mark.usefixtures("base_layer")
def test_titles_from_real_logs_name_where_it_failed(log: str, title: str) -> None:
    kb = load_kb(find_project(REPO))
    assert draft_new_bug(kb, (LOGS / log).read_text(encoding="utf-8"), name=log).title == title


def test_progress_bars_and_what_prefixes_stay_out_of_title_and_message(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(
        "Epoch 3:  41%|####      | 410/1000 [01:02<01:30,  6.51it/s]\n"
        "terminate called after throwing an instance of 'c10::Error'\n"
        "  what():  CUDA error: an illegal memory access was encountered\n"
    )
    draft = draft_new_bug(load_kb(find_project(REPO)), log.read_text(encoding="utf-8"), name=log.name)
    assert "it/s" not in draft.message and "what():" not in draft.message
    assert not draft.title.startswith("what")


def test_history_names_the_git_user_when_kbgen_user_is_unset(
    kb_project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "gitconfig"
    config.write_text("[user]\n\tname = Mina Park\n")
    monkeypatch.delenv("KBGEN_USER")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    clock._git_user.cache_clear()
    try:
        assert invoke("status", BUG_ID, "confirmed").exit_code == 0
    finally:
        clock._git_user.cache_clear()
    assert frontmatter(kb_project)["history"][-1]["by"] == "Mina Park"


# --------------------------------------------------------------------------- the old shape


OLD_SHAPE = """
environment:
  host: trainbox
  python: 3.10.12
  values:
    gpu.name: NVIDIA GeForce RTX 3060
    cpu.flags: avx avx2
    debug-env.nvcc: null
findings:
  - probe: gpu
    status: pass
    message: RTX 3060
"""


def test_old_single_environment_files_read_warn_and_migrate(kb_project: Path) -> None:
    add_keys(kb_project, OLD_SHAPE)
    result = invoke("validate")
    assert result.exit_code == 0
    assert (
        "old single-environment shape (environment, findings): `kbgen migrate` upgrades it" in result.output
    )
    assert "Machine 1 (failing machine): trainbox" in invoke("show", BUG_ID).output
    assert invoke("migrate").output == (
        f"{BUG_ID}: upgraded environments in kb/bugs/{BUG_ID}.md\n1 bug file(s) upgraded\n"
    )
    data = frontmatter(kb_project)
    assert "environment" not in data and "findings" not in data
    [env] = data["environments"]
    assert env["facts"] == {"gpu.name": "NVIDIA GeForce RTX 3060"}
    assert env["findings"] == [{"probe": "gpu", "status": "pass", "message": "RTX 3060"}]
    kept = json.loads((kb_project / "kb" / "bugs" / env["report"]).read_text())
    assert kept["facts"] == {"cpu.flags": "avx avx2"}  # nulls dropped, the rest kept beside the bug
    assert invoke("validate", "--strict").exit_code == 0
    assert invoke("migrate").output == "every bug file is current\n"


def test_the_next_write_upgrades_an_old_file_too(kb_project: Path) -> None:
    add_keys(kb_project, OLD_SHAPE)
    assert invoke("status", BUG_ID, "confirmed").exit_code == 0
    data = frontmatter(kb_project)
    assert "environment" not in data and data["environments"][0]["host"] == "trainbox"
