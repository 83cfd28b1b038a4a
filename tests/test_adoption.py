"""kbgen in any repository: the base knowledge layer, `kbgen init`, `kbgen kb`, `kbgen run` and
`kbgen import --github`, as a user meets them (CLI output, files written, exit statuses)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import invoke, kbgen, write_tree
from kbgen.init import FORM_FIELDS, ISSUE_FORM
from kbgen.models import Bug, Severity
from kbgen.store import find_project, load_kb

OOM_LOG = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 12, in <module>\n'
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 23.69 GiB of which 1.20 GiB is free.\n"
)
IMA = "CUDA error: an illegal memory access was encountered"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, base_layer: None) -> Path:
    """A folder after `kbgen init`, with the base layer on, made the cwd."""
    monkeypatch.chdir(tmp_path)
    result = invoke("init")
    assert result.exit_code == 0, result.output
    monkeypatch.setenv("KBGEN_NOW", "2025-11-21T10:00:00+00:00")
    return tmp_path


# --------------------------------------------------------------------------- the base layer


def test_an_empty_project_gets_the_shipped_knowledge(project: Path) -> None:
    kb = load_kb(find_project(project))
    assert "cuda-out-of-memory" in kb.errors and ("error", "cuda-out-of-memory") in kb.base
    assert kb.problems == []
    triage = invoke("triage", "-", input=OOM_LOG)
    assert "1. cuda-out-of-memory" in triage.output
    base = invoke("kb", "list", "--layer", "base", "--kind", "error").output.splitlines()
    assert len(base) >= 19 and all(line.startswith("base") for line in base)
    assert invoke("kb", "list", "--layer", "project").output == ""


def test_a_project_record_overrides_the_base_one(project: Path) -> None:
    copied = invoke("kb", "copy", "cuda-out-of-memory")
    assert copied.exit_code == 0, copied.output
    target = project / "kb" / "errors" / "cuda-out-of-memory.md"
    assert (
        "copied kbgen/knowledge/errors/cuda-out-of-memory.md to kb/errors/cuda-out-of-memory.md"
        in copied.output
    )
    target.write_text(target.read_text().replace("\ntitle: '", "\ntitle: 'Ours: ", 1))
    kb = load_kb(find_project(project))
    assert kb.errors["cuda-out-of-memory"].record.title.startswith("Ours: ")
    assert ("error", "cuda-out-of-memory") in kb.overrides
    listed = invoke("kb", "list", "--layer", "project").output
    assert listed == "project  error  cuda-out-of-memory  (overrides base)\n"
    checked = invoke("validate", "--strict")
    assert checked.exit_code == 0, checked.output
    assert (
        "kb/errors/cuda-out-of-memory.md: overrides the base error "
        "kbgen/knowledge/errors/cuda-out-of-memory.md" in checked.output
    )
    as_json = json.loads(invoke("validate", "--format", "json").output)
    assert as_json["overrides"] == [
        {
            "path": "kb/errors/cuda-out-of-memory.md",
            "kind": "error",
            "base": "kbgen/knowledge/errors/cuda-out-of-memory.md",
        }
    ]
    again = invoke("kb", "copy", "cuda-out-of-memory")
    assert again.exit_code == 1 and "already a project record" in again.output
    unknown = invoke("kb", "copy", "no-such-thing")
    assert unknown.exit_code == 1 and "no base record 'no-such-thing'" in unknown.output


def test_kb_copy_never_writes_through_what_is_at_the_name(
    project: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dangling link planted at the copy's name after the KB was read (loading refuses one
    that is there before): copying must not create the file it points at."""
    from kbgen.cli import project as project_cli

    outside = tmp_path_factory.mktemp("outside") / "planted.md"
    name = project / "kb" / "errors" / "cuda-out-of-memory.md"
    load = project_cli.load_clean_kb

    def load_then_plant(ctx: Any) -> Any:
        loaded = load(ctx)
        name.parent.mkdir(parents=True, exist_ok=True)
        name.symlink_to(outside)
        return loaded

    monkeypatch.setattr(project_cli, "load_clean_kb", load_then_plant)
    refused = invoke("kb", "copy", "cuda-out-of-memory")
    assert refused.exit_code == 1, refused.output
    assert "kb/errors/cuda-out-of-memory.md: already exists" in refused.output
    assert not outside.exists()
    assert name.is_symlink()


