"""Text people wrote (a bug's title and body, often brought in by `kbgen import`) reaches a page as
text: it makes no image, no link of its own making, no script, no attribute, and kbgen's raw-HTML
blocks (rawhtml.py) are lifted only from what kbgen's own templates wrote.

A build test puts such bugs through `mkdocs build` with the kbgen plugin and reads the pages. A
property test renders one bug page per example the way the plugin does (its own on_files,
on_page_markdown and on_page_content around the site's Markdown), and the way `kbgen build-pages`
writes it for an engine without the plugin (no sanitizer at all), and reads the HTML of both.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import markdown
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mkdocs.config import load_config
from mkdocs.structure.files import Files
from mkdocs.utils.meta import get_data

from conftest import invoke, kbgen, write_tree
from kbgen import templating
from kbgen.site import pages, render
from kbgen.site.sanitize import _ATTRIBUTES, _EVERYWHERE, _TAGS
from kbgen.store import find_project
from site_kb import TODAY, make_site_project, mkdocs_build, site_kb_files
from test_site_sanitize import dangers, hostile_bug

TRACKER = "https://tracker.example/pixel.gif"
EVIL = "https://evil.example/login"

# What `kbgen import` brings in from a report someone filed.
IMPORTED_REPORT = f"""\
# Loader hangs x](<img src={TRACKER}>

## Error message

```
RuntimeError: CUDA error: an illegal memory access was encountered
```

## Steps to reproduce

