"""`kbgen serve` after an edit: every page the cached rebuild serves equals a fresh full build.

The rebuild keeps parsed files, their checks and rendered pages between builds and redoes only
what an edit reaches, as the links between records (kbgen.links) say. Random edits of random
records of every kind (a title, a link moved to another record, a new file, a deleted file, a
file made invalid and then fixed) must never leave it serving a stale page or a stale verdict.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbgen import layers, templating
from kbgen.errors import EntryError
from kbgen.kinds import KINDS
from kbgen.links import FROM
from kbgen.site import pages, render
from kbgen.store import Project
from site_kb import make_site_project

TODAY = dt.date(2025, 11, 21)
ACTIONS = ("retitle", "relink", "relink", "add", "delete", "break")


class Live:
    """The caches a running `kbgen serve` keeps, and a clock that makes every write a new stamp."""

    def __init__(self, root: Path) -> None:
        self.project = Project(root)
        self.env = self.environment()  # the server's, kept across rebuilds (row memo included)
        self.entries = pages.EntryCache()
        self.pages = pages.PageCache()
        self.tick = 1_700_000_000_000_000_000

    def environment(self) -> Any:
        # as the site plugin makes it: big HTML tables lifted out of Markdown, rows memoised
        return render.make_environment(templating.template_dirs(self.project.root), html_nonce="n0nce")

    def write(self, path: Path, text: str) -> None:
        path.write_text(text, encoding="utf-8")
        self.tick += 1_000_000  # an editor saves a millisecond apart at the least
        os.utime(path, ns=(self.tick, self.tick))

    def build(self, cached: bool) -> tuple[str, dict[str, str], list[str]]:
        """("ok" or the errors, every page by uri, the warnings) of a cached or a fresh build."""
        try:
            site, warnings = pages.load_site(
                self.project, today=TODAY, cache=self.entries if cached else None
            )
        except EntryError as exc:
            return str(exc), {}, []
        if cached:
            made = pages.generate(site, self.env, self.pages)
        else:
            made = pages.generate(site, self.environment(), pages.PageCache())
        return "ok", {p.uri: p.text for p in made}, [w.format() for w in warnings]


def records(root: Path, kind: str) -> list[Path]:
    return sorted((root / "kb" / KINDS[kind].folder).glob("*.md"))


def split(text: str) -> tuple[dict[str, Any], str]:
    _, front, body = text.split("---\n", 2)
    return yaml.safe_load(front), body


def join(data: dict[str, Any], body: str) -> str:
    return f"---\n{yaml.safe_dump(data, sort_keys=False, allow_unicode=True)}---\n{body}"


def relink(root: Path, kind: str, data: dict[str, Any], pick: int, other: int) -> None:
    """Point one link field of ``data`` (a record of ``kind``) at another record of its target kind."""
    choices = [link for link in FROM.get(kind, ()) if link.target in KINDS]
    if not choices:
        return
    link = choices[pick % len(choices)]
    targets = [p.stem for p in records(root, link.target)]
    if link.target == "bug":  # a bug file may carry a title tail after its id
        targets = [split(p.read_text(encoding="utf-8"))[0]["id"] for p in records(root, "bug")]
    if not targets:
        return
    target = targets[other % len(targets)]
    parts = link.path.split(".")
    field = parts[0].removesuffix("[]")
    if len(parts) == 1 and not parts[0].endswith("[]"):
        data[field] = target
    elif len(parts) == 1:
        data[field] = [*data.get(field, [])[: other % 2], target]
    elif data.get(field):
        data[field][other % len(data[field])][parts[1]] = target


def edit(live: Live, root: Path, step: tuple[str, str, int, int]) -> Path | None:
    """Apply one edit; for "break", return the file to restore after the broken build."""
    action, kind, pick, other = step
    files = records(root, kind)
    if not files:
        return None
    path = files[pick % len(files)]
    text = path.read_text(encoding="utf-8")
    data, body = split(text)
    if action == "retitle":
        data["title"] = f"Edited {pick} {other}"
    elif action == "relink":
        relink(root, kind, data, pick, other)
    elif action == "add":
        new_id = f"BUG-20251130-{100 + other % 800:03d}" if kind == "bug" else f"added-{other % 50}"
        data["id"] = new_id
        live.write(path.with_name(f"{new_id}.md"), join(data, body))
        return None
    elif action == "delete":
        path.unlink()
        return None
    else:
        live.write(path, text.replace("---\n", "---\ntitle: [unclosed\n", 1))
        return path
    live.write(path, join(data, body))
    return None


steps = st.lists(
    st.tuples(
        st.sampled_from(ACTIONS),
        st.sampled_from(sorted(KINDS)),
        st.integers(0, 20),
        st.integers(0, 1000),
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=steps)
def test_cached_rebuild_serves_what_a_fresh_build_would(
    tmp_path_factory: Any, monkeypatch: Any, steps: list[Any]
) -> None:
    monkeypatch.setenv(layers.BASE_ENV, "off")  # the fixture KB alone: a fresh build in a blink
    root = make_site_project(tmp_path_factory.mktemp("kb"), site_config=False)
    live = Live(root)
    assert live.build(cached=True)[0] == "ok"
    for step in steps:
        broken = edit(live, root, step)
        cached, fresh = live.build(cached=True), live.build(cached=False)
        assert cached == fresh, f"after {step}"
        if broken is not None:  # made invalid: the build fails; fixed: it serves the pages again
            assert cached[0] != "ok"
            live.write(broken, broken.read_text(encoding="utf-8").replace("title: [unclosed\n", "", 1))
            assert live.build(cached=True) == live.build(cached=False), f"after fixing {step}"