def test_project_records_link_to_base_ones(project: Path) -> None:
    write_tree(
        project,
        {
            "kb/causes/our-allocator.md": """\
                ---
                id: our-allocator
                title: Our custom allocator keeps blocks
                summary: The allocator we wrote keeps freed blocks for its own reuse.
                evidence: [The allocator's stats show reserved blocks]
                fixes: [enable-expandable-segments]
                ---
                Body.
                """
        },
    )
    result = invoke("validate", "--strict")
    assert result.exit_code == 0, result.output


def test_base_records_never_link_to_project_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, base_layer: None
) -> None:
    base = write_tree(
        tmp_path / "base",
        {
            "errors/.keep": "",
            "causes/base-cause.md": "---\nid: base-cause\ntitle: A base cause\nsummary: Short.\n"
            "fixes: [project-fix]\n---\nBody.\n",
        },
    )
    root = write_tree(
        tmp_path / "proj",
        {
            "kb/fixes/project-fix.md": "---\nid: project-fix\ntitle: A project fix\n"
            "summary: Short.\nsteps: [{title: Do it}]\n---\nBody.\n"
        },
    )
    monkeypatch.setattr("kbgen.layers.base_dir", lambda: base)
    monkeypatch.chdir(root)
    result = invoke("validate")
    assert result.exit_code == 1
    assert (
        "kbgen/knowledge/causes/base-cause.md:5: fixes.0: the base layer links to the project's fix "
        "'project-fix'; base records link only to base records" in result.output
    )


# --------------------------------------------------------------------------- kbgen init


def test_init_writes_a_working_project_and_never_overwrites(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".pre-commit-config.yaml").write_text("# our hooks\nrepos:\n  - repo: local\n    hooks: []\n")
    dry = invoke("init", "--dry-run")
    assert "would create mkdocs.yml" in dry.output and not (tmp_path / "mkdocs.yml").exists()
    first = invoke("init")
    assert first.exit_code == 0, first.output
    for rel in [
        "kb/bugs",
        "kb/probes/README.md",
        "mkdocs.yml",
        "docs/getting-started.md",
        ".github/workflows/kb.yml",
    ]:
        assert (tmp_path / rel).exists(), rel
    assert not (tmp_path / "docs" / "assets").exists()  # the plugin serves them
    hooks = (tmp_path / ".pre-commit-config.yaml").read_text()
    assert hooks.startswith("# our hooks\n") and hooks.count("id: kbgen-validate") == 1
    workflow = yaml.safe_load((tmp_path / ".github/workflows/kb.yml").read_text())
    steps = [step.get("run", "") for step in workflow["jobs"]["kb"]["steps"]]
    assert "kbgen validate --strict --format github" in steps
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    second = invoke("init")
    assert second.output == "Nothing to do: every file is in place.\n"
    assert before == {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}


def test_init_keeps_a_changed_file_unless_forced_and_shows_the_diff(tmp_path: Path) -> None:
    invoke("init", str(tmp_path))
    mkdocs = tmp_path / "mkdocs.yml"
    mkdocs.write_text(mkdocs.read_text().replace("site_name: GPU failure KB", "site_name: Our KB"))
    kept = invoke("init", str(tmp_path))
    assert "kept     mkdocs.yml (differs from kbgen's; --force replaces it)" in kept.output
    assert "site_name: Our KB" in mkdocs.read_text()
    forced = invoke("init", "--force", str(tmp_path))
    assert "-site_name: Our KB\n+site_name: GPU failure KB" in forced.output
    assert "replaced mkdocs.yml" in forced.output and "site_name: GPU failure KB" in mkdocs.read_text()


def test_the_issue_form_is_made_from_the_bug_schema(tmp_path: Path) -> None:
    invoke("init", str(tmp_path))
    form = yaml.safe_load((tmp_path / ISSUE_FORM).read_text())
    fields = {item["id"]: item for item in form["body"] if item["type"] != "markdown"}
    assert set(fields) == {field_id for field_id, *_ in FORM_FIELDS}
    for _id, _label, bug_field, _kind, _ in FORM_FIELDS:
        assert bug_field is None or bug_field in Bug.model_fields
    assert fields["severity"]["attributes"]["options"] == [s.value for s in Severity]
    assert "kbgen probe --json" in fields["environment"]["attributes"]["description"]
    assert fields["log"]["validations"]["required"] is True


