"""One reading of Markdown: `kbgen validate`, `kbgen import` and the site agree on what is code,
what is a heading and which sections say nothing.

The commands are run as a user runs them. The reader's fences and headings are checked against
markdown-it-py, a CommonMark parser, on generated documents.
"""

from __future__ import annotations

import json
import shutil
from functools import lru_cache
from pathlib import Path

import markdown
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from conftest import run
from kbgen import mdtext
from site_kb import REPO, mkdocs_build
from test_site_sanitize import dangers

BUG = "kb/bugs/BUG-20251109-002.md"


def import_report(project: Path, text: str) -> tuple[str, Path]:
    (project / "report.md").write_text(text, encoding="utf-8")
    code, out = run("import", "report.md")
    assert code == 0, out
    written = [p for p in (project / "kb/bugs").glob("*.md") if p.name != "BUG-20251109-002.md"]
    assert len(written) == 1, out
    return out, written[0]


# --------------------------------------------------------------------------- n/a


NA_SECTION = "\n## Workaround\n\nN/A\n"


def test_a_section_that_says_only_na_is_unfilled_to_validate_import_and_the_site(
    kb_project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("KBGEN_NOW", "2025-11-21T10:00:00+00:00")
    bug = kb_project / BUG
    bug.write_text(bug.read_text() + "\n## Notes\n\nSeen on two machines.\n" + NA_SECTION)
    code, out = run("validate")
    assert code == 0
    assert f"{BUG}:20: warning: section 'Workaround' holds only template text ('N/A')" in out
    assert run("validate", "--strict")[0] == 1
    assert run("build-pages", str(tmp_path / "pages"))[0] == 0
    page = (tmp_path / "pages/bugs/BUG-20251109-002.md").read_text()
    assert "Seen on two machines." in page
    assert "Workaround" not in page

    bug.write_text(bug.read_text().replace(NA_SECTION, ""))
    report = "# Loader dies on the second epoch\n\n## Notes\n\nSeen again.\n" + NA_SECTION
    out, written = import_report(kb_project, report)
    assert "dropped 1 unfilled template section(s)" in out
    assert "Workaround" not in written.read_text()
    assert run("validate", "--strict") == (0, "5 file(s) checked: no problems\n")


def test_na_inside_a_sentence_is_text_to_both(kb_project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KBGEN_NOW", "2025-11-21T10:00:00+00:00")
    section = "\n## Workaround\n\nN/A on the old driver; pin 550 on the new one.\n"
    out, written = import_report(kb_project, "# Loader dies\n" + section)
    assert "dropped" not in out
    assert section.strip() in written.read_text()
    assert run("validate", "--strict") == (0, "5 file(s) checked: no problems\n")


# --------------------------------------------------------------------------- unclosed fence

UNCLOSED = """\
# Loader dies on the second epoch

## Steps to reproduce

Run the loader on one GPU:

```sh
python load.py --workers 4
<script>alert(1)</script>
## Notes
TODO: the rest of the session
"""


@lru_cache(maxsize=1)
def site_markdown() -> markdown.Markdown:
    """Python-Markdown with the extensions mkdocs.yml gives the site (and no sanitizer)."""
    from mkdocs.config import load_config

    config = load_config(config_file=str(REPO / "mkdocs.yml"))
    return markdown.Markdown(
        extensions=config["markdown_extensions"], extension_configs=config["mdx_configs"]
    )


def test_an_unclosed_fence_is_code_to_import_validate_and_the_site(
    kb_project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("KBGEN_NOW", "2025-11-21T10:00:00+00:00")
    out, written = import_report(kb_project, UNCLOSED)
    body = written.read_text().split("---\n", 2)[2]
    # import: "## Notes" is a line of the code, not a section of its own
    assert "## Notes\nTODO: the rest of the session" in body
    assert "dropped" not in out
    # validate: the TODO is code, and there is no empty section "Notes"
    assert run("validate", "--strict") == (0, "5 file(s) checked: no problems\n")
    # the site: the page's Markdown alone, before any sanitizer, shows the script as code
    code, out = run("build-pages", str(tmp_path / "pages"))
    assert code == 0, out
    page = (tmp_path / "pages/bugs" / f"{written.name.split('-loader')[0]}.md").read_text()
    md = site_markdown()
    md.reset()
    html = md.convert(page)
    assert dangers(html) == []
    code_block = html.split("<code>", 1)[1]
    assert "&lt;script&gt;alert" in code_block
    assert "## Notes</span>" in code_block
    assert 'id="notes"' not in html


@pytest.mark.slow
def test_an_unclosed_fence_in_a_built_site_runs_nothing(
    kb_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KBGEN_NOW", "2025-11-21T10:00:00+00:00")
    _, written = import_report(kb_project, UNCLOSED)
    shutil.copy(REPO / "mkdocs.yml", kb_project / "mkdocs.yml")
    shutil.copytree(REPO / "docs", kb_project / "docs", dirs_exist_ok=True)
    result = mkdocs_build(kb_project)
    assert result.returncode == 0, result.stderr
    page = (kb_project / "site/bugs" / written.name.split("-loader")[0] / "index.html").read_text()
    article = page.split("<article", 1)[1].split("</article>", 1)[0]
    assert "&lt;script&gt;alert" in article
    assert dangers(article) == []


def test_list_item_fences_closing_rules_and_comments() -> None:
    text = (
        "1. Run:\n\n   ```sh\n   # not a heading\n   ```\n"  # a fence inside a list item
        "# Real\n"
        "````\n```\n# still code\n`````\n"  # a shorter run does not close, a longer one does
        "<!--\n# in a comment\n-->\n"
        "    ```\n"  # indented code, not a fence
        "~~~ info\n"
        "# code to the end\n"
    )
    doc = mdtext.read(text)
    assert [h.title for h in doc.headings] == ["Real"]
    assert [(c.start, c.end, c.closed, c.column) for c in doc.code] == [
        (2, 5, True, 3),
        (6, 10, True, 0),
        (14, 16, False, 0),
    ]
    assert _reference(text) == _ours(text)


def test_a_heading_inside_a_github_forms_log_is_part_of_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, base_layer: None
) -> None:
    monkeypatch.chdir(tmp_path)
    assert run("init")[0] == 0
    monkeypatch.setenv("KBGEN_NOW", "2025-11-21T10:00:00+00:00")
    body = (
        "### Error message\n\nRuntimeError: CUDA error: device-side assert triggered\n\n"
        "### Severity\n\nhigh\n\n"
        "### Log\n\n```text\n### Severity\nlow\nRuntimeError: CUDA error: device-side assert triggered\n"
    )  # the log's fence was never closed: it runs to the end of the body
    issue = {"number": 9, "title": "Assert", "body": body, "labels": [], "createdAt": "2025-11-20T10:00:00Z"}
    (tmp_path / "issues.json").write_text(json.dumps([issue]))
    code, out = run("import", "--github", "issues.json")
    assert (code, out) == (0, "#9: wrote BUG-20251120-001 kb/bugs/BUG-20251120-001-assert.md\n")
    text = (tmp_path / "kb/bugs/BUG-20251120-001-assert.md").read_text()
    assert "severity: high" in text
    assert "error: cuda-device-side-assert" in text


# --------------------------------------------------------------------------- against CommonMark

_COMMONMARK = MarkdownIt("commonmark")


def _reference(text: str) -> tuple[list[tuple[int, int]], list[int]]:
    """(fenced code line ranges, ATX heading lines) as markdown-it-py reads ``text``."""
    tokens = _COMMONMARK.parse(text)
    fences = [_trim(text, *t.map) for t in tokens if t.type == "fence" and t.map]
    headings = [t.map[0] for t in tokens if t.type == "heading_open" and t.markup[0] == "#" and t.level == 0]
    return fences, headings


def _ours(text: str) -> tuple[list[tuple[int, int]], list[int]]:
    doc = mdtext.read(text)
    return [_trim(text, c.start, c.end) for c in doc.code], [h.line for h in doc.headings]


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    """A block's lines less the blank ones it ends with (where the parsers may differ, harmlessly)."""
    lines = text.split("\n")
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return start, end


LINES = [
    "```",
    "````",
    "~~~",
    "~~~~",
    "```python",
    "``` a`b",
    "~~~ a`b",
    " ```",
    "   ```",
    "    ```",
    "\t```",
    "```  ",
    "``` x ```",
    "# Title",
    "## Title ##",
    "   ### Deep",
    "    # code",
    "#hashtag",
    "#",
    "text",
    "`code`",
    "",
    "  ",
    "<!--",
    "-->",
    "- item",
    "-",
    "1. step",
    "2) step",
    "* * *",
    "- ```",
    "  ```",
    "  # in an item",
    "  text",
    "Title",
    "===",
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(LINES), min_size=1, max_size=14).map("\n".join))
def test_fences_and_headings_are_read_as_commonmark_reads_them(text: str) -> None:
    assert _ours(text) == _reference(text), text
