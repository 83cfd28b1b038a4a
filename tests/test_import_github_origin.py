"""What a bug imported with `kbgen import --github` keeps of its issue, as a user meets it: the
issue's date (in the file, and in the site's weekly chart), its address, number, author and
labels (in the file and on the bug page), a title without the form's prefix; hostile values
left out with a line that names the issue."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from conftest import invoke
from kbgen.store import find_project, load_kb
from site_kb import TODAY, make_site_project, mkdocs_build
from test_import_github import BODY, issue, new_bugs, write_list


def bug_text(root: Path) -> str:
    [name] = new_bugs(root)
    return (root / "kb" / "bugs" / name).read_text(encoding="utf-8")


def test_the_bug_keeps_the_issues_date_address_author_and_labels(kb_project: Path) -> None:
    item = issue(
        41,
        title="[Bug]: illegal memory access in the embedding lookup",
        createdAt="2025-11-03T09:12:00Z",
        author={"id": "MDQ6VXNlcjE=", "is_bot": False, "login": "octocat", "name": "Mona Lisa"},
        url="https://github.com/acme/trainer/issues/41",
        labels=[{"name": "bug"}, {"name": "GPU failure"}],
    )
    result = invoke("import", "--github", write_list(kb_project, [item]))
    assert result.exit_code == 0, result.output
    assert result.output == (
        "#41: wrote BUG-20251103-001 kb/bugs/BUG-20251103-001-illegal-memory-access-in-the-embedding.md\n"
    )
    text = bug_text(kb_project)
    assert "title: illegal memory access in the embedding lookup\n" in text
    assert "created: 2025-11-03T09:12:00+00:00\n" in text  # the issue's date, not the import's
    assert "updated: 2025-11-21T10:00:00+00:00\n" in text
    assert (
        "origin:\n  number: 41\n  url: https://github.com/acme/trainer/issues/41\n"
        "  author: octocat\n  labels: [bug, GPU failure]\n"
    ) in text
    bug = load_kb(find_project(kb_project)).bugs["BUG-20251103-001"].record
    assert bug.origin is not None and bug.origin.number == 41
    assert [(e.kind.value, e.note) for e in bug.history] == [("imported", "from GitHub issue #41")]
    shown = invoke("show", "BUG-20251103-001")
    assert shown.exit_code == 0, shown.output


@pytest.mark.parametrize(
    ("title", "kept"),
    [
        ("[Bug]: NaN after warmup", "NaN after warmup"),
        ("[BUG] NaN after warmup", "NaN after warmup"),
        ("Bug: NaN after warmup", "NaN after warmup"),
        ("bug report - NaN after warmup", "bug report - NaN after warmup"),  # not a prefix the form writes
        ("[GPU failure]: NaN after warmup", "NaN after warmup"),
        ("[GPU] NaN after warmup", "NaN after warmup"),  # the gpu-failure form kbgen init writes
        ("[FSDP] NaN after warmup", "[FSDP] NaN after warmup"),  # a component, not the form's prefix
        ("Debugging: NaN after warmup", "Debugging: NaN after warmup"),
        ("[Bug]: ", "GitHub issue #5"),  # nothing but the prefix, and a body with no error line
    ],
)
def test_the_forms_title_prefix_is_dropped(kb_project: Path, title: str, kept: str) -> None:
    result = invoke("import", "--github", write_list(kb_project, [issue(5, title=title, body="")]))
    assert result.exit_code == 0, result.output
    assert load_kb(find_project(kb_project)).bugs["BUG-20251120-001"].record.title == kept


HOSTILE: list[tuple[dict[str, Any], str]] = [
    (
        {"url": "javascript:alert(1)//https://github.com/a/b/issues/9"},
        "#9: url left out: 'javascript:alert(1)//",
    ),
    ({"url": "http://github.com/acme/trainer/issues/9"}, "#9: url left out: 'http://github.com/acme/"),
    ({"url": "https://github.com.evil.example/a/b/issues/9"}, "#9: url left out: 'https://github.com.evil"),
    (
        {"url": "https://github.com/acme/trainer/issues/9\n<script>"},
        "#9: url left out: 'https://github.com/acme/trainer/issues/9\\n<script>'",
    ),
    (
        {"url": "https://github.com/acme/trainer/issues/10"},
        "#9: url left out: 'https://github.com/acme/trainer/issues/10' is the address of another issue",
    ),
    ({"url": ["https://github.com/acme/trainer/issues/9"]}, "#9: url left out: '[\"https://github.com/"),
    ({"author": {"login": "mona\x1b[31m"}}, "#9: author left out: 'mona\\x1b[31m' is not a GitHub login"),
    ({"author": {"login": 12}}, "#9: author left out: '12' is not a GitHub login"),
    ({"author": "mona lisa"}, "#9: author left out: 'mona lisa' is not a GitHub login"),
    ({"labels": [{"name": "gpu\x07"}, {"name": "ok"}]}, "#9: label left out: 'gpu\\x07' is not one line"),
    ({"labels": [{"name": "x" * 101}]}, "#9: label left out: 'xxxxxxxx"),
]


@pytest.mark.parametrize(("hostile", "said"), HOSTILE)
def test_a_hostile_value_is_left_out_with_a_line_naming_the_issue(
    kb_project: Path, hostile: dict[str, Any], said: str
) -> None:
    good = {"url": "https://github.com/acme/trainer/issues/9", "author": {"login": "octocat"}}
    result = invoke("import", "--github", write_list(kb_project, [issue(9, **{**good, **hostile})]))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "#9: wrote BUG-20251120-001 kb/bugs/BUG-20251120-001-issue-9.md"
    assert len(lines) == 2 and lines[1].startswith(said), lines
    bug = load_kb(find_project(kb_project)).bugs["BUG-20251120-001"].record
    assert bug.origin is not None and bug.origin.number == 9
    left_out = said.split(": ")[1].split()[0]
    assert getattr(bug.origin, left_out + ("s" if left_out == "label" else "")) in (None, [], ["ok"])
    assert "\x1b" not in bug_text(kb_project) and "\x07" not in bug_text(kb_project)


@pytest.mark.parametrize(
    ("created", "said"),
    [
        ("0001-01-01T00:00:00Z", "#12: not imported: createdAt: Input should be a date from 2008 on"),
        ("2999-01-01T00:00:00Z", "#12: not imported: createdAt: Input should not be a date in the future"),
        (1763719200, "#12: not imported: createdAt: Input should be a date and time as text"),
        ("1763719200", "#12: not imported: createdAt: Input should be a date and time as text"),
        ("2025-02-30T10:00:00Z", "#12: not imported: createdAt: Input should be a valid datetime"),
    ],
)
def test_a_date_that_is_no_issues_date_refuses_the_issue(kb_project: Path, created: Any, said: str) -> None:
    result = invoke("import", "--github", write_list(kb_project, [issue(12, createdAt=created), issue(13)]))
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0].startswith(said), lines[0]
    assert lines[1:] == [
        "#13: wrote BUG-20251120-001 kb/bugs/BUG-20251120-001-issue-13.md",
        "1 of 2 issue(s) not imported",
    ]


def _opened_per_week(home: str) -> dict[str, int]:
    return {week: int(n) for week, n in re.findall(r"<title>(\w{3} \d\d): (\d+) opened</title>", home)}


def test_the_site_dates_imported_bugs_by_their_issues_and_links_the_issue(tmp_path: Path) -> None:
    project = make_site_project(tmp_path)
    built = mkdocs_build(project)
    assert built.returncode == 0, built.stderr
    before = _opened_per_week((project / "site" / "index.html").read_text())
    items = [
        issue(1, createdAt="2025-10-28T09:00:00Z", url="https://github.com/acme/trainer/issues/1"),
        issue(2, createdAt="2025-11-04T09:00:00Z", author={"login": "octocat"}),
        issue(3, createdAt="2025-11-05T23:30:00Z", labels=[{"name": "<b>gpu</b>"}]),
    ]
    (project / "issues.json").write_text(json.dumps(items))
    done = invoke("--kb", str(project), "import", "--github", str(project / "issues.json"), KBGEN_NOW=TODAY)
    assert done.exit_code == 0, done.output
    built = mkdocs_build(project)
    assert built.returncode == 0, built.stderr
    after = _opened_per_week((project / "site" / "index.html").read_text())
    added = {week: after[week] - before.get(week, 0) for week in after if after[week] != before.get(week, 0)}
    assert added == {"Oct 27": 1, "Nov 03": 2}  # the issues' weeks; none in the import's week (Nov 17)
    first = (project / "site" / "bugs" / "BUG-20251028-001" / "index.html").read_text()
    assert (
        'Reported on GitHub:</strong> <a href="https://github.com/acme/trainer/issues/1">issue #1</a>'
        in first
    )
    second = (project / "site" / "bugs" / "BUG-20251104-001" / "index.html").read_text()
    assert "Reported on GitHub:</strong> issue #2 by @octocat" in second
    third = (project / "site" / "bugs" / "BUG-20251105-001" / "index.html").read_text()
    assert "labelled <code>&lt;b&gt;gpu&lt;/b&gt;</code>" in third and "<b>gpu</b>" not in third
    assert "Nov 05, 2025" in third or "2025-11-05" in third


def test_body_of_the_form_still_fills_the_bug(kb_project: Path) -> None:
    result = invoke("import", "--github", write_list(kb_project, [issue(4, title="[GPU] crash", body=BODY)]))
    assert result.exit_code == 0, result.output
    bug = load_kb(find_project(kb_project)).bugs["BUG-20251120-001"].record
    assert (bug.title, bug.severity.value, bug.error) == ("crash", "high", "cuda-illegal-memory-access")
