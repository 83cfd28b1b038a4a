"""`kbgen serve` (dirty reload) after each kind of edit serves the site a fresh full build makes.

A dirty rebuild reads and renders only the pages whose text changed; every other page keeps what
the builds before made of it. Any page (its HTML, the navigation it shows, the tag index, the
search index, tags.json) that an edit leaves stale, and any page left behind by a deleted
record, makes the served site differ from a full build of the same files: these tests compare
every file of the two after each edit.
"""

from __future__ import annotations

import datetime as dt
import difflib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from site_kb import TODAY, make_site_project

pytestmark = pytest.mark.slow

URL = "http://127.0.0.1:8000/"
#: the builds `mkdocs serve` runs: a first one, then one more per line read
BUILDER = """
import logging, sys
logging.disable(logging.WARNING)
from mkdocs.commands.build import build
from mkdocs.config import load_config
config_file, site_dir, url, dirty = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "dirty"
def config():
    made = load_config(config_file=config_file, site_dir=site_dir)
    made.site_url = url
    return made
first = config()
first.plugins.on_startup(command="serve", dirty=dirty)
build(first, serve_url=url, dirty=dirty)
print("built", flush=True)
for line in sys.stdin:
    build(config(), serve_url=url, dirty=dirty)
    print("built", flush=True)
"""
ENV = {**os.environ, "KBGEN_NOW": TODAY, "NO_MKDOCS_2_WARNING": "1"}


