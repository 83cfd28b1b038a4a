"""`kbgen import --github` on issue lists as they come: bodies the form did not render, issues of
the wrong shape, files that are no files, lists given twice, secrets pasted in, as a user meets
them (CLI output, exit status, files written)."""

from __future__ import annotations

import json
import os
import resource
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import invoke
from kbgen.init import FORM_FIELDS
from kbgen.store import find_project, load_kb

sys.path.insert(0, str(Path(__file__).parent))
from fleet_fixtures import report

IMA = "RuntimeError: CUDA error: an illegal memory access was encountered"
BODY = (
    f"### Error message\n\n{IMA}\n\n### Severity\n\nhigh\n\n"
    f'### Log\n\n```text\nTraceback (most recent call last):\n  File "train.py", line 3\n{IMA}\n```\n\n'
    "### Environment\n\n_No response_\n"
)
FIXTURE_BUG = "BUG-20251109-002.md"  # the one bug of the kb_project fixture


def issue(number: Any, **fields: Any) -> dict[str, Any]:
    created = "2025-11-20T10:00:00Z"
    return {
        "number": number,
        "title": f"Issue {number}",
        "body": BODY,
        "labels": [],
        "createdAt": created,
        **fields,
    }


def write_list(root: Path, items: list[Any] | str, name: str = "issues.json") -> str:
    (root / name).write_text(items if isinstance(items, str) else json.dumps(items), encoding="utf-8")
    return name


def new_bugs(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "kb" / "bugs").glob("BUG-*.md") if p.name != FIXTURE_BUG)


def assert_kb_loads(root: Path) -> None:
    kb = load_kb(find_project(root))
    assert kb.problems == [], [p.format() for p in kb.problems]


# --------------------------------------------------------------------------- shapes


def test_bodies_the_form_did_not_render_are_imported(kb_project: Path) -> None:
    items = [
        issue(1, title="Loss goes NaN", body="Plain words, no form headings."),
        issue(2, title="Empty body", body=""),
        {"number": 3, "title": "No body at all"},
        issue(4, title="Null body", body=None),
    ]
    result = invoke("import", "--github", write_list(kb_project, items))
    assert result.exit_code == 0, result.output
    assert result.output == (
        "#1: wrote BUG-20251120-001 kb/bugs/BUG-20251120-001-loss-goes-nan.md\n"
        "#2: wrote BUG-20251120-002 kb/bugs/BUG-20251120-002-empty-body.md\n"
        "#3: wrote BUG-20251121-001 kb/bugs/BUG-20251121-001-no-body-at-all.md\n"  # no date: today's
        "#4: wrote BUG-20251120-003 kb/bugs/BUG-20251120-003-null-body.md\n"
    )
    assert_kb_loads(kb_project)


@pytest.mark.parametrize(
    ("bad", "said"),
    [
        ('{"number": NaN, "title": "x"}', "item 2: not imported: number: Input should be a valid integer"),
        ('{"number": Infinity}', "item 2: not imported: number: Input should be a valid integer"),
        ('{"number": "12"}', "item 2: not imported: number: Input should be a valid integer"),
        ('{"number": [12]}', "item 2: not imported: number: Input should be a valid integer"),
        ('{"number": true}', "item 2: not imported: number: Input should be a valid integer"),
        ('{"number": -3}', "item 2: not imported: number: Input should be greater than or equal to 1"),
        ('{"title": "no number"}', "item 2: not imported: number: Field required"),
        ('"an issue"', "item 2: not imported: a string, not an issue (a JSON object)"),
        ('{"number": 12, "labels": "bug"}', "#12: not imported: labels: Input should be a valid list"),
        ('{"number": 12, "createdAt": "last tuesday"}', "#12: not imported: createdAt: Input should be"),
        ('{"number": 12, "createdAt": "0001-01-01T00:00Z"}', "#12: not imported: createdAt: Input should be"),
        ('{"number": 12, "createdAt": 1763719200}', "#12: not imported: createdAt: Input should be"),
        ('{"number": 12, "title": 42}', "#12: not imported: title: Input should be a valid string"),
        ('{"number": 12, "body": {"text": "x"}}', "#12: not imported: body: Input should be a valid string"),
        ('{"number": 12, "body": ' + "[" * 500 + "]" * 500 + "}", "#12: not imported: body: Input should be"),
    ],
)
def test_a_bad_issue_is_refused_by_its_number_and_the_others_imported(
    kb_project: Path, bad: str, said: str
) -> None:
    good = json.dumps(issue(1))
    other = json.dumps(issue(3, createdAt="2025-11-20T11:00:00Z"))
    result = invoke("import", "--github", write_list(kb_project, f"[{good}, {bad}, {other}]"))
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0] == "#1: wrote BUG-20251120-001 kb/bugs/BUG-20251120-001-issue-1.md"
    assert lines[1].startswith(said), lines[1]
    assert lines[2:] == [
        "#3: wrote BUG-20251120-002 kb/bugs/BUG-20251120-002-issue-3.md",
        "1 of 3 issue(s) not imported",
    ]
    assert "--date" not in result.output and "--title" not in result.output
    assert new_bugs(kb_project) == ["BUG-20251120-001-issue-1.md", "BUG-20251120-002-issue-3.md"]


