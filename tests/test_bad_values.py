"""Bad values are problems of one file: a message with file and line, exit 1, never a traceback,
a crash or a hang, in every command that reads the KB."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import PATIENCE, kbgen, run

BUG_ID = "BUG-20251109-002"
BUG_PATH = "kb/bugs/BUG-20251109-002.md"


#: the clock kb_project pins, for a kbgen process started outside it
NOW = {"KBGEN_NOW": "2025-11-21T10:00:00+00:00"}


def set_line(project: Path, key: str, value: str) -> None:
    path = project / BUG_PATH
    lines = path.read_text().split("\n")
    lines = [f"{key}: {value}" if line.startswith(f"{key}:") else line for line in lines]
    path.write_text("\n".join(lines))


def kb_files(project: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted((project / "kb").rglob("*")) if p.is_file()}


# --------------------------------------------------------------------------- impossible dates

IMPOSSIBLE = {
    "feb-30": ("2025-02-30", "'2025-02-30' is not a real date or time: day is out of range for month"),
    "hour-25": ("2025-11-09T25:00:00+00:00", "is not a real date or time: hour must be in 0..23"),
    "offset-24h": (
        "2025-11-09T10:00:00+24:00",
        "is not a real date or time: a UTC offset must be less than 24 hours",
    ),
    "year-0": ("0000-01-01", "'0000-01-01' is not a real date or time: year 0 is out of range"),
}
COMMANDS = {
    "validate": ["validate"],
    "list": ["list"],
    "show": ["show", BUG_ID],
    "status": ["status", BUG_ID, "fixed"],
    "new-bug": ["new-bug", "--title", "Another one"],
    "renumber": ["renumber", BUG_ID],
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("case", list(IMPOSSIBLE))
def test_an_impossible_date_is_a_problem_of_its_file(kb_project: Path, case: str, command: str) -> None:
    value, message = IMPOSSIBLE[case]
    set_line(kb_project, "created", value)
    before = kb_files(kb_project)
    code, out = run(*COMMANDS[command])
    assert code == 1, out
    assert f"{BUG_PATH}:4: " in out
    assert message in out
    assert "Traceback" not in out
    assert kb_files(kb_project) == before


def test_an_impossible_date_elsewhere_does_not_stop_triage(kb_project: Path, tmp_path: Path) -> None:
    set_line(kb_project, "updated", "2025-02-30")
    log = tmp_path / "crash.log"
    log.write_text("RuntimeError: CUDA error: an illegal memory access was encountered\n")
    code, out = run("triage", str(log))
    assert code == 0, out
    assert "cuda-illegal-memory-access" in out
    assert "1 KB file(s) could not be loaded" in out


def test_an_impossible_date_fails_the_site_build_with_file_and_line(tmp_path: Path) -> None:
    from site_kb import make_site_project, mkdocs_build

    project = make_site_project(tmp_path)
    bug = project / "kb/bugs/BUG-20251020-001.md"
    bug.write_text(bug.read_text().replace("created: 2025-10-20", "created: 2025-02-30", 1))
    assert "\ncreated: 2025-02-30" in bug.read_text()
    result = mkdocs_build(project)
    assert result.returncode == 1
    assert "kb/bugs/BUG-20251020-001.md:" in result.stderr
    assert "is not a real date or time: day is out of range for month" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_impossible_date_in_an_imported_report_is_its_problem(kb_project: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.md"
    report.write_text("---\ntitle: Loss is NaN\ndate: 2025-13-01\n---\n# Loss is NaN\n")
    before = kb_files(kb_project)
    code, out = run("import", str(report))
    assert code == 1
    assert f"{report}:3: " in out
    assert "'2025-13-01' is not a real date or time: month must be in 1..12" in out
    assert kb_files(kb_project) == before


def test_a_time_without_an_offset_is_taken_as_utc(kb_project: Path) -> None:
    set_line(kb_project, "updated", "2025-11-09 10:00:00")
    code, out = run("new-bug", "--title", "An aware one")
    assert code == 0, out
    code, out = run("list")
    assert code == 0, out
    assert out.index("BUG-20251121-001") < out.index(BUG_ID)


# --------------------------------------------------------------------------- depth and aliases


def test_a_value_nested_thirty_thousand_levels_deep_is_refused(kb_project: Path) -> None:
    set_line(kb_project, "tags", "[" * 30_000 + "]" * 30_000)
    for command in (["validate"], ["list"], ["new-bug", "--title", "x"]):
        result = kbgen(*command, cwd=kb_project, env=NOW)
        assert result.returncode == 1, (command, result.returncode, result.stderr[-500:])
        assert f"{BUG_PATH}:10: values are nested more than 64 levels deep" in result.stdout + result.stderr
        assert "Traceback" not in result.stderr


def test_nesting_in_block_style_is_bounded_too(kb_project: Path) -> None:
    deep = "".join(f"\n{' ' * (2 * i)}- " for i in range(1, 80))
    set_line(kb_project, "tags", deep)
    code, out = run("validate")
    assert code == 1
    assert f"{BUG_PATH}:" in out
    assert "values are nested more than 64 levels deep" in out


def test_an_alias_bomb_is_refused_before_it_expands(kb_project: Path) -> None:
    bomb = ["lol0: &a0 [x, x, x, x, x, x, x, x, x]"]
    bomb += [f"lol{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    set_line(kb_project, "tags", "[loss]\n" + "\n".join(bomb))
    result = kbgen("validate", cwd=kb_project, env=NOW)
    assert result.returncode == 1
    assert f"{BUG_PATH}:12: *a0 repeats a list or mapping; write the values out instead" in result.stdout


def test_ordinary_yaml_with_stars_and_deep_indents_still_loads(kb_project: Path) -> None:
    path = kb_project / BUG_PATH
    message = "message: |\n" + "".join(f"  {' ' * 70}*emphasis* and **bold** {n}\n" for n in range(3))
    path.write_text(path.read_text().replace("tags: [loss]\n", "tags: [loss]\n" + message))
    code, out = run("validate")
    assert code == 0, out


# --------------------------------------------------------------------------- only regular files


def test_a_fifo_or_device_among_the_records_never_hangs(kb_project: Path) -> None:
    bugs = kb_project / "kb/bugs"
    os.mkfifo(bugs / "BUG-20251109-005.md")
    (bugs / "BUG-20251109-006.md").symlink_to("/dev/zero")
    os.mkfifo(kb_project / "kb/probes/stuck.py")
    for command in (["validate"], ["list"], ["new-bug", "--title", "x"], ["status", BUG_ID, "fixed"]):
        result = kbgen(*command, cwd=kb_project, env=NOW)
        assert result.returncode == 1, (command, result.stderr)
        text = result.stdout + result.stderr
        assert "kb/bugs/BUG-20251109-005.md: a named pipe (FIFO), not a regular file" in text
        assert "kb/bugs/BUG-20251109-006.md: a device, not a regular file" in text
        assert "Traceback" not in text
    result = kbgen("validate", cwd=kb_project, env=NOW)
    assert "kb/probes/stuck.py: a named pipe (FIFO), not a regular file" in result.stdout


@pytest.mark.parametrize("source", ["/dev/zero", "/dev/urandom", "fifo"])
def test_importing_a_device_or_fifo_fails_cleanly(kb_project: Path, source: str) -> None:
    if source == "fifo":
        source = str(kb_project / "report.md")
        os.mkfifo(source)
    before = kb_files(kb_project)
    result = kbgen("import", source, cwd=kb_project, env=NOW)
    assert result.returncode == 1
    assert "not a regular file; nothing was written" in result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert kb_files(kb_project) == before


def test_a_fifo_in_docs_does_not_hang_build_pages(tmp_path: Path) -> None:
    from site_kb import make_site_project

    project = make_site_project(tmp_path / "project")
    os.mkfifo(project / "docs/notes.md")
    result = kbgen("build-pages", str(tmp_path / "pages"), cwd=project, env=NOW)
    assert result.returncode == 1
    assert result.stderr.startswith(
        f"Error: {project / 'docs/notes.md'}: a named pipe (FIFO), not a regular file"
    )


# --------------------------------------------------------------------------- new-bug values


def test_new_bug_for_year_one_gets_a_well_formed_id(kb_project: Path) -> None:
    code, out = run("new-bug", "--title", "Old", "--date", "0001-01-01")
    assert (code, out) == (0, "BUG-00010101-001 kb/bugs/BUG-00010101-001-old.md\n")
    assert run("validate")[0] == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--title", "t" * 301],
            "Error: --title (301 characters): must be at most 300 characters long\n",
        ),
        (["--title", "x", "--repro", "../x"], "Error: --repro '../x': not an id (lowercase letters, digits"),
        (["--title", "x", "--date", "2025-02-30"], "Error: --date '2025-02-30': expected YYYY-MM-DD\n"),
        (
            ["--title", "x", "--date", "２０２５-１１-２１"],
            "Error: --date '２０２５-１１-２１': expected YYYY-MM-DD\n",
        ),
        (["--title", "x", "--error", "../../etc"], "Error: --error '../../etc': no such error type\n"),
    ],
    ids=["long-title", "repro-path", "feb-30", "fullwidth-date", "error-path"],
)
def test_new_bug_refuses_bad_values_with_a_message(kb_project: Path, args: list[str], message: str) -> None:
    before = kb_files(kb_project)
    code, out = run("new-bug", *args)
    assert code == 1
    assert out.startswith(message)
    assert kb_files(kb_project) == before


def test_schema_out_to_an_unwritable_place(kb_project: Path) -> None:
    blocker = kb_project / "a-file"
    blocker.write_text("")
    code, out = run("schema", "--out", str(blocker / "schemas"))
    assert code == 1
    assert out.startswith(f"Error: {blocker / 'schemas'}: cannot write: ")
    assert out.count("\n") == 1


def test_a_body_of_unclosed_comments_is_read_in_linear_time(kb_project: Path) -> None:
    """300,000 ``<!--`` that never close (1.5 MB, under the size limit): a regex that tries each
    against the rest of the body takes hours; kbgen reads it, and says what is wrong with it."""
    path = next((kb_project / "kb/bugs").glob(f"{BUG_ID}*.md"))
    path.write_text(path.read_text() + "<!--\n" * 300_000)
    result = kbgen("validate", cwd=kb_project, env=NOW)
    assert "Traceback" not in result.stdout + result.stderr
    assert result.returncode in (0, 1), result.stderr
    shown = kbgen("show", BUG_ID, cwd=kb_project, env=NOW)
    assert shown.returncode == 0, shown.stderr


def test_running_from_a_deleted_folder(tmp_path: Path) -> None:
    script = 'mkdir gone && cd gone && rmdir ../gone && exec "$0" -m kbgen list'
    result = subprocess.run(
        ["sh", "-c", script, sys.executable],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=PATIENCE,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr == (
        "Error: the current folder no longer exists (it was deleted or moved)\n"
        "  hint: cd into your project again and rerun the command\n"
    )


# --------------------------------------------------------------------------- output


def _no_constants(name: str) -> None:
    raise AssertionError(f"{name} is not JSON")


def test_show_and_list_json_never_print_nan(kb_project: Path) -> None:
    path = kb_project / BUG_PATH
    facts = (
        "environments:\n  - host: trainbox\n    facts:\n      loss: .nan\n      lr: .inf\n      steps: 3\n"
    )
    path.write_text(path.read_text().replace("tags: [loss]\n", "tags: [loss]\n" + facts))
    for command in (["show", BUG_ID, "--json"], ["list", "--json"]):
        code, out = run(*command)
        assert code == 0, out
        data = json.loads(out, parse_constant=_no_constants)
        bug = data if isinstance(data, dict) else data[0]
        assert bug["environments"][0]["facts"] == {"loss": None, "lr": None, "steps": 3}


def test_list_and_show_strip_terminal_escapes(kb_project: Path) -> None:
    hostile = r'"Loss \e[2J\e]0;owned\a NaN\u202e\x9b31m\r\nfake line"'
    set_line(kb_project, "title", hostile)
    path = kb_project / BUG_PATH
    path.write_text(
        path.read_text().replace("tags: [loss]\n", 'tags: [loss]\nmessage: "line one\\e[31m red"\n')
    )
    for command in (["list"], ["show", BUG_ID]):
        code, out = run(*command)
        assert code == 0, out
        assert not any(ch in out for ch in "\x1b\x07\x9b\u202e\r"), repr(out)
        assert "Loss [2J]0;owned NaN31m  fake line" in out
    assert "line one[31m red" in run("show", BUG_ID)[1]


# --------------------------------------------------------------------------- ASCII ids


@pytest.mark.parametrize("command", ["show", "status", "renumber"])
def test_ids_with_digits_of_other_scripts_are_refused(kb_project: Path, command: str) -> None:
    args = [command, "BUG-2025110٩-00２", *(["fixed"] if command == "status" else [])]
    code, out = run(*args)
    assert code == 1
    assert out.startswith("Error: 'BUG-2025110٩-00２' is not a valid bug id (expected BUG-YYYYMMDD-NNN)\n")


def test_a_record_with_a_non_ascii_id_is_a_problem_of_its_file(kb_project: Path) -> None:
    bugs = kb_project / "kb/bugs"
    text = (bugs / "BUG-20251109-002.md").read_text()
    (bugs / "BUG-2025110٩-001.md").write_text(text.replace("id: BUG-20251109-002", "id: BUG-2025110٩-001"))
    set_line(kb_project, "tags", "[loss]\nrelated: [BUG-2025110٣-00１]")
    code, out = run("validate")
    assert code == 1
    assert "kb/bugs/BUG-2025110٩-001.md:2: id: must be a bug id of the form BUG-YYYYMMDD-NNN" in out
    assert f"{BUG_PATH}:11: related.0: must be a bug id of the form BUG-YYYYMMDD-NNN" in out


def test_show_of_a_bug_naming_an_unknown_error_type(kb_project: Path) -> None:
    set_line(kb_project, "error", "no-such-error")
    code, out = run("show", BUG_ID)
    assert code == 0, out
    assert "  error:     no-such-error (no such error type)\n" in out