Open the notebook x](<img src={TRACKER}>

Then press x](<a href={EVIL} class=md-button>

## What I expected

Nothing links here.
"""

# A body that wraps its own text in the marker of kbgen's lifted HTML blocks.
LIFT_FROM_BODY = (
    f"x](\n<!-- kbgen:html -->\n```\n<img src={TRACKER}>\n```\nx](\n<!-- /kbgen:html -->\n\nAfter.\n"
)
# The same marker lines shown in a code block, as a person quoting a page's source would.
MARKER_IN_FENCE = (
    f"Before.\n\n```html\n<!-- kbgen:html -->\n<img src={TRACKER}>\n<!-- /kbgen:html -->\n```\n\nAfter.\n"
)

#: what stands for a lifted block between Markdown and its return (rawhtml.Lifted)
PLACEHOLDER = r"kbgenhtml[0-9a-f]{16}x"


class Outline(HTMLParser):
    """A page's tags and attributes, its text, the text of its code blocks, and which headings
    sit inside a link."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text = ""
        self.code: list[str] = []
        self.linked_headings: list[str] = []
        self._open_links = 0
        self._in_pre = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "a":
            self._open_links += 1
        elif tag == "pre":
            self._in_pre = True
            self.code.append("")
        elif re.fullmatch(r"h[1-6]", tag) and self._open_links:
            self.linked_headings.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a":
            self._open_links = max(0, self._open_links - 1)
        elif tag == "pre":
            self._in_pre = False

    def handle_data(self, data: str) -> None:
        self.text += data
        if self._in_pre:
            self.code[-1] += data


def outline(page: str) -> Outline:
    parsed = Outline()
    parsed.feed(page)
    parsed.close()
    return parsed


def article(page: str) -> str:
    found = re.search(r"<article[^>]*>([\s\S]*)</article>", page)
    assert found is not None
    return found.group(1)


# --------------------------------------------------------------------------- a whole build


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    files = site_kb_files()
    files["kb/bugs/BUG-20251114-001.md"] = hostile_bug("BUG-20251114-001", LIFT_FROM_BODY)
    files["kb/bugs/BUG-20251114-002.md"] = hostile_bug("BUG-20251114-002", MARKER_IN_FENCE)
    project = make_site_project(tmp_path_factory.mktemp("user-text"), files)
    with pytest.MonkeyPatch.context() as patch:
        write_tree(project, {"report.md": IMPORTED_REPORT})
        patch.chdir(project)
        result = invoke("import", "report.md", KBGEN_NOW="2025-11-20T10:00:00+00:00")
        assert result.exit_code == 0, result.output
    result = mkdocs_build(project, "--no-strict")  # the hostile links point nowhere: warnings
    assert result.returncode == 0, result.stderr
    yield project / "site"


def bug_page(site: Path, bug_id: str) -> str:
    return article((site / "bugs" / bug_id / "index.html").read_text(encoding="utf-8"))


def test_an_angle_bracket_link_destination_makes_no_image_or_link(built: Path) -> None:
    page = bug_page(built, "BUG-20251120-001")
    parsed = outline(page)
    assert [tag for tag, _ in parsed.tags if tag == "img"] == []
    hrefs = [attrs.get("href") or "" for tag, attrs in parsed.tags if tag == "a"]
    assert not [href for href in hrefs if "tracker.example" in href or "evil.example" in href]
    assert not [attrs for _, attrs in parsed.tags if "md-button" in (attrs.get("class") or "")]
    assert parsed.linked_headings == []  # the next heading is not swallowed by an open link
    # what the person wrote is shown, as text
    assert f"Open the notebook x](<img src={TRACKER}>" in parsed.text
    assert f"Then press x](<a href={EVIL} class=md-button>" in parsed.text
    assert f"Loader hangs x](<img src={TRACKER}>" in parsed.text


def test_a_body_cannot_lift_its_own_html_past_markdown(built: Path) -> None:
    page = bug_page(built, "BUG-20251114-001")
    parsed = outline(page)
    assert [tag for tag, _ in parsed.tags if tag == "img"] == []
    assert not re.search(PLACEHOLDER, page)  # no placeholder of a lifted block is left over
    assert f"<img src={TRACKER}>\n" in parsed.code  # the code block is a code block
    assert "After." in parsed.text


def test_marker_lines_in_a_code_block_stay_in_it(built: Path) -> None:
    page = bug_page(built, "BUG-20251114-002")
    parsed = outline(page)
    assert not re.search(PLACEHOLDER, page)
    assert f"<!-- kbgen:html -->\n<img src={TRACKER}>\n<!-- /kbgen:html -->\n" in parsed.code
    assert "Before." in parsed.text and "After." in parsed.text
    # kbgen's own table is still lifted: the bug index has its rows and no leftover marker
    index = (built / "bugs" / "index.html").read_text(encoding="utf-8")
    assert not re.search(PLACEHOLDER, index) and "kbgen:html" not in index
    assert index.count("<tr>") == len(list((built / "bugs").glob("BUG-*/index.html"))) + 1


def test_a_body_of_unclosed_backtick_runs_is_written_at_once(tmp_path: Path) -> None:
    """Runs of backticks of many lengths, none closed: each used to be tried against the rest of
    the text, a backtick count at a time (minutes for a few kilobytes). kbgen's helper fails the
    test on a hang."""
    runs = " ".join("`" * n for n in range(1, 300))  # 45 kB
    body = f"{runs}\n\n<b>after</b>\n"
    files = {"kb/bugs/BUG-20251114-003.md": hostile_bug("BUG-20251114-003", body)}
    project = make_site_project(tmp_path / "project", files, site_config=False)
    result = kbgen("build-pages", str(tmp_path / "pages"), cwd=project, env={"KBGEN_NOW": TODAY})
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "pages" / "bugs" / "BUG-20251114-003.md").read_text(encoding="utf-8")
    assert "&lt;b>after" in page and "\\`" * 299 in page


# --------------------------------------------------------------------------- one page per example