def test_a_lone_surrogate_becomes_a_replacement_character(kb_project: Path) -> None:
    text = json.dumps([issue(5, title="Bad \ud800 title", body=BODY.replace("line 3", "line \udc00"))])
    assert "\\ud800" in text  # json writes it escaped, as a broken exporter would
    result = invoke("import", "--github", write_list(kb_project, text))
    assert result.exit_code == 0, result.output
    [name] = new_bugs(kb_project)
    written = (kb_project / "kb" / "bugs" / name).read_bytes().decode("utf-8")  # strict: valid UTF-8
    assert "title: Bad \ufffd title" in written
    assert_kb_loads(kb_project)


def test_a_list_nested_too_deeply_is_one_message(kb_project: Path) -> None:
    result = invoke("import", "--github", write_list(kb_project, "[" * 100_000 + "]" * 100_000))
    assert result.exit_code == 1
    assert result.output.startswith("Error: issues.json: nested too deeply to be an issue list")
    assert new_bugs(kb_project) == []


# --------------------------------------------------------------------------- reading the file


def _sparse(path: Path, size: int) -> None:
    with path.open("wb") as handle:
        handle.truncate(size)  # no disk used: the file is one hole


def _limit_memory() -> None:  # pragma: no cover - runs in the child
    # a reader that takes the whole of /dev/zero meets this limit instead of the machine's
    resource.setrlimit(resource.RLIMIT_AS, (2 * 1024**3, 2 * 1024**3))


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda p: os.mkfifo(p), "issues.json: a named pipe (FIFO), not a regular file"),
        (lambda p: p.symlink_to("/dev/zero"), "issues.json: a device, not a regular file"),
        (lambda p: _sparse(p, 600 * 1024**2), "issues.json: the issue list is 629,145,600 bytes"),
    ],
    ids=["fifo", "dev-zero", "600-MB"],
)
def test_the_list_is_read_from_a_regular_file_of_at_most_64_mib(
    kb_project: Path, make: Any, said: str
) -> None:
    make(kb_project / "issues.json")
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "kbgen", "import", "--github", "issues.json"],
        cwd=kb_project,
        capture_output=True,
        text=True,
        timeout=120,  # a reader waiting on the FIFO fails here, not the whole suite
        preexec_fn=_limit_memory,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.startswith(f"Error: {said}"), done.stderr
    assert "Traceback" not in done.stderr
    if "600" in said:
        assert "(64 MiB); nothing was imported" in done.stderr
    assert new_bugs(kb_project) == []


def test_standard_input_is_read_when_the_file_is_a_dash_and_bounded_too(kb_project: Path) -> None:
    good = invoke("import", "--github", "-", input=json.dumps([issue(8)]))
    assert good.exit_code == 0, good.output
    assert good.output == "#8: wrote BUG-20251120-001 kb/bugs/BUG-20251120-001-issue-8.md\n"
    huge = invoke("import", "--github", "-", input="[" + " " * (65 * 1024 * 1024) + "]")
    assert huge.exit_code == 1
    assert huge.output.startswith("Error: <stdin>: more than 67,108,864 bytes (64 MiB); nothing was imported")
    assert new_bugs(kb_project) == ["BUG-20251120-001-issue-8.md"]


# --------------------------------------------------------------------------- once each


