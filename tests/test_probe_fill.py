"""kbgen probe --fill: results land in the bug; nothing a person wrote is lost."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import BUG_ID, add_keys, add_probe, bug_path, frontmatter, invoke
from probes_fixtures import DEFAULT_PROBES, PASS, SIGILL

FAILING_REPRO = (
    'return {"status": "fail", "message": "illegal memory access reproduced", "facts": {"count": 3}}'
)


def set_keys(root: Path, extra: str, status: str = "open") -> None:
    """Add frontmatter lines to the fixture bug and set its status."""
    path = bug_path(root)
    path.write_text(
        path.read_text().replace("status: open  # set by a person", f"status: {status}  # set by a person")
    )
    add_keys(root, extra)


@pytest.fixture
def bug_with_repro(kb_project: Path) -> Path:
    add_probe(kb_project, "repro", FAILING_REPRO)
    add_probe(kb_project, "check-labels", PASS)
    set_keys(
        kb_project,
        """
repro: repro
progress:
  - id: labels
    title: Labels are in range
    decided_by: 'check-labels: status == "pass"'
    fails_if: 'check-labels: status == "fail"'
  - id: manual
    title: Read the training loop
""",
    )
    return kb_project


def test_fill_with_the_default_set_writes_environment_findings_progress_and_status(
    bug_with_repro: Path,
) -> None:
    before = bug_path(bug_with_repro).read_text()
    result = invoke("probe", "--fill", BUG_ID)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[-1] == (
        f"{BUG_ID}: wrote environments, history, progress, status, updated to kb/bugs/{BUG_ID}.md; "
        "status open -> confirmed"
    )
    data = frontmatter(bug_with_repro)
    [env] = data["environments"]
    assert env["host"] == "testhost"
    assert env["collected_at"].isoformat() == "2025-11-21T10:00:00+00:00"
    facts = env["facts"]
    # the key facts only, never a null, never a tool package
    assert {"system.os", "system.python", "cpu.model", "cpu.verdict", "torch-build.version"} <= set(facts)
    assert None not in facts.values()
    assert not [k for k in facts if k.startswith(("packages.", "repro.", "debug-env."))]
    assert len(facts) <= 17
    assert facts["system.wsl"] in ("no", "WSL1", "WSL2")  # a string, not YAML's boolean `no`
    # the full report lies beside the bug, named in the entry
    assert re.fullmatch(rf"{BUG_ID}/env-testhost-[0-9a-f]{{6}}\.json", env["report"])
    full = json.loads((bug_with_repro / "kb" / "bugs" / env["report"]).read_text())
    everything = {f"{r['id']}.{k}": v for r in full["results"] for k, v in r["facts"].items()}
    assert everything["repro.count"] == 3
    for key in ("cpu.flags", "torch-build.arch_list", "gpu.count", "gpu.driver", "gpu.driver_cuda"):
        assert key in everything, key
    findings = {f["probe"]: f for f in env["findings"]}
    assert list(findings) == [*DEFAULT_PROBES, "check-labels", "repro"]
    assert findings["repro"] == {
        "probe": "repro",
        "status": "fail",
        "message": "illegal memory access reproduced",
        "when": env["collected_at"],
    }
    assert data["progress"][0]["state"] == "passed"
    assert data["progress"][0]["evidence"] == "on testhost: pass: all good"
    assert data["progress"][0]["host"] == "testhost"
    assert data["progress"][1] == {"id": "manual", "title": "Read the training loop"}
    assert data["status"] == "confirmed"
    kinds = [(e["kind"], e.get("from"), e.get("to")) for e in data["history"]]
    assert kinds == [("status", "open", "confirmed"), ("probe-fill", None, None)]
    # the body and the lines kbgen does not own keep their bytes
    after = bug_path(bug_with_repro).read_text()
    assert after.split("\n---\n", 1)[1] == before.split("\n---\n", 1)[1]
    assert "title: Illegal memory access in BCE loss\n" in after
    assert "status: confirmed  # set by a person\n" in after


def test_fill_twice_with_the_same_results_changes_only_timestamps(bug_with_repro: Path) -> None:
    assert invoke("probe", "--fill", BUG_ID, "repro", "check-labels").exit_code == 0
    first = bug_path(bug_with_repro).read_text()
    result = invoke("probe", "--fill", BUG_ID, "repro", "check-labels", KBGEN_NOW="2025-11-22T08:30:00+00:00")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[-1] == (
        f"{BUG_ID}: same results as last time; updated the timestamps in kb/bugs/{BUG_ID}.md"
    )
    second = bug_path(bug_with_repro).read_text()
    assert second != first
    stamp = re.compile(r"2025-11-2[12]T\d\d:\d\d:\d\d\+00:00")
    assert stamp.sub("<time>", second) == stamp.sub("<time>", first)
    # and with the clock pinned to the same second, nothing is written at all
    result = invoke("probe", "--fill", BUG_ID, "repro", "check-labels", KBGEN_NOW="2025-11-22T08:30:00+00:00")
    assert result.stdout.splitlines()[-1] == f"{BUG_ID}: nothing to change in kb/bugs/{BUG_ID}.md"
    assert bug_path(bug_with_repro).read_text() == second


def test_changed_results_add_one_event_and_replace_findings(bug_with_repro: Path) -> None:
    assert invoke("probe", "--fill", BUG_ID, "repro", "check-labels").exit_code == 0
    add_probe(bug_with_repro, "check-labels", 'return {"status": "fail", "message": "label 7 >= 5 classes"}')
    result = invoke("probe", "--fill", BUG_ID, "repro", "check-labels", KBGEN_NOW="2025-11-22T08:30:00+00:00")
    assert result.exit_code == 0
    data = frontmatter(bug_with_repro)
    assert [f["probe"] for f in data["environments"][0]["findings"]] == ["repro", "check-labels"]
    assert data["progress"][0]["state"] == "failed"
    assert data["progress"][0]["evidence"] == "on testhost: fail: label 7 >= 5 classes"
    # a later result on the same machine replaces the state; history keeps the old one
    assert [e["kind"] for e in data["history"]] == ["status", "probe-fill", "step", "probe-fill"]
    step = data["history"][2]
    assert (step["from"], step["to"]) == ("passed", "failed")
    assert step["note"] == "step labels on testhost: was passed (on testhost: pass: all good)"


def test_passing_repro_verifies_a_fixed_bug(kb_project: Path) -> None:
    add_probe(kb_project, "repro", PASS)
    set_keys(kb_project, "repro: repro", status="fixed")
    result = invoke("probe", "--fill", BUG_ID, "repro")
    assert result.exit_code == 0
    data = frontmatter(kb_project)
    assert data["status"] == "verified"
    assert data["history"][0]["from"] == "fixed" and data["history"][0]["to"] == "verified"


def test_passing_repro_leaves_an_open_bug_open(kb_project: Path) -> None:
    add_probe(kb_project, "repro", PASS)
    set_keys(kb_project, "repro: repro")
    assert invoke("probe", "--fill", BUG_ID, "repro").exit_code == 0
    data = frontmatter(kb_project)
    assert data["status"] == "open"
    assert [e["kind"] for e in data["history"]] == ["probe-fill"]


def test_crashing_repro_confirms_and_fails_its_step(kb_project: Path) -> None:
    add_probe(kb_project, "repro", SIGILL)
    set_keys(
        kb_project,
        "repro: repro\nprogress:\n  - id: run-repro\n    title: Run the repro\n"
        "    decided_by: 'repro: status == \"pass\"'\n"
        '    fails_if: \'repro: status in ["fail", "crash"]\'',
    )
    result = invoke("probe", "--fill", BUG_ID, "repro")
    assert result.exit_code == 0
    data = frontmatter(kb_project)
    assert data["status"] == "confirmed"
    assert data["progress"][0]["state"] == "failed"
    assert data["progress"][0]["evidence"].startswith(
        "on testhost: crash: the probe's process died of SIGILL"
    )
    assert data["progress"][0]["evidence"].endswith("[SIGILL]")


def test_bug_without_checklist_inherits_its_error_types_steps(kb_project: Path) -> None:
    add_probe(kb_project, "repro", PASS)
    set_keys(kb_project, "repro: repro")
    assert invoke("probe", "--fill", BUG_ID, "repro").exit_code == 0
    assert frontmatter(kb_project)["progress"] == [
        {"id": "check-gpu", "title": "GPU is visible and works", "probe": "gpu", "decided_by": "manual"}
    ]


def test_a_step_naming_a_missing_probe_is_reported_not_fatal(kb_project: Path) -> None:
    set_keys(kb_project, "progress:\n  - id: nope\n    title: Ghost step\n    probe: no-such-probe")
    result = invoke("probe", "--fill", BUG_ID, "system")
    assert result.exit_code == 0
    assert result.stderr == f"warning: {BUG_ID} names probe 'no-such-probe', which does not exist\n"
    data = frontmatter(kb_project)
    assert "state" not in data["progress"][0]  # still pending (the default is not written)
    assert data["progress"][0]["evidence"] == "error: no probe 'no-such-probe' to run"
    assert (
        data["environments"][0]["findings"][-1]["message"]
        == "no probe with this id; add kb/probes/no-such-probe.py or fix the name"
    )


def test_unknown_bug_is_one_clear_error_and_runs_nothing(kb_project: Path) -> None:
    before = bug_path(kb_project).read_bytes()
    result = invoke("probe", "--fill", "BUG-20251109-099")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        "Error: no bug BUG-20251109-099 in kb/bugs\n  hint: `kbgen list` shows the bugs there are\n"
    )
    result = invoke("probe", "--fill", "bug-2")
    assert result.stderr.startswith("Error: 'bug-2' is not a valid bug id (expected BUG-YYYYMMDD-NNN)")
    assert bug_path(kb_project).read_bytes() == before


def test_bug_edited_while_probes_run_is_not_overwritten(kb_project: Path) -> None:
    path = bug_path(kb_project)
    editor = f"""
        with open({str(path)!r}, "a") as handle:
            handle.write("A note typed while the probes ran.\\n")
        return {{"status": "fail", "message": "reproduced"}}
    """
    add_probe(kb_project, "repro", editor)
    set_keys(kb_project, "repro: repro")
    result = invoke("probe", "--fill", BUG_ID, "repro")
    assert result.exit_code == 1
    assert path.read_text().endswith("Training died in the loss.\nA note typed while the probes ran.\n")
    assert "environments" not in frontmatter(kb_project)
    message, hint = result.stderr.splitlines()
    assert message == f"Error: {path}: changed on disk while the probes ran; nothing was written to it"
    saved = re.fullmatch(
        r"  hint: the results are saved in (\S+); run the command again to fill the new version", hint
    )
    assert saved is not None
    report = json.loads(Path(saved.group(1)).read_text())
    assert report["results"][0]["message"] == "reproduced"
    Path(saved.group(1)).unlink()
    assert "repro  fail     reproduced" in result.stdout.splitlines()  # the results were shown, too


def test_secrets_never_reach_the_bug_file(kb_project: Path) -> None:
    leaky = """
        import os
        return {"status": "warn", "message": "token in use: hf_" + "a" * 30,
                "facts": {"HF_TOKEN": os.environ["HF_TOKEN"], "db_url": "postgres://bob:s3cret@db/x"}}
    """
    add_probe(kb_project, "leaky", leaky)
    token = "hf_" + "Z" * 34
    result = invoke(
        "probe",
        "--fill",
        BUG_ID,
        "leaky",
        "debug-env",
        HF_TOKEN=token,
        NCCL_IB_PASSWORD="hunter2",
        NCCL_DEBUG="INFO",
    )
    assert result.exit_code == 0, result.stderr
    text = bug_path(kb_project).read_text()
    for secret in (token, "hunter2", "s3cret", "a" * 30):
        assert secret not in text
        assert secret not in result.stdout
    [env] = frontmatter(kb_project)["environments"]
    report = (kb_project / "kb" / "bugs" / env["report"]).read_text()
    for secret in (token, "hunter2", "s3cret", "a" * 30):
        assert secret not in report
    full = json.loads(report)
    values = {f"{r['id']}.{k}": v for r in full["results"] for k, v in r["facts"].items()}
    assert values["leaky.HF_TOKEN"] == "<redacted>"
    assert values["leaky.db_url"] == "postgres://bob:<redacted>@db/x"
    assert values["debug-env.NCCL_IB_PASSWORD"] == "<redacted>"
    assert values["debug-env.NCCL_DEBUG"] == "INFO"


def test_redact_paths_hides_home_and_user(kb_project: Path, tmp_path: Path) -> None:
    home = tmp_path / "home" / "alice"
    home.mkdir(parents=True)
    add_probe(
        kb_project,
        "paths",
        'import os\nreturn {"status": "pass", "message": os.path.expanduser("~/data") + " for alice"}',
    )
    env = {"HOME": str(home), "USER": "alice", "LOGNAME": "alice"}
    shown = invoke("probe", "--json", "paths", **env)
    assert json.loads(shown.stdout)["results"][0]["message"] == f"{home}/data for alice"
    hidden = invoke("probe", "--json", "--redact-paths", "paths", **env)
    assert json.loads(hidden.stdout)["results"][0]["message"] == "~/data for <user>"
