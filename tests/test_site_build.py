"""`mkdocs build --strict` of a fixture KB, and `kbgen build-pages`, as a user runs them."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from conftest import invoke, write_tree
from site_kb import TODAY, make_site_project, mkdocs_build


def html_of(project: Path, page: str) -> str:
    return (project / "site" / page / "index.html").read_text(encoding="utf-8")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_site_project(tmp_path)


def test_strict_build_publishes_every_page_and_writes_nothing_into_docs(project: Path) -> None:
    docs_before = sorted(p.relative_to(project) for p in (project / "docs").rglob("*"))
    result = mkdocs_build(project)
    assert result.returncode == 0, result.stderr
    for page in [
        "",
        "bugs",
        "bugs/BUG-20251109-002",
        "errors",
        "errors/cuda-illegal-memory-access",
        "causes/out-of-range-index",
        "fixes/reinstall-wheel",
        "probes",
        "tags",
        "getting-started",
    ]:
        assert (project / "site" / page / "index.html").is_file(), page
    assert sorted(p.relative_to(project) for p in (project / "docs").rglob("*")) == docs_before
    bug = html_of(project, "bugs/BUG-20251109-002")
    assert "<title>BUG-20251109-002: Illegal memory access in BCE loss - GPU failure KB</title>" in bug
    assert 'href="../../errors/cuda-illegal-memory-access/"' in bug


def test_hostile_title_is_text_on_every_page(project: Path) -> None:
    assert mkdocs_build(project).returncode == 0
    for page in (project / "site").rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert "<script>alert(1)" not in text, page
        assert "onerror=alert" not in text or "&lt;img src=x onerror=alert(2)&gt;" in text, page
        assert "javascript:alert" not in text, page
    hostile = html_of(project, "bugs/BUG-20251112-014")
    assert "<title>BUG-20251112-014: &lt;script&gt;alert(1)&lt;/script&gt;" in hostile


def test_bugs_are_listed_in_tables_not_in_the_sidebar(project: Path) -> None:
    assert mkdocs_build(project).returncode == 0
    guide = html_of(project, "getting-started")
    assert 'href="../bugs/BUG-' not in guide  # no page of the site carries a nav entry per bug
    assert 'href="../errors/cuda-illegal-memory-access/"' in guide  # error types are in the sidebar
    index = html_of(project, "bugs")
    assert index.count('href="BUG-20251109-002/"') == 1


class _Cells(HTMLParser):
    """Each row of the bug table as its cells' text and the links in them."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[tuple[str, tuple[str, ...]]]] = []
        self.text = ""
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self.text, self.links = "", []
        elif tag == "a":
            self.links.append(dict(attrs).get("href") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th"):
            self.rows[-1].append((self.text.strip(), tuple(self.links)))

    def handle_data(self, data: str) -> None:
        self.text += data


def bug_table(page: str) -> list[list[tuple[str, tuple[str, ...]]]]:
    cells = _Cells()
    cells.feed(page[page.index('<div class="kb-sortable kb-bugs">') : page.index("</table>")])
    return cells.rows


@pytest.mark.parametrize("directory_urls", [True, False])
def test_bug_table_links_are_site_urls_with_either_url_style(project: Path, directory_urls: bool) -> None:
    """The plugin puts the table into the page after Markdown ran: its links must be made the
    way mkdocs makes every other link."""
    if not directory_urls:
        config = project / "mkdocs.yml"
        config.write_text(config.read_text() + "use_directory_urls: false\n")
    assert mkdocs_build(project).returncode == 0
    page = (project / "site" / "bugs" / "index.html").read_text(encoding="utf-8")
    assert "kbgenhtml" not in page and "<script>alert" not in page
    bug, error = (
        ("BUG-20251109-002/", "../errors/cuda-illegal-memory-access/")
        if directory_urls
        else ("BUG-20251109-002.html", "../errors/cuda-illegal-memory-access.html")
    )
    rows = bug_table(page)
    assert [text for text, _ in rows[0]] == [
        "ID",
        "Title",
        "Status",
        "Severity",
        "Error type",
        "GPU",
        "Torch",
        "Updated",
    ]
    assert len(rows) == 4  # the heading and three bugs
    assert rows[2][0] == ("BUG-20251109-002", (bug,))
    assert rows[2][4] == ("CUDA error: an illegal memory access was encountered", (error,))
    assert rows[1][1] == ("<script>alert(1)</script> {{ 7 * 7 }} | pipes *and* `ticks`", ())


def test_bug_table_is_the_same_without_the_plugin(project: Path, tmp_path: Path) -> None:
    """`kbgen build-pages` writes the table as Markdown, for mkdocs alone: same cells, same links."""
    assert mkdocs_build(project).returncode == 0
    with_plugin = bug_table(html_of(project, "bugs"))
    out = tmp_path / "pages"
    assert build_pages(project, out)[0] == 0
    assert "kbgen:html" not in (out / "bugs" / "index.md").read_text(encoding="utf-8")
    config = (project / "mkdocs.yml").read_text()
    (project / "plain.yml").write_text(
        config.replace("  - kbgen:\n      stale_days: 180\n", "").replace(
            "docs_dir: docs", f"docs_dir: {out}"
        )
    )
    result = mkdocs_build(project, "-f", "plain.yml", "--site-dir", str(tmp_path / "plain-site"))
    assert result.returncode == 0, result.stderr
    plain = bug_table((tmp_path / "plain-site/bugs/index.html").read_text(encoding="utf-8"))
    assert len(plain) == 4 and plain == with_plugin


def test_edit_links_point_at_the_kb_file(project: Path) -> None:
    config = project / "mkdocs.yml"
    config.write_text(
        config.read_text() + "repo_url: https://example.com/team/gpu-kb\nedit_uri: edit/main/docs/\n"
    )
    assert mkdocs_build(project).returncode == 0
    assert 'href="https://example.com/team/gpu-kb/edit/main/kb/bugs/BUG-20251109-002.md"' in html_of(
        project, "bugs/BUG-20251109-002"
    )
    assert (
        'href="https://example.com/team/gpu-kb/edit/main/kb/errors/cuda-illegal-memory-access.md"'
        in html_of(project, "errors/cuda-illegal-memory-access")
    )
    assert 'href="https://example.com/team/gpu-kb/edit/main/docs/getting-started.md"' in html_of(
        project, "getting-started"
    )


def test_invalid_kb_fails_the_build_with_file_and_line(project: Path) -> None:
    bug = project / "kb/bugs/BUG-20251020-001.md"
    bug.write_text(bug.read_text().replace("severity: medium", "severity: urgent"))
    result = mkdocs_build(project)
    assert result.returncode == 1
    assert "kb/bugs/BUG-20251020-001.md:7: severity: " in result.stderr
    assert not (project / "site" / "bugs" / "BUG-20251020-001").exists()


def test_dangling_reference_fails_the_build(project: Path) -> None:
    bug = project / "kb/bugs/BUG-20251020-001.md"
    bug.write_text(bug.read_text().replace("error: cuda-device-side-assert", "error: no-such-error"))
    result = mkdocs_build(project)
    assert result.returncode == 1
    assert "kb/bugs/BUG-20251020-001.md:8: error: " in result.stderr and "no-such-error" in result.stderr


def test_kb_warnings_fail_only_a_strict_build(project: Path) -> None:
    bug = project / "kb/bugs/BUG-20251020-001.md"
    bug.write_bytes(b"\xef\xbb\xbf" + bug.read_bytes())  # a byte order mark: a warning, not an error
    strict = mkdocs_build(project)
    assert strict.returncode == 1
    assert (
        "WARNING -  kbgen: kb/bugs/BUG-20251020-001.md: the file starts with a UTF-8 byte order mark"
        in strict.stderr
    )
    assert mkdocs_build(project, "--no-strict").returncode == 0


def test_template_error_fails_the_build_with_template_and_line(project: Path) -> None:
    write_tree(project, {"templates/page-bug.md.j2": "# {{ bug.id }}\n\n{{ bug.titel }}\n"})
    result = mkdocs_build(project)
    assert result.returncode == 1
    assert "templates/page-bug.md.j2:3: " in result.stderr and "titel" in result.stderr


def test_a_docs_file_in_the_way_of_a_generated_page_fails(project: Path) -> None:
    write_tree(project, {"docs/bugs/index.md": "# Hand-written list\n"})
    result = mkdocs_build(project)
    assert result.returncode == 1
    assert "is in the way of the generated page bugs/index.md" in result.stderr


# --------------------------------------------------------------------------- build-pages


def build_pages(project: Path, out: Path, *extra: str) -> tuple[int, str]:
    result = invoke("--kb", str(project), "build-pages", str(out), *extra, KBGEN_NOW=TODAY)
    return result.exit_code, result.output


def test_build_pages_writes_only_what_changed(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "pages"
    # 20 record and index pages and the full probe report a bug page links to
    assert build_pages(project, out) == (0, f"{out}: 21 written, 0 unchanged, 0 removed\n")
    assert build_pages(project, out) == (0, f"{out}: 0 written, 21 unchanged, 0 removed\n")
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*.md")}
    bug = project / "kb/bugs/BUG-20251020-001.md"
    bug.write_text(bug.read_text().replace("severity: medium", "severity: low"))
    assert build_pages(project, out) == (0, f"{out}: 4 written, 17 unchanged, 0 removed\n")
    touched = sorted(str(p.relative_to(out)) for p, t in before.items() if p.stat().st_mtime_ns != t)
    assert touched == [
        "bugs/BUG-20251020-001.md",
        "bugs/index.md",
        "errors/cuda-device-side-assert.md",
        "index.md",
    ]
    bug.unlink()
    code, output = build_pages(project, out)
    assert (code, output) == (0, f"{out}: 8 written, 12 unchanged, 1 removed\n")
    assert not (out / "bugs/BUG-20251020-001.md").exists()


def test_build_pages_leaves_other_files_alone(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "pages"
    write_tree(out, {"notes.txt": "mine\n"})
    assert build_pages(project, out, "--pages-only")[0] == 0
    assert (out / "notes.txt").read_text() == "mine\n"
    assert not (out / "getting-started.md").exists()


def test_serve_needs_a_site_configuration(tmp_path: Path) -> None:
    project = make_site_project(tmp_path, site_config=False)
    result = invoke("--kb", str(project), "serve")
    assert result.exit_code == 1
    assert result.output == (
        f"Error: no mkdocs.yml in {project}\n  hint: pass --config-file, or add one with the kbgen plugin "
        "(see kbgen's own mkdocs.yml)\n"
    )


def test_build_pages_refuses_the_docs_folder(project: Path) -> None:
    code, output = build_pages(project, project / "docs")
    assert code == 1
    assert output.startswith(f"Error: {project / 'docs'}: this is the site's docs_dir;")


def test_built_pages_make_the_same_site_without_the_plugin(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "pages"
    assert build_pages(project, out)[0] == 0
    config = (project / "mkdocs.yml").read_text()
    plain = config.replace("  - kbgen:\n      stale_days: 180\n", "").replace(
        "docs_dir: docs", f"docs_dir: {out}"
    )
    assert plain != config
    (project / "plain.yml").write_text(plain)
    result = mkdocs_build(project, "-f", "plain.yml", "--site-dir", str(tmp_path / "plain-site"))
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "plain-site/bugs/BUG-20251109-002/index.html").read_text(encoding="utf-8")
    assert "Illegal memory access in BCE loss" in page


def test_search_indexes_the_same_with_the_big_tables_held_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plugin hands the search plugin each page without its lifted tables (they all sit where
    search is told to skip) and puts them back after: the index and the pages are what they are
    when the tables are in place all along."""
    import json

    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    from kbgen.site import rawhtml

    monkeypatch.setenv("KBGEN_NOW", TODAY)
    monkeypatch.setenv("NO_MKDOCS_2_WARNING", "1")

    def built(project: Path) -> tuple[object, list[str]]:
        monkeypatch.chdir(project)
        build(load_config(config_file=str(project / "mkdocs.yml")))
        pages = ["errors/cuda-illegal-memory-access", "causes/out-of-range-index", "bugs", "tags"]
        index = json.loads((project / "site" / "search" / "search_index.json").read_text(encoding="utf-8"))
        return index, [html_of(project, page) for page in pages]

    held = built(make_site_project(tmp_path / "held"))
    assert "<table>" in held[1][0] and "BUG-20251109-002" in held[1][0]  # the error page's bug table is back
    hold, put_back = rawhtml.Lifted.hold, rawhtml.Lifted.put_back

    def in_place(self: rawhtml.Lifted, *args: Any) -> str:  # the tables back before search reads
        return put_back(self, hold(self, *args))

    monkeypatch.setattr(rawhtml.Lifted, "hold", in_place)
    monkeypatch.setattr(rawhtml.Lifted, "put_back", lambda self, page_html: page_html)
    assert built(make_site_project(tmp_path / "in-place")) == held
