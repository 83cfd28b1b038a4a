"""Probe files are read statically; broken metadata is a clear problem with file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import invoke
from kbgen.errors import EntryError
from kbgen.probes import builtin_ids, discover, discover_problems
from kbgen.store import Project
from probes_fixtures import BUILTIN_PROBES, DEFAULT_PROBES, PASS, probe_file


def write_probe(root: Path, name: str, text: str) -> None:
    (root / "kb" / "probes" / name).write_text(text)


def test_builtin_ids_are_the_fixed_ones() -> None:
    assert builtin_ids() == BUILTIN_PROBES
    assert discover_problems(None) == []


def test_default_set_is_every_builtin_but_import_timing() -> None:
    defaults = [s.id for s in discover(None) if s.meta.default]
    assert defaults == list(DEFAULT_PROBES)


def test_project_probes_come_after_builtins(kb_project: Path) -> None:
    write_probe(kb_project, "b-probe.py", probe_file("b-probe", PASS))
    write_probe(kb_project, "a-probe.py", probe_file("a-probe", PASS))
    specs = discover(Project(kb_project))
    assert [s.id for s in specs][-2:] == ["a-probe", "b-probe"]
    assert [s.builtin for s in specs][-3:] == [True, False, False]
    assert specs[-1].path == kb_project / "kb" / "probes" / "b-probe.py"


def test_metadata_is_read_without_running_the_file(kb_project: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    text = f"open({str(marker)!r}, 'w').write('x')\n" + probe_file("quiet", PASS)
    write_probe(kb_project, "quiet.py", text)
    assert "quiet" in [s.id for s in discover(Project(kb_project))]
    assert not marker.exists()


BROKEN = {
    "syntax.py": (
        "PROBE = {'id': 'syntax', 'title': 'x'\n\ndef run(:\n",
        "kb/probes/syntax.py:3: Python syntax error: invalid syntax",
    ),
    "nometa.py": (
        "def run():\n    return {}\n",
        "kb/probes/nometa.py:1: PROBE: missing; a probe file needs a module-level "
        "PROBE = {'id': ..., 'title': ...} dict",
    ),
    "computed.py": (
        "import os\nPROBE = dict(id='computed', title=os.name)\n\ndef run():\n    pass\n",
        "kb/probes/computed.py:2: PROBE: must be a literal dict "
        "(only strings, numbers, lists, True/False/None; no names or calls)",
    ),
    "badtimeout.py": (
        "PROBE = {\n    'id': 'badtimeout',\n    'title': 'x',\n    'timeout': -1,\n}\n\n"
        "def run():\n    pass\n",
        "kb/probes/badtimeout.py:4: PROBE.timeout: must be greater than 0",
    ),
    "typo.py": (
        "PROBE = {'id': 'typo', 'title': 'x', 'timout': 3}\n\ndef run():\n    pass\n",
        "kb/probes/typo.py:1: PROBE.timout: unknown key; "
        "known keys are id, title, description, needs, timeout, default",
    ),
    "norun.py": (
        "PROBE = {'id': 'norun', 'title': 'x'}\n",
        "kb/probes/norun.py: run: missing: define a module-level `def run():` returning "
        "{'status': ..., 'message': ..., 'facts': {...}}",
    ),
    "other-name.py": (
        "PROBE = {'id': 'real-name', 'title': 'x'}\n\ndef run():\n    pass\n",
        "kb/probes/other-name.py:1: PROBE.id: 'real-name' does not match the file name 'other-name.py'; "
        "rename the file to real-name.py or fix the id",
    ),
    "gpu.py": (
        "PROBE = {'id': 'gpu', 'title': 'mine'}\n\ndef run():\n    pass\n",
        "kb/probes/gpu.py:1: PROBE.id: 'gpu' is a built-in probe id; choose another id (and file name)",
    ),
    "latin1.py": (None, "kb/probes/latin1.py:1: not UTF-8: byte 0xe9; save the file as UTF-8"),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_probe_file_is_a_problem_naming_file_and_line(kb_project: Path, name: str) -> None:
    text, expected = BROKEN[name]
    path = kb_project / "kb" / "probes" / name
    if text is None:
        path.write_bytes(b"PROBE = {'id': 'latin1', 'title': '\xe9'}\n")
    else:
        path.write_text(text)
    project = Project(kb_project)
    assert [p.format() for p in discover_problems(project)] == [expected]
    stem = name.removesuffix(".py")
    assert stem not in [s.id for s in discover(project) if not s.builtin]
    with pytest.raises(EntryError) as caught:
        discover(project, strict=True)
    assert str(caught.value).startswith(expected)


def test_broken_probe_file_does_not_stop_the_others(kb_project: Path) -> None:
    write_probe(
        kb_project, "typo.py", "PROBE = {'id': 'typo', 'title': 'x', 'timout': 3}\n\ndef run():\n    pass\n"
    )
    write_probe(kb_project, "ok.py", probe_file("ok", PASS))
    result = invoke("probe", "ok")
    assert result.exit_code == 0
    assert result.stderr == (
        "warning: kb/probes/typo.py:1: PROBE.timout: unknown key; known keys are id, title, description, "
        "needs, timeout, default (probe skipped)\n"
    )
    assert "ok     pass     all good" in result.stdout.splitlines()


def test_asking_for_a_broken_probe_says_why(kb_project: Path) -> None:
    write_probe(
        kb_project, "typo.py", "PROBE = {'id': 'typo', 'title': 'x', 'timout': 3}\n\ndef run():\n    pass\n"
    )
    result = invoke("probe", "typo")
    assert result.exit_code == 1
    assert (
        "Error: unknown probe id 'typo' (its file is broken: kb/probes/typo.py:1: PROBE.timout: unknown key"
        in (result.stderr)
    )


def test_unknown_probe_id_names_the_known_ones(kb_project: Path) -> None:
    result = invoke("probe", "gpu-arch")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        "Error: unknown probe id 'gpu-arch' (did you mean 'gpu'?); known probes: build-env, compat, cpu, "
        "crash-tools, cuda-smoke, debug-env, dist-env, gpu, host-memory, import-timing, packages, "
        "peer-access, system, torch-build\n"
        "  hint: `kbgen probe --list` shows every probe and what it checks\n"
    )


def test_list_shows_what_each_probe_checks_and_needs(kb_project: Path) -> None:
    write_probe(kb_project, "ok.py", probe_file("ok", PASS, needs='["command:nvidia-smi"]'))
    result = invoke("probe", "--list")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["ID", "DEFAULT", "NEEDS", "TIMEOUT", "TITLE"]
    assert lines[1] == "system         yes      -                  15 s  Operating system and Python"
    assert "cuda-smoke     yes      cuda               60 s  CUDA smoke test" in lines
    assert "import-timing  no       -                 200 s  Import timing" in lines
    assert "ok             no       command:nvidia-smi     20 s  Test probe ok" in lines
    assert any(line.strip().endswith("[kb/probes/ok.py]") for line in lines)


def test_list_works_outside_a_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = invoke("probe", "--list")
    assert result.exit_code == 0
    assert result.stdout.count("[built-in]") == len(BUILTIN_PROBES)
