"""A checklist step's condition (``decided_by``/``fails_if``) is a record's text: however long,
deep or strange it is, every command reports it as a problem of its file and keeps working."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import (
    BUG_ID,
    ERROR_IMA,
    KBGEN,
    add_keys,
    add_probe,
    base_kb_files,
    frontmatter,
    invoke,
    write_tree,
)
from site_kb import make_site_project, mkdocs_build
from test_site_livereload import Server, problem, wait_until

ERROR_FILE = "kb/errors/cuda-illegal-memory-access.md"
DEEP = "gpu: " + "not " * 3500 + "arch_ok"


def set_condition(root: Path, key: str, condition: str) -> None:
    """Give the error type's one diagnostic step (line 14 of its file) a ``key`` condition."""
    path = root / ERROR_FILE
    text = path.read_text()
    assert "    probe: gpu\n" in text
    path.write_text(text.replace("    probe: gpu\n", f"    {key}: {json.dumps(condition)}\n"))


@pytest.mark.parametrize("key", ["decided_by", "fails_if"])
@pytest.mark.parametrize(
    "command",
    [
        ["validate"],
        ["list"],
        ["show", BUG_ID],
        ["new-bug", "--title", "another crash", "--error", "cuda-illegal-memory-access"],
    ],
)
def test_a_deeply_nested_condition_is_a_problem_of_its_file(
    kb_project: Path, key: str, command: list[str]
) -> None:
    set_condition(kb_project, key, DEEP)
    result = invoke(*command)  # fails the test on a traceback
    assert result.exit_code == 1
    assert f"{ERROR_FILE}:14: diagnostics.0: " in result.output
    assert "the condition is 14007 characters long; at most 500" in result.output
    assert "not " * 30 not in result.output  # the message quotes the start, not all of it


def test_a_condition_nested_past_the_limit_is_refused_with_its_depth(kb_project: Path) -> None:
    set_condition(kb_project, "decided_by", "gpu: " + "(" * 21 + "arch_ok" + ")" * 21)
    result = invoke("validate")
    assert result.exit_code == 1
    assert f"{ERROR_FILE}:14: diagnostics.0: " in result.output
    assert "nests 21 levels deep (brackets, not, signs); at most 20" in result.output


def test_fill_refuses_a_bug_whose_step_is_nested_too_deep(kb_project: Path) -> None:
    """1,500 ``not`` once passed validate, then overflowed Python's stack when a probe decided it."""
    add_probe(kb_project, "repro", 'return {"status": "pass", "facts": {"count": -1}}')
    condition = "repro: " + "not " * 1500 + 'status == "pass"'
    add_keys(kb_project, f"progress:\n  - id: deep\n    title: Deep\n    decided_by: '{condition}'")
    assert invoke("validate").exit_code == 1
    before = (kb_project / f"kb/bugs/{BUG_ID}.md").read_bytes()
    result = invoke("probe", "--fill", BUG_ID, "repro")
    assert result.exit_code == 1
    assert f"kb/bugs/{BUG_ID}.md:" in result.stderr
    assert "at most 500" in result.stderr
    assert (kb_project / f"kb/bugs/{BUG_ID}.md").read_bytes() == before


def test_negative_numbers_and_nesting_up_to_the_limit_decide_a_step(kb_project: Path) -> None:
    add_probe(kb_project, "repro", 'return {"status": "pass", "facts": {"count": -1, "delta": -2.5}}')
    passes = "repro: " + "not " * 20 + "count == -1"  # an even number of not: count == -1
    fails = "repro: delta > +0.5 or count in [-3, -2]"
    steps = f"    decided_by: '{passes}'\n    fails_if: '{fails}'"
    add_keys(kb_project, f"progress:\n  - id: sign\n    title: Signed facts\n{steps}")
    validated = invoke("validate")
    assert validated.exit_code == 0, validated.output
    result = invoke("probe", "--fill", BUG_ID, "repro")
    assert result.exit_code == 0, result.output
    step = frontmatter(kb_project)["progress"][0]
    assert step["state"] == "passed"