def test_an_issue_listed_twice_is_imported_once_and_again_not_at_all(kb_project: Path) -> None:
    items = [issue(6, title="First listing"), issue(7), issue(6, title="Second listing")]
    name = write_list(kb_project, items)
    first = invoke("import", "--github", name)
    assert first.exit_code == 0, first.output
    assert first.output == (
        "#6: wrote BUG-20251120-001 kb/bugs/BUG-20251120-001-first-listing.md\n"
        "#7: wrote BUG-20251120-002 kb/bugs/BUG-20251120-002-issue-7.md\n"
        "#6: listed again as item 3; item 1 is the one imported\n"
    )
    before = {p: p.read_bytes() for p in (kb_project / "kb").rglob("*") if p.is_file()}
    again = invoke("import", "--github", name)
    assert again.exit_code == 0, again.output
    assert again.output == (
        "#6: already imported as BUG-20251120-001 (kb/bugs/BUG-20251120-001-first-listing.md)\n"
        "#7: already imported as BUG-20251120-002 (kb/bugs/BUG-20251120-002-issue-7.md)\n"
        "#6: listed again as item 3; item 1 is the one imported\n"
    )
    assert {p: p.read_bytes() for p in (kb_project / "kb").rglob("*") if p.is_file()} == before


def test_a_label_that_looks_like_an_issue_tag_marks_no_other_issue(kb_project: Path) -> None:
    labelled = issue(1, labels=[{"name": "GitHub 3"}, {"name": "gpu"}])
    assert invoke("import", "--github", write_list(kb_project, [labelled])).exit_code == 0
    later = invoke("import", "--github", write_list(kb_project, [issue(3)], name="later.json"))
    assert later.output == "#3: wrote BUG-20251120-002 kb/bugs/BUG-20251120-002-issue-3.md\n"
    assert load_kb(find_project(kb_project)).bugs["BUG-20251120-001"].record.tags == ["gpu", "github-1"]


