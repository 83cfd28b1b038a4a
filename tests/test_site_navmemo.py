"""Record pages outside the navigation share one rendering of it, the same HTML the theme makes."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import material
import pytest

from site_kb import make_site_project, mkdocs_build

MEMO = re.compile(r"the navigation of (\d+) pages outside it was rendered (\d+) time")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_site_project(tmp_path / "project")


def _override_nav(project: Path, text: str | None = None) -> None:
    """Give the project a ``partials/nav.html`` of its own (``text``, or a copy of Material's)."""
    nav = project / "overrides/partials/nav.html"
    nav.parent.mkdir(parents=True)
    theme_nav = Path(material.__file__).parent / "templates/partials/nav.html"
    if text is None:
        shutil.copy(theme_nav, nav)
    else:
        nav.write_text(text, encoding="utf-8")
    config = project / "mkdocs.yml"
    config.write_text(
        config.read_text().replace("  name: material\n", "  name: material\n  custom_dir: overrides\n")
    )


def _html(site: Path) -> dict[str, str]:
    return {p.relative_to(site).as_posix(): p.read_text(encoding="utf-8") for p in site.rglob("*.html")}


def test_shared_navigation_is_the_html_the_theme_makes_per_page(project: Path, tmp_path: Path) -> None:
    shared = mkdocs_build(project, "--verbose", "--site-dir", str(tmp_path / "shared"))
    assert shared.returncode == 0, shared.stderr
    found = MEMO.search(shared.stderr)
    assert found is not None, shared.stderr[-2000:]
    outside, renderings = int(found[1]), int(found[2])
    assert outside >= 6 and renderings < outside  # bug, cause and fix pages share the navigation

    _override_nav(project)  # Material's own template, as a project override: rendered per page
    own = mkdocs_build(project, "--verbose", "--site-dir", str(tmp_path / "own"))
    assert own.returncode == 0, own.stderr
    assert MEMO.search(own.stderr) is None
    shared_pages, own_pages = _html(tmp_path / "shared"), _html(tmp_path / "own")
    assert sorted(shared_pages) == sorted(own_pages)
    for page, html in shared_pages.items():
        assert html == own_pages[page], page
    bug = shared_pages["bugs/BUG-20251109-002/index.html"]
    assert 'href="../../errors/cuda-illegal-memory-access/"' in bug  # the error types are listed


def test_a_project_navigation_template_is_rendered_for_each_page(project: Path) -> None:
    _override_nav(project, '<nav class="own">this page: {{ page.url }}</nav>\n')
    result = mkdocs_build(project)
    assert result.returncode == 0, result.stderr
    for bug in ("BUG-20251109-002", "BUG-20251020-001"):
        html = (project / "site/bugs" / bug / "index.html").read_text(encoding="utf-8")
        assert f"this page: bugs/{bug}/" in html


def test_compiled_theme_templates_are_reused_and_an_edited_one_is_compiled_afresh(tmp_path: Path) -> None:
    """While serving, each rebuild's new Jinja environment takes the compiled templates of the last."""
    import jinja2

    from kbgen.site.navmemo import CompiledTemplates

    (tmp_path / "main.html").write_text("<p>{{ title }} one</p>", encoding="utf-8")
    compiled = CompiledTemplates()
    compiles: list[str] = []

    class Counting(jinja2.Environment):
        def _compile(self, source: str, filename: str) -> object:
            compiles.append(filename)
            return super()._compile(source, filename)

    def build() -> str:
        env = Counting(loader=jinja2.FileSystemLoader(str(tmp_path)), bytecode_cache=compiled)
        return env.get_template("main.html").render(title="Page")

    assert build() == "<p>Page one</p>" and len(compiles) == 1
    assert build() == "<p>Page one</p>" and len(compiles) == 1  # a new environment, no compile
    (tmp_path / "main.html").write_text("<p>{{ title }} two</p>", encoding="utf-8")
    assert build() == "<p>Page two</p>" and len(compiles) == 2