@pytest.mark.parametrize("condition", ["gpu: count == - count", "gpu: count == --1", "gpu: count == -true"])
def test_a_sign_goes_only_before_a_number(kb_project: Path, condition: str) -> None:
    set_condition(kb_project, "decided_by", condition)
    result = invoke("validate")
    assert result.exit_code == 1
    assert "a sign (- or +) goes only right before a number" in result.output


@pytest.mark.slow
def test_the_site_build_reports_a_deep_condition_with_its_file(tmp_path: Path) -> None:
    project = make_site_project(tmp_path / "project")
    path = project / ERROR_FILE
    text = path.read_text()
    old = """    decided_by: 'cuda-smoke: status == "pass"'"""
    assert old in text
    path.write_text(text.replace(old, f"    decided_by: {json.dumps(DEEP)}"))
    result = mkdocs_build(project)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"{ERROR_FILE}:" in result.stderr
    assert "at most 500" in result.stderr


@pytest.mark.slow
def test_serve_answers_with_the_problem_of_a_deep_condition(tmp_path: Path) -> None:
    project = make_site_project(tmp_path / "project")
    path = project / ERROR_FILE
    old = """    decided_by: 'cuda-smoke: status == "pass"'"""
    path.write_text(path.read_text().replace(old, f"    decided_by: {json.dumps(DEEP)}"))
    server = Server(project, [*KBGEN, "serve"], ready=("", ""))  # waits for nothing: checked below
    try:
        wait_until(lambda: "cannot be published yet" in server.page(""), "the problem page served")
        assert f"{ERROR_FILE}:" in server.page("")
        assert "at most 500" in problem(server)
        assert "Traceback" not in server.output()
    finally:
        server.stop()


# --------------------------------------------------------------------------- property

_PIECES = [
    "not ",
    "(",
    ")",
    "[",
    "]",
    "-",
    "+",
    " and ",
    " or ",
    "==",
    " in ",
    ",",
    "1",
    "-1",
    "x",
    '"s"',
    " ",
]
conditions = st.one_of(
    st.text(max_size=300),
    st.lists(st.sampled_from(_PIECES), max_size=120).map("".join),
    # shallow, and deep enough to exhaust the recursion limit (Hypothesis raises it while it runs)
    st.tuples(
        st.sampled_from(["not ", "(", "-", "[", "not (", "1+"]),
        st.one_of(st.integers(0, 40), st.integers(900, 30_000)),
    ).map(lambda t: t[0] * t[1] + "x"),
    st.integers(0, 12_000).map(lambda n: "x == " + "1" * n),
)
raw_values = st.one_of(
    st.binary(max_size=400),
    st.builds(  # bytes after a deep prefix, in a YAML string
        lambda deep, raw: b'"gpu: ' + b"not " * deep + raw + b'"',
        st.integers(900, 30_000),
        st.binary(max_size=200),
    ),
)


def _validate_with(condition_line: bytes, where: Path) -> None:
    write_tree(where, base_kb_files())
    path = where / ERROR_FILE
    path.write_bytes(ERROR_IMA.encode().replace(b"    probe: gpu\n", condition_line))
    result = invoke("--kb", str(where), "validate")
    assert result.exit_code in (0, 1), result.output
    assert "Traceback" not in result.output
    if result.exit_code == 1:
        assert "kb/errors/cuda-illegal-memory-access.md:" in result.output
    files = {p for p in where.rglob("*") if p.is_file()}
    assert files == {where / rel for rel in base_kb_files()}  # validate writes nothing


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(probe=st.sampled_from(["gpu", "", "gpu-2", "g p u"]), condition=conditions)
def test_validate_never_fails_on_any_condition(probe: str, condition: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        line = f"    decided_by: {json.dumps(f'{probe}: {condition}')}\n".encode()
        _validate_with(line, Path(folder))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=raw_values)
def test_validate_never_fails_on_any_bytes_in_a_condition(raw: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        _validate_with(b"    fails_if: " + raw + b"\n", Path(folder))
