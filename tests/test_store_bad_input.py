"""Bad input the loader must survive: one clear message with file and line, exit 1, no traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import run

BUG_PATH = "kb/bugs/BUG-20251109-002.md"


def validate_with(kb_project: Path, content: str | bytes, rel: str = BUG_PATH) -> tuple[int, str]:
    path = kb_project / rel
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return run("validate")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("", f"{BUG_PATH}:1: the file is empty; it needs a frontmatter block between '---' lines"),
        ("# just a heading\n", f"{BUG_PATH}:1: no frontmatter: the file must start with a '---' line"),
        ("---\nid: BUG-20251109-002\ntitle: x\n", f"{BUG_PATH}:1: unclosed frontmatter"),
        ("---\n- a\n- b\n---\n", f"{BUG_PATH}:2: the frontmatter must be a mapping of keys, not a list"),
        (
            "---\njust text\n---\n",
            f"{BUG_PATH}:2: the frontmatter must be a mapping of keys, not a single str",
        ),
        ("---\n---\nbody\n", f"{BUG_PATH}:2: the frontmatter block is empty"),
    ],
    ids=["empty", "no-frontmatter", "unclosed", "list", "scalar", "empty-block"],
)
def test_broken_frontmatter_is_one_clear_message(kb_project: Path, content: str, expected: str) -> None:
    code, out = validate_with(kb_project, content)
    assert code == 1
    assert expected in out
    assert "Traceback" not in out


def test_tab_indentation_names_the_line(kb_project: Path) -> None:
    code, out = validate_with(kb_project, "---\nid: BUG-20251109-002\ntitle: x\ntags:\n\t- a\n---\n")
    assert code == 1
    assert f"{BUG_PATH}:5: invalid YAML:" in out
    assert "(YAML indentation must use spaces, not tabs)" in out


def test_bad_nesting_names_the_line(kb_project: Path) -> None:
    code, out = validate_with(
        kb_project, "---\nid: BUG-20251109-002\ntitle: x\n  status: open\n severity: high\n---\n"
    )
    assert code == 1
    assert f"{BUG_PATH}:4: invalid YAML:" in out


def test_wrong_types_name_field_and_line(kb_project: Path) -> None:
    text = (kb_project / BUG_PATH).read_text().replace("severity: high", "severity: [high]")
    text = text.replace("tags: [loss]", "tags: {a: 1}")
    code, out = validate_with(kb_project, text)
    assert code == 1
    assert f"{BUG_PATH}:7: severity: must be one of low, medium, high, critical" in out
    assert f"{BUG_PATH}:10: tags: must be a list" in out


def test_unknown_key_suggests_the_right_one(kb_project: Path) -> None:
    text = (kb_project / BUG_PATH).read_text().replace("severity: high", "severity: high\nseverty: low")
    code, out = validate_with(kb_project, text)
    assert code == 1
    assert f"{BUG_PATH}:8: severty: unknown key; did you mean 'severity'?" in out


def test_unknown_nested_key_suggests_too(kb_project: Path) -> None:
    text = (
        (kb_project / BUG_PATH)
        .read_text()
        .replace("tags: [loss]", "tags: [loss]\nprogress:\n  - id: a\n    title: b\n    stat: passed")
    )
    code, out = validate_with(kb_project, text)
    assert code == 1
    assert f"{BUG_PATH}:14: progress.0.stat: unknown key; did you mean 'state'?" in out


def test_duplicate_keys_are_an_error(kb_project: Path) -> None:
    text = (kb_project / BUG_PATH).read_text().replace("severity: high", "severity: high\nseverity: low")
    code, out = validate_with(kb_project, text)
    assert code == 1
    assert f"{BUG_PATH}:8: invalid YAML: duplicate key 'severity' (first on line 7)" in out


def test_ten_megabyte_file_is_refused_unread(kb_project: Path) -> None:
    big = "---\nid: BUG-20251109-002\ntitle: x\n---\n" + ("x" * 1023 + "\n") * 10 * 1024
    code, out = validate_with(kb_project, big)
    assert code == 1
    size = (kb_project / BUG_PATH).stat().st_size
    assert f"{BUG_PATH}: file is {size:,} bytes; entries are limited to 2,097,152" in out


def test_non_utf8_bytes_name_line_and_offset(kb_project: Path) -> None:
    raw = (kb_project / BUG_PATH).read_bytes().replace(b"Training died", b"Training \xff died")
    code, out = validate_with(kb_project, raw)
    assert code == 1
    assert f"{BUG_PATH}:14: not UTF-8: byte 0xff at offset" in out


def test_bom_is_read_and_warned_about(kb_project: Path) -> None:
    raw = b"\xef\xbb\xbf" + (kb_project / BUG_PATH).read_bytes()
    code, out = validate_with(kb_project, raw)
    assert code == 0, out
    assert f"{BUG_PATH}: warning: the file starts with a UTF-8 byte order mark" in out
    code, out = run("validate", "--strict")
    assert code == 1


def test_crlf_file_loads_and_keeps_crlf_on_write(kb_project: Path) -> None:
    path = kb_project / BUG_PATH
    crlf = path.read_bytes().replace(b"\n", b"\r\n")
    path.write_bytes(crlf)
    assert run("validate")[0] == 0
    code, out = run("status", "BUG-20251109-002", "confirmed", "--note", "seen on two machines")
    assert code == 0, out
    after = path.read_bytes()
    assert b"\n" not in after.replace(b"\r\n", b"")  # every newline is still CRLF
    assert after.endswith(crlf[crlf.index(b"\r\n---\r\n") + 7 :])  # body bytes identical
    assert b"status: confirmed  # set by a person\r\n" in after


def test_symlink_loop_is_reported_not_followed(kb_project: Path) -> None:
    bugs = kb_project / "kb/bugs"
    os.symlink(bugs / "BUG-20251109-099.md", bugs / "BUG-20251109-098.md")
    os.symlink(bugs / "BUG-20251109-098.md", bugs / "BUG-20251109-099.md")
    os.symlink(bugs, bugs / "loop.md.d")  # a folder loop is never walked
    code, out = run("validate")
    assert code == 1
    assert "kb/bugs/BUG-20251109-098.md: broken or looping symbolic link" in out
    assert "Traceback" not in out


@pytest.mark.parametrize("command", [["show"], ["status"], ["renumber"]])
def test_path_like_ids_are_rejected_before_any_file_access(kb_project: Path, command: list[str]) -> None:
    args = [*command, "../../etc/passwd"] + (["fixed"] if command == ["status"] else [])
    code, out = run(*args)
    assert code == 1
    assert "Error: '../../etc/passwd' is not a valid bug id (expected BUG-YYYYMMDD-NNN)" in out


def test_nothing_is_written_when_validation_fails(kb_project: Path) -> None:
    path = kb_project / BUG_PATH
    path.write_text(path.read_text().replace("severity: high", "severity: urgent"))
    before = {p: p.read_bytes() for p in kb_project.rglob("*") if p.is_file()}
    code, out = run("status", "BUG-20251109-002", "fixed")
    assert code == 1
    assert "severity: must be one of low, medium, high, critical" in out
    assert {p: p.read_bytes() for p in kb_project.rglob("*") if p.is_file()} == before


def test_missing_kb_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out = run("list")
    assert code == 1
    assert f"Error: no kb/ folder in {tmp_path.resolve()} or any folder above it" in out
    code, out = run("--kb", str(tmp_path / "nowhere"), "list")
    assert code == 1
    assert "nowhere: no kb/ folder there" in out
