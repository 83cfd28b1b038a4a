"""The generated pages as Markdown: one golden file per page kind, and user text kept as text.

Update the golden files after an intended change with ``pytest tests/test_site_render.py
--update-golden`` and read the diff.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import markdown
import pytest

from conftest import write_tree
from kbgen import templating
from kbgen.site import pages, render
from kbgen.site.data import ProbeInfo, SiteData
from kbgen.store import Project, load_kb
from kbgen.templating import TemplateError
from site_kb import make_site_project

GOLDEN = Path(__file__).parent / "golden"
TODAY = dt.date(2025, 11, 21)
PROBES = {
    "gpu": ProbeInfo(
        "gpu",
        "GPU and driver",
        "Device, capability and driver.",
        ["torch?"],
        30.0,
        True,
        True,
        "kbgen/probes/builtin/gpu.py",
    ),
    "compat": ProbeInfo(
        "compat",
        "Build matches GPU",
        "Arch list against the GPU.",
        ["torch"],
        30.0,
        True,
        True,
        "kbgen/probes/builtin/compat.py",
    ),
    "cuda-smoke": ProbeInfo(
        "cuda-smoke",
        "CUDA smoke test",
        "A matmul and a synchronize.",
        ["cuda"],
        60.0,
        False,
        True,
        "kbgen/probes/builtin/cuda_smoke.py",
    ),
    "label-range": ProbeInfo(
        "label-range",
        "Label range of a saved batch",
        "Loads batch.pt.",
        [],
        30.0,
        False,
        False,
        "kb/probes/label-range.py",
    ),
}


@pytest.fixture
def site(tmp_path: Path) -> SiteData:
    project = Project(make_site_project(tmp_path, site_config=False))
    kb = load_kb(project)
    assert kb.problems == []
    return SiteData(kb, TODAY, PROBES)


@pytest.fixture
def env() -> object:
    return render.make_environment(templating.template_dirs(None))


def check_golden(request: pytest.FixtureRequest, name: str, text: str) -> None:
    path = GOLDEN / name
    if request.config.getoption("--update-golden"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"{path} missing: run pytest with --update-golden once"
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from its golden file"


@pytest.mark.parametrize(
    ("name", "make"),
    [
        ("home.md", lambda env, site: render.render_home(env, site)),
        ("bugs-index.md", lambda env, site: render.render_bug_index(env, site)),
        ("bug-filled.md", lambda env, site: render.render_bug(env, site, "BUG-20251109-002")),
        ("bug-hostile.md", lambda env, site: render.render_bug(env, site, "BUG-20251112-014")),
        ("errors-index.md", lambda env, site: render.render_error_index(env, site)),
        ("error.md", lambda env, site: render.render_error(env, site, "cuda-illegal-memory-access")),
        ("causes-index.md", lambda env, site: render.render_cause_index(env, site)),
        ("cause.md", lambda env, site: render.render_cause(env, site, "out-of-range-index")),
        ("fixes-index.md", lambda env, site: render.render_fix_index(env, site)),
        ("fix.md", lambda env, site: render.render_fix(env, site, "reinstall-wheel")),
        ("probes.md", lambda env, site: render.render_probes(env, site)),
        ("tags.md", lambda env, site: render.render_tags(env, site)),
    ],
)
def test_page_matches_golden(
    request: pytest.FixtureRequest, env: object, site: SiteData, name: str, make: object
) -> None:
    check_golden(request, name, make(env, site))  # type: ignore[operator]


def to_html(text: str) -> str:
    """The page as the site's Markdown extensions render it (frontmatter dropped)."""
    if text.startswith("---\n"):
        text = text.split("\n---\n", 1)[1]
    extensions = [
        "admonition",
        "attr_list",
        "md_in_html",
        "tables",
        "toc",
        "pymdownx.superfences",
        "pymdownx.tabbed",
        "pymdownx.tasklist",
        "pymdownx.details",
    ]
    return markdown.markdown(text, extensions=extensions)


def test_hostile_bug_text_stays_text(env: object, site: SiteData) -> None:
    html = to_html(render.render_bug(env, site, "BUG-20251112-014"))  # type: ignore[arg-type]
    # the title, message and body show what was typed, as text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script" not in html and "<img" not in html and "<b>" not in html
    assert "{{ 7 * 7 }}" in html and "49" not in html
    assert "{% raw %} {{ config }} {% endraw %} &lt;img src=x onerror=alert(2)&gt;" in html
    assert "&lt;b&gt;raw HTML&lt;/b&gt;" in html
    # a script link in the body is disarmed
    assert "javascript:" not in html and 'href="about:blank"' in html