def test_import_github_issues_from_the_form(project: Path) -> None:
    body = (
        "### Error message\n\nRuntimeError: CUDA error: device-side assert triggered\n\n"
        "### Error type\n\n_No response_\n\n### Severity\n\nhigh\n\n"
        '### Log\n\n```text\nTraceback (most recent call last):\n  File "train.py", line 3\n'
        "RuntimeError: CUDA error: device-side assert triggered\n```\n\n"
        "### Environment\n\n_No response_\n\n### Reproducing probe\n\n_No response_\n"
    )
    issues = [
        {
            "number": 7,
            "title": "Assert in the loss",
            "body": body,
            "labels": [{"name": "GPU failure"}],
            "createdAt": "2025-11-20T10:00:00Z",
        }
    ]
    (project / "issues.json").write_text(json.dumps(issues))
    first = invoke("import", "--github", "issues.json")
    assert first.output == "#7: wrote BUG-20251120-001 kb/bugs/BUG-20251120-001-assert-in-the-loss.md\n"
    bug = load_kb(find_project(project)).bugs["BUG-20251120-001"].record
    assert bug.error == "cuda-device-side-assert" and bug.severity == Severity.high
    assert bug.tags == ["gpu-failure", "github-7"]
    again = invoke("import", "--github", "issues.json")
    assert again.output.startswith("#7: already imported as BUG-20251120-001")
    (project / "bad.json").write_text("{not json")
    bad = invoke("import", "--github", "bad.json")
    assert bad.exit_code == 1 and bad.output.startswith("Error: bad.json: not JSON")


# --------------------------------------------------------------------------- kbgen run


def test_run_passes_output_through_and_exits_like_the_command(project: Path) -> None:
    ok = kbgen(
        "run",
        "--",
        sys.executable,
        "-c",
        "import sys; print('\\x1b[32mgreen\\x1b[0m'); sys.stderr.write('e\\n')",
        cwd=project,
    )
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "\x1b[32mgreen\x1b[0m\n", "e\n")
    failed = kbgen("run", "--", sys.executable, "-c", f"raise RuntimeError({IMA!r})", cwd=project)
    assert failed.returncode == 1
    assert f"RuntimeError: {IMA}" in failed.stderr
    assert "kbgen: looks like cuda-illegal-memory-access" in failed.stderr
    assert "run with --file-bug" in failed.stderr
    assert list((project / "kb" / "bugs").glob("BUG-*")) == []  # no terminal, no --file-bug: nothing filed
    missing = kbgen("run", "--", "no-such-command-kbgen", cwd=project)
    assert missing.returncode == 1 and missing.stderr.startswith("Error: no-such-command-kbgen: cannot run")


def test_run_outside_a_project_still_exits_like_the_command(tmp_path: Path) -> None:
    result = kbgen("run", "--", sys.executable, "-c", "raise SystemExit(5)", cwd=tmp_path)
    assert result.returncode == 5
    assert "Error: no kb/ folder" in result.stderr


def test_run_reports_death_by_signal_as_128_plus_n(project: Path) -> None:
    code = "import os, signal; os.kill(os.getpid(), signal.SIGILL)"
    result = kbgen("run", "--", sys.executable, "-c", code, cwd=project)
    assert result.returncode == 128 + 4
    assert "killed by SIGILL" in result.stderr
    assert "looks like cpu-illegal-instruction" in result.stderr  # named from the signal alone


def test_run_reads_the_torchrun_error_file(project: Path, tmp_path: Path) -> None:
    # What torch.distributed.elastic's @record writes for the failing child.
    code = (
        "import json, os, sys\n"
        "error = {'message': {'message': 'RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB',"
        " 'extraInfo': {'py_callstack': 'Traceback (most recent call last):', 'timestamp': '0'}}}\n"
        "open(os.environ['TORCHELASTIC_ERROR_FILE'], 'w').write(json.dumps(error))\n"
        "print('worker failed'); sys.exit(3)\n"
    )
    result = kbgen("run", "--", sys.executable, "-c", code, cwd=project)
    assert result.returncode == 3
    assert "kbgen: looks like cuda-out-of-memory" in result.stderr


def test_run_keeps_a_bounded_part_of_a_long_log() -> None:
    from kbgen.run.command import MATCHED_LINES, TAIL_LINES, Capture

    capture = Capture()
    capture.feed(b"RuntimeError: CUDA error: an illegal memory access was encountered\n")
    for i in range(20_000):
        capture.feed(f"step {i} loss 0.5\r".encode() * 3 + b"\n")
    capture.feed(b"x" * 100_000)  # a line that never ends
    assert len(capture.tail) == TAIL_LINES and len(capture.matched) <= MATCHED_LINES
    text = capture.text()
    assert text.startswith(f"RuntimeError: {IMA}\n")
    assert "step 19999 loss 0.5" in text and len(text) < 200_000