class OnePage:
    """The page of one bug, rendered through the kbgen plugin's own hooks as `mkdocs build` runs
    them, and as `kbgen build-pages` writes it for an engine without the plugin."""

    BUG = "BUG-20251201-001"

    def __init__(self, root: Path) -> None:
        self.root = make_site_project(root, {"kb/bugs/.keep": ""})
        self.config = load_config(config_file=str(self.root / "mkdocs.yml"))
        self.plugin: Any = self.config.plugins["kbgen"]
        self.plugin.on_config(self.config)
        self.config.plugins._current_plugin = "kbgen"  # as mkdocs sets it while the plugin's hooks run
        self.env = render.make_environment(templating.template_dirs(self.root))
        self.md = markdown.Markdown(
            extensions=self.config.markdown_extensions, extension_configs=self.config.mdx_configs
        )

    def write(self, title: str, body: str) -> None:
        head = {
            "id": self.BUG,
            "title": title,
            "created": "2025-12-01T10:00:00+00:00",
            "updated": "2025-12-01T10:00:00+00:00",
            "status": "open",
            "severity": "high",
        }
        text = "---\n" + "".join(f"{k}: {json.dumps(v)}\n" for k, v in head.items()) + "---\n" + body
        (self.root / "kb" / "bugs" / f"{self.BUG}.md").write_bytes(text.encode("utf-8"))

    def _markdown(self, text: str) -> str:
        self.md.reset()
        return str(self.md.convert(text))

    def with_plugin(self) -> str:
        files = self.plugin.on_files(Files([]), config=self.config)
        file = files.get_file_from_path(f"bugs/{self.BUG}.md")
        page = SimpleNamespace(file=file)
        hooks = {"page": page, "config": self.config, "files": files}
        text = self.plugin.on_page_markdown(get_data(file.content_string)[0], **hooks)  # as mkdocs: no meta
        return str(self.plugin.on_page_content(self._markdown(text), **hooks))

    def without_plugin(self) -> str:
        """The page as `kbgen build-pages` writes it (render_bug is what pages.generate calls for
        it), made HTML by the site's Markdown alone."""
        project = find_project(self.root)
        site, _ = pages.load_site(project, today=dt.date.fromisoformat(TODAY[:10]))
        return self._markdown(get_data(render.render_bug(self.env, site, self.BUG))[0])


# Every attribute a page may carry on each element: the site's own allow-list (sanitize.py).
def _allowed(tag: str, name: str) -> bool:
    return name in _EVERYWHERE or name in _ATTRIBUTES["*"] or name in _ATTRIBUTES.get(tag, set())


def foreign(page: str) -> list[str]:
    """What in ``page`` no template of the site makes and no Markdown a person writes may make:
    an image, an element or attribute outside the allow-list, a handler, a script URL, a
    left-over placeholder of a lifted block."""
    found = dangers(page)
    for tag, attrs in outline(page).tags:
        if tag == "img" or tag not in _TAGS:
            found.append(f"<{tag}>")
        found += [f"<{tag} {n}>" for n in attrs if not (n.startswith("data-") or _allowed(tag, n))]
    if re.search(PLACEHOLDER, page) or re.search(r"<!-- /?kbgen:html", page):
        found.append("a lifted block's marker or placeholder")
    return found


FRAGMENTS = [
    "<",
    ">",
    "](",
    "](<",
    "[",
    "]",
    "(",
    ")",
    "!",
    "`",
    "``",
    "```",
    "\\",
    "{",
    "}",
    ": ",
    "\n",
    "\n\n",
    "    ",
    "- ",
    "> ",
    "# ",
    "x",
    "text ",
    "<!--",
    "-->",
    "<!-- kbgen:html -->\n",
    "<!-- /kbgen:html -->\n",
    "javascript:alert(1)",
    "java\nscript:alert(2)",
    f"<img src={TRACKER}>",
    "<img src=x onerror=alert(3)>",
    f"<a href={EVIL} class=md-button>",
    "[r]: ",
    "[r]",
    "[go][r]",
    "![i](",
    TRACKER,
    "&#106;",
    "&lt;",
    "{: onclick=alert(4) }",
]
hostile_text = st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=14).map("".join)
one_line = hostile_text.map(lambda t: " ".join(t.split())[:300]).filter(bool)


@pytest.fixture(scope="module")
def one_page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OnePage]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KBGEN_NOW", TODAY)
        patch.setenv("KBGEN_BASE", "off")
        yield OnePage(tmp_path_factory.mktemp("one-page"))


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(title=one_line, body=hostile_text)
def test_a_bug_page_holds_only_what_the_templates_make(one_page: OnePage, title: str, body: str) -> None:
    one_page.write(title, body)
    with_plugin = one_page.with_plugin()
    assert foreign(with_plugin) == [], (title, body)
    assert outline(with_plugin).linked_headings == [], (title, body)
    without_plugin = one_page.without_plugin()
    assert foreign(without_plugin) == [], (title, body)