def test_message_fence_is_longer_than_any_backtick_run_inside(env: object, site: SiteData) -> None:
    text = render.render_bug(env, site, "BUG-20251112-014")  # type: ignore[arg-type]
    assert "`````text\n{% raw %}" in text
    html = to_html(text)
    assert "```` four backticks inside" in html
    assert '<h2 id="failing-machine">Failing machine</h2>' in html  # the fence closed where it should


def test_body_comments_dropped_and_headings_nested(env: object, site: SiteData) -> None:
    html = to_html(render.render_bug(env, site, "BUG-20251109-002"))  # type: ignore[arg-type]
    assert "guidance a person never filled in" not in html
    assert '<h3 id="what-happened">What happened</h3>' in html
    assert "# &lt;-- here" in html  # code in the body stays code


def test_page_metadata_is_safe_for_the_theme(env: object, site: SiteData) -> None:
    # the theme prints tag names and titles from the metadata without escaping them
    meta = render.render_bug(env, site, "BUG-20251112-014").split("\n---\n")[0]  # type: ignore[arg-type]
    assert '\ntags: ["bbold/b", "wsl2"]' in meta
    assert '\ntitle: "BUG-20251112-014: &lt;script&gt;alert(1)&lt;/script&gt; {{ 7 * 7 }} | pipes' in meta


def test_project_template_overrides_the_packaged_one(tmp_path: Path, site: SiteData) -> None:
    write_tree(
        tmp_path / "custom", {"templates/page-tags.md.j2": "# Our tags\n\n{{ site.bugs | length }} bugs\n"}
    )
    env = render.make_environment(templating.template_dirs(tmp_path / "custom"))
    assert render.render_tags(env, site) == "# Our tags\n\n3 bugs\n"
    # the other templates still come from kbgen
    assert "\n# Bugs\n\n3 bugs, 2 open." in render.render_bug_index(env, site)


def test_template_syntax_error_names_file_and_line(tmp_path: Path, site: SiteData) -> None:
    write_tree(tmp_path, {"templates/page-fix.md.j2": "# {{ fix.title }}\n\n{% if fix.risk %}\nno end\n"})
    env = render.make_environment(templating.template_dirs(tmp_path))
    with pytest.raises(TemplateError) as caught:
        render.render_fix(env, site, "clamp-labels")
    assert str(caught.value).startswith(
        f"{tmp_path / 'templates/page-fix.md.j2'}:4: Unexpected end of template."
    )


def test_template_runtime_error_names_file_and_line(tmp_path: Path, site: SiteData) -> None:
    write_tree(tmp_path, {"templates/page-fix.md.j2": "# {{ fix.title }}\n\n{{ fix.no_such_field }}\n"})
    env = render.make_environment(templating.template_dirs(tmp_path))
    with pytest.raises(TemplateError) as caught:
        render.render_fix(env, site, "clamp-labels")
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'templates/page-fix.md.j2'}:3: ")
    assert "no_such_field" in message and "while rendering fixes/clamp-labels.md" in message


def test_unchanged_entries_are_not_rendered_again(tmp_path: Path, env: object) -> None:
    project = Project(make_site_project(tmp_path, site_config=False))
    cache = pages.PageCache()
    first = pages.generate(SiteData(load_kb(project), TODAY, PROBES), env, cache)  # type: ignore[arg-type]
    assert (cache.hits, cache.misses) == (0, len(first))
    # a bug's title changes: its page, the pages listing it and its related bug's page change
    bug = tmp_path / "kb/bugs/BUG-20251020-001.md"
    bug.write_text(bug.read_text().replace("in the embedding", "in the embedding layer"))
    second = pages.generate(SiteData(load_kb(project), TODAY, PROBES), env, cache)  # type: ignore[arg-type]
    changed = sorted(new.uri for old, new in zip(first, second, strict=True) if old.text != new.text)
    assert changed == [
        "bugs/BUG-20251020-001.md",
        "bugs/index.md",
        "causes/out-of-range-index.md",
        "errors/cuda-device-side-assert.md",
        "index.md",
    ]
    # the pages of records the change does not touch come from the cache
    assert cache.hits == 5  # the other two bugs, the other error type, cause and fix


def test_multiline_command_stays_inside_its_step(tmp_path: Path, env: object) -> None:
    fix = """\
---
id: two-steps
title: Two steps
summary: A command with a blank line in it.
steps:
  - title: First
    command: |
      echo one

      echo two
  - title: Second
    command: echo three
---
"""
    project = Project(write_tree(tmp_path, {"kb/fixes/two-steps.md": fix}))
    site = SiteData(load_kb(project), TODAY, PROBES)
    html = to_html(render.render_fix(env, site, "two-steps"))  # type: ignore[arg-type]
    steps = html.split('<h2 id="steps">Steps</h2>')[1].split("<h2")[0]
    assert steps.count("<li>") == 2 and steps.count("<pre>") == 2
    assert "echo one\n\necho two" in re.sub(r"<[^>]+>", "", steps)