class Served:
    """A site built the way `kbgen serve` builds it, rebuilt on request."""

    def __init__(self, project: Path, site: Path) -> None:
        self.project, self.site = project, site
        command = [sys.executable, "-c", BUILDER, str(project / "mkdocs.yml"), str(site), URL, "dirty"]
        self.proc = subprocess.Popen(
            command, cwd=project, env=ENV, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self._wait()

    def _wait(self) -> None:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line == "built\n", f"the build stopped: {line!r}"

    def rebuild(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("again\n")
        self.proc.stdin.flush()
        self._wait()

    def stop(self) -> None:
        self.proc.communicate(timeout=60)  # closes its input: the builder ends


def full_build(project: Path, site: Path) -> None:
    command = [sys.executable, "-c", BUILDER, str(project / "mkdocs.yml"), str(site), URL, "full"]
    done = subprocess.run(
        command, cwd=project, env=ENV, input="", capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr


def files_of(site: Path) -> dict[str, bytes]:
    return {p.relative_to(site).as_posix(): p.read_bytes() for p in sorted(site.rglob("*")) if p.is_file()}


def assert_same_site(served: Served, tmp_path: Path, after: str) -> None:
    fresh = tmp_path / f"fresh-{after.replace(' ', '-')}"
    full_build(served.project, fresh)
    want, got = files_of(fresh), files_of(served.site)
    assert sorted(got) == sorted(want), f"after {after}: files differ"
    stale = [name for name in want if got[name] != want[name]]
    why = first_difference(want, got, stale) if stale else ""
    assert stale == [], f"after {after}: served pages differ from a full build\n{why}"


def first_difference(want: dict[str, bytes], got: dict[str, bytes], names: list[str]) -> str:
    lines = difflib.unified_diff(
        want[names[0]].decode("utf-8", "replace").splitlines(),
        got[names[0]].decode("utf-8", "replace").splitlines(),
        f"full build: {names[0]}",
        f"served: {names[0]}",
        n=1,
        lineterm="",
    )
    return "\n".join(line[:300] for line in list(lines)[:40])


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    project = make_site_project(tmp_path / "project")
    server = Served(project, tmp_path / "served")
    yield server
    server.stop()


def test_record_edits_reach_every_page_that_shows_them(served: Served, tmp_path: Path) -> None:
    bugs = served.project / "kb/bugs"
    # a bug's title: its page, the bug index, its error type's and causes' pages, the tag index
    retitled = "title: Loss kernel overran"
    edit(bugs / "BUG-20251109-002.md", "title: Illegal memory access in BCE loss", retitled)
    served.rebuild()
    assert "Loss kernel overran" in (served.site / "bugs/index.html").read_text(encoding="utf-8")
    assert_same_site(served, tmp_path, "a retitled bug")
    # a bug moved to another error type, and tagged anew
    edit(bugs / "BUG-20251020-001.md", "error: cuda-device-side-assert", "error: cuda-illegal-memory-access")
    edit(bugs / "BUG-20251020-001.md", "status: fixed", "tags: [embedding]\nstatus: fixed")
    served.rebuild()
    assert_same_site(served, tmp_path, "a bug moved and tagged")
    # an error type's title (its place in the list unchanged): the navigation of every page shows it
    edit(
        served.project / "kb/errors/cuda-device-side-assert.md",
        "title: CUDA device-side assert triggered",
        "title: CUDA device-side assert fired",
    )
    served.rebuild()
    assert_same_site(served, tmp_path, "a retitled error type")
    # an open bug moved to an error type that had none: the navigation marks it as having open bugs
    edit(bugs / "BUG-20251109-002.md", "error: cuda-illegal-memory-access", "error: cuda-device-side-assert")
    served.rebuild()
    assert_same_site(served, tmp_path, "an error type with open bugs")


def test_records_added_deleted_broken_and_fixed(served: Served, tmp_path: Path) -> None:
    bugs = served.project / "kb/bugs"
    added = (bugs / "BUG-20251020-001.md").read_text(encoding="utf-8")
    added = added.replace("id: BUG-20251020-001", "id: BUG-20251121-001").replace("Device", "New device")
    (bugs / "BUG-20251121-001.md").write_text(added, encoding="utf-8")
    served.rebuild()
    assert_same_site(served, tmp_path, "a new bug")
    (bugs / "BUG-20251020-001.md").unlink()
    served.rebuild()
    assert not (served.site / "bugs/BUG-20251020-001/index.html").exists()
    assert_same_site(served, tmp_path, "a deleted bug")
    broken = bugs / "BUG-20251112-014.md"
    edit(broken, "status: ", "status: nonsense\nseverity_typo: ")
    served.rebuild()  # kb/ cannot be published: the last good pages stay
    edit(broken, "status: nonsense\nseverity_typo: ", "status: ")
    served.rebuild()
    assert_same_site(served, tmp_path, "a broken record fixed")


def test_hand_written_pages_templates_and_mkdocs_yml(served: Served, tmp_path: Path) -> None:
    project = served.project
    edit(project / "docs/getting-started.md", "# Getting started", "# Getting started with the KB")
    served.rebuild()
    assert_same_site(served, tmp_path, "an edited page of docs")
    (project / "templates").mkdir(exist_ok=True)
    (project / "templates/page-probes.md.j2").write_text("# Our probes\n", encoding="utf-8")
    served.rebuild()
    assert_same_site(served, tmp_path, "a new template")
    edit(project / "mkdocs.yml", "site_name: GPU failure KB", "site_name: Our GPU failures")
    served.rebuild()
    assert_same_site(served, tmp_path, "an edited mkdocs.yml")


def test_a_rebuild_looks_only_at_the_files_the_watcher_named(tmp_path: Path) -> None:
    """Under the system's watcher a rebuild reads again what an event named, and nothing else
    until a sweep: after a folder event, and every SWEEP_EVERY builds."""
    from types import SimpleNamespace

    from kbgen.site import pages
    from kbgen.site.serving import ChangeLog
    from kbgen.store import Project

    project = make_site_project(tmp_path / "project")
    cache = pages.EntryCache()
    cache.changes = ChangeLog(project / "kb")
    today = dt.date(2025, 11, 21)

    def titles() -> dict[str, str]:
        site, _ = pages.load_site(Project(project), today=today, cache=cache)
        return {bug_id: bug.title for bug_id, bug in site.bugs.items()}

    def event(path: Path, kind: str = "modified", folder: bool = False) -> SimpleNamespace:
        return SimpleNamespace(event_type=kind, is_directory=folder, src_path=str(path), dest_path="")

    first = titles()  # the first build looks at everything
    bug = project / "kb" / "bugs" / "BUG-20251020-001.md"
    other = project / "kb" / "bugs" / "BUG-20251109-002.md"
    for path, old in ((bug, first["BUG-20251020-001"]), (other, first["BUG-20251109-002"])):
        path.write_text(path.read_text().replace(f"title: {old}", f"title: {old} (edited)", 1))
    cache.changes.record(event(bug))
    cache.changes.record(event(bug, "opened"))  # a read is no change
    seen = titles()
    assert seen["BUG-20251020-001"].endswith("(edited)")  # named by an event: read again
    assert seen["BUG-20251109-002"] == first["BUG-20251109-002"]  # no event yet: not looked at
    cache.changes.record(event(project / "kb" / "bugs", "modified", folder=True))
    assert titles()["BUG-20251109-002"].endswith("(edited)")  # any folder event: everything again