def test_batches_keep_the_lists_order_and_take_ids_in_turn(
    kb_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kbgen.importer import github

    monkeypatch.setattr(github, "BATCH", 2, raising=False)  # (kbgen writes in batches of 500)
    day = "2025-11-09T08:00:00Z"  # the fixture's BUG-20251109-002 is taken that day
    items = [issue(n, createdAt=day) for n in (1, 2, 3)] + [{"number": "4"}] + [issue(5, createdAt=day)]
    result = invoke("import", "--github", write_list(kb_project, items))
    assert result.exit_code == 1
    assert result.output == (
        "#1: wrote BUG-20251109-003 kb/bugs/BUG-20251109-003-issue-1.md\n"
        "#2: wrote BUG-20251109-004 kb/bugs/BUG-20251109-004-issue-2.md\n"
        "#3: wrote BUG-20251109-005 kb/bugs/BUG-20251109-005-issue-3.md\n"
        "item 4: not imported: number: Input should be a valid integer\n"
        "#5: wrote BUG-20251109-006 kb/bugs/BUG-20251109-006-issue-5.md\n"
        "1 of 5 issue(s) not imported\n"
    )
    assert not [p for p in (kb_project / "kb" / "bugs").iterdir() if p.name.startswith(".")]  # no temp files
    assert_kb_loads(kb_project)


# --------------------------------------------------------------------------- secrets

SECRETS = [
    "hunter2",
    "hf_abcdefghijklmnopqrstuvwxyz123456",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "abcdefghijklmnop1234",
]


def test_secrets_in_a_pasted_probe_report_reach_no_file_and_no_page(kb_project: Path) -> None:
    data = report("gpu07")
    data["results"][0]["message"] = "password: hunter2; Authorization: Bearer abcdefghijklmnop1234"
    data["results"][0]["facts"]["HF_TOKEN"] = "hf_abcdefghijklmnopqrstuvwxyz123456"
    data["results"][1]["message"] = "token ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    pasted = "```json\n" + json.dumps(data, indent=2) + "\n```"
    body = BODY.replace("### Environment\n\n_No response_", f"### Environment\n\n{pasted}")
    result = invoke("import", "--github", write_list(kb_project, [issue(9, body=body)]))
    assert result.exit_code == 0, result.output
    assert result.output.endswith("; environment filled from its probe report\n")
    kb = load_kb(find_project(kb_project))
    bug = kb.bugs["BUG-20251120-001"].record
    assert bug.primary is not None and bug.primary.host == "gpu07"
    assert bug.primary.facts["gpu.name"] == "NVIDIA H100 80GB HBM3"
    pages = invoke("build-pages", str(kb_project / "pages"))
    assert pages.exit_code == 0, pages.output
    written = [*(kb_project / "kb").rglob("*"), *(kb_project / "pages").rglob("*")]
    texts = [p.read_text("utf-8") for p in written if p.is_file() and p.suffix in (".md", ".json")]
    assert len(texts) > 5
    for secret in SECRETS:
        assert not [t for t in texts if secret in t], secret
    saved = (kb_project / "kb" / "bugs" / "BUG-20251120-001").glob("env-*.json")
    assert '"HF_TOKEN": "<redacted>"' in next(saved).read_text()


# --------------------------------------------------------------------------- anything at all

_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 2**64)
    | st.floats()
    | st.text(st.characters(codec=None, exclude_categories=()), max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
_LABELS = [label for _, label, *_ in FORM_FIELDS] + ["Other"]
_VALUES = st.sampled_from(
    [
        "_No response_",
        "high",
        IMA,
        "```text\n### Severity\nlow\n" + IMA,
        "```json\n" + json.dumps(report("h")) + "\n```",
        '{"schema_version": 1, "results": [[[[]]]]}',
        "password: hunter2",
        "broken \ud800 half",
        "gpu",
        "",
    ]
) | st.text(max_size=40)
_BODIES = st.lists(st.tuples(st.sampled_from(_LABELS), _VALUES), max_size=6).map(
    lambda parts: "".join(f"### {label}\n\n{value}\n\n" for label, value in parts)
)
_ISSUES = st.fixed_dictionaries(
    {"number": st.integers(1, 40) | _JSON},
    optional={
        "title": st.text(max_size=40) | _JSON,
        "body": _BODIES | _JSON,
        "labels": st.lists(st.fixed_dictionaries({"name": st.text(max_size=20)}), max_size=3) | _JSON,
        "createdAt": st.sampled_from(
            ["2025-11-20T10:00:00Z", "2025-13-01", "0001-01-01T00:00:00Z", "2999-01-01T00:00Z", "1763719200"]
        )
        | _JSON,
        "url": st.sampled_from(
            [
                "https://github.com/acme/trainer/issues/7",
                "javascript:alert(1)",
                "https://github.com.evil.example/a/b/issues/7",
                "https://github.com/acme/trainer/issues/7\n<script>",
            ]
        )
        | _JSON,
        "author": st.fixed_dictionaries({"login": st.sampled_from(["octocat", "app/bot", "a\x1bb"]) | _JSON})
        | _JSON,
    },
)
_FILES = (
    st.lists(_ISSUES | _JSON, max_size=5).map(lambda items: json.dumps(items).encode())
    | _JSON.map(lambda value: json.dumps(value).encode())
    | st.binary(max_size=200)
)


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(content=_FILES)
def test_any_file_gives_written_bugs_or_messages_and_nothing_outside_kb(
    kb_project: Path, content: bytes
) -> None:
    (kb_project / "in.json").write_bytes(content)
    outside = sorted(p for p in kb_project.rglob("*") if "kb" not in p.relative_to(kb_project).parts[:1])
    result = invoke("import", "--github", "in.json")  # a traceback fails here
    assert result.exit_code in (0, 1), result.output
    if result.exit_code == 1:
        assert result.output.strip(), "a refusal says why"
    assert (
        sorted(p for p in kb_project.rglob("*") if "kb" not in p.relative_to(kb_project).parts[:1]) == outside
    )
    assert_kb_loads(kb_project)  # every bug written is a valid record
    for entry in load_kb(find_project(kb_project)).bugs.values():  # what it kept of its issue
        origin = entry.record.origin
        if origin is not None:
            assert origin.url is None or origin.url.startswith("https://github.com/acme/trainer/issues/")
            assert origin.author is None or origin.author.isprintable()
            assert all(label.isprintable() for label in origin.labels)
    assert not list((kb_project / "kb" / "bugs").rglob(".*"))
    for path in (kb_project / "kb" / "bugs").iterdir():  # the next example starts from the fixture
        if path.name != FIXTURE_BUG:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
