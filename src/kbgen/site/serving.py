"""What ``kbgen serve`` keeps from one rebuild to the next, so that a save costs what it changed.

mkdocs' dirty reload (``mkdocs serve --dirty``) renders again only the pages whose source file is
newer than their HTML, but it still makes a new File and Page for every page of the site on every
rebuild, and what it did not render it knows nothing of: the navigation then shows no title for a
page that was not read again (the error types in the sidebar of every rebuilt page), and the
theme's tag index and ``tags.json`` hold only the pages just rebuilt.

While serving with dirty reload the plugin keeps instead:

- one :class:`PageFile` per generated page, and with it the page mkdocs made of it, read and
  rendered the last time its text changed: a page whose text did not change is not read,
  rendered or written again, yet keeps its title, metadata and tags for the others;
- for hand-written pages of docs/ (new objects each build), what the last reading found, given
  back to a page that mkdocs does not read again (:func:`carry_over`);
- what the theme's plugins (tags, search) made of the pages not built again
  (:mod:`kbgen.site.themeplugins`);
- the objects of the first build out of Python's full garbage collections (:class:`Collector`).

A change of mkdocs.yml (or of the day, which pages carry as their date) drops what was kept: every
page is rebuilt once.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import stat
import threading
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files, InclusionLevel
from mkdocs.structure.pages import Page as MkPage
from mkdocs.utils import get_build_date

#: what a page keeps of its last reading and rendering (mkdocs.structure.pages.Page)
_READ_STATE = ("markdown", "meta", "content", "toc", "_title_from_render", "links_to_anchors")


class PageFile(File):
    """A generated page's file that knows whether its page changed since it was last built."""

    built: str | None = None  # the text of the page as last built, None before
    forced = False  # rebuild whatever the text (the navigation of every page changed)
    asked = InclusionLevel.UNDEFINED  # the inclusion the plugin gave it (mkdocs settles UNDEFINED)

    def is_modified(self) -> bool:
        return self.forced or self._content is None or self._content != self.built


class KeptFiles:
    """The generated pages' files, by src uri, kept from one build to the next."""

    def __init__(self) -> None:
        self.files: dict[str, PageFile] = {}
        self.key: tuple[Any, ...] | None = None
        self.fresh_key = False  # the last ``start`` dropped what was kept

    def start(self, config: MkDocsConfig) -> None:
        """Begin a build: drop everything kept when the configuration or the day changed."""
        key = _config_key(config)
        self.fresh_key = key != self.key
        if self.fresh_key:
            self.files = {}
            self.key = key

    def file(
        self, config: MkDocsConfig, uri: str, text: str, level: InclusionLevel, edit_uri: str | None
    ) -> PageFile:
        """The file of the page at ``uri``: the one kept, its text updated, or a new one."""
        kept = self.files.get(uri)
        if kept is None or kept.asked != level or kept.edit_uri != edit_uri:
            made = PageFile.generated(config, uri, content=text, inclusion=level)
            assert isinstance(made, PageFile)
            made.asked, made.edit_uri = level, edit_uri
            kept = self.files[uri] = made
        elif kept._content is not text:
            kept.content_string = text
        page = kept.page
        if page is not None:  # placed in the navigation again by this build, if in it
            page.parent = page.previous_page = page.next_page = None
        return kept

    def keep_only(self, uris: set[str]) -> list[PageFile]:
        """Forget the pages not made this time; returns their files."""
        gone = [file for uri, file in self.files.items() if uri not in uris]
        self.files = {uri: file for uri, file in self.files.items() if uri in uris}
        return gone

    def force_all(self) -> None:
        for file in self.files.values():
            file.forced = True

    def built(self) -> None:
        """The build finished: every page is now as its text says."""
        for file in self.files.values():
            file.built = file._content if isinstance(file._content, str) else None
            file.forced = False


def _config_key(config: MkDocsConfig) -> tuple[Any, ...]:
    path = config.config_file_path
    digest = ""
    if path:
        with contextlib.suppress(OSError):
            digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return (
        digest,
        config.site_url,
        config.site_dir,
        config.docs_dir,
        config.use_directory_urls,
        get_build_date(),
    )


def remove_output(file: File, site_dir: str) -> None:
    """Remove the HTML of a page no longer in the site (a deleted record), as a full build would
    not have it; only a regular file inside ``site_dir`` is removed."""
    path = Path(file.abs_dest_path)
    try:
        info = os.lstat(path)
    except OSError:
        return
    if stat.S_ISREG(info.st_mode) and Path(site_dir).resolve() in path.resolve().parents:
        with contextlib.suppress(OSError):
            path.unlink()


def mark_for_rebuild(file: File) -> None:
    """Have mkdocs' dirty build rebuild the page of ``file`` (a page of docs/, or a theme file)."""
    if isinstance(file, PageFile):
        file.forced = True
        return
    with contextlib.suppress(OSError):  # not built yet: mkdocs builds it anyway
        os.utime(file.abs_dest_path, (0, 0))


class DocsPages:
    """What mkdocs read of each page of docs/ the last time, for the pages it does not read again."""

    def __init__(self) -> None:
        self.pages: dict[str, MkPage] = {}

    def carry_over(self, files: Files) -> None:
        """Give a page of docs/ that this dirty build will not read what the last reading found
        (its title, shown in the navigation; its metadata and tags)."""
        current: dict[str, MkPage] = {}
        for file in files.documentation_pages(inclusion=InclusionLevel.is_in_serve):
            page = file.page
            if page is None or isinstance(file, PageFile):
                continue
            current[file.src_uri] = page
            before = self.pages.get(file.src_uri)
            if before is not None and before is not page and page.markdown is None and not file.is_modified():
                for name in _READ_STATE:
                    if hasattr(before, name):
                        setattr(page, name, getattr(before, name))
        self.pages = current


def nav_key(items: list[Any]) -> tuple[Any, ...]:
    """What the navigation shows of its entries (as the theme's nav and tabs templates read them):
    titles, addresses, nesting, and the icon, status and subtitle a page's metadata gives."""
    key: list[Any] = []
    for item in items:
        meta = getattr(item, "meta", None) or {}
        shown = tuple(repr(meta.get(name)) for name in ("icon", "status", "subtitle"))
        children = getattr(item, "children", None)
        key.append((type(item).__name__, item.title, getattr(item, "url", None), shown))
        if children:
            key.append(nav_key(children))
    return tuple(key)


class Collector:
    """Python's garbage collection for a server whose first build made over a million objects.

    A full collection walks every object that may hold others: on a KB of 10,000 bugs one
    falling within a rebuild took a second or more of it. After the first build, what it made
    (the records, pages and caches, kept as long as the server runs) is frozen out of the
    collections, and the collector makes no full pass on its own any more; the young objects a
    build makes are still collected as it goes. A moment after each build (unless another one
    has begun) what that build left is collected and frozen in turn; every ``FULL_EVERY`` builds
    everything is looked at again, for cycles among what was frozen that were dropped since.
    """

    QUIET = 0.5  # seconds after a build before its leftovers are collected
    FULL_EVERY = 100
    NO_FULL_PASS = 1 << 30  # collections of the middle generation before a full one: never

    def __init__(self) -> None:
        self.timer: threading.Timer | None = None
        self.builds = 0
        self.thresholds: tuple[int, int, int] | None = None  # as found, while in charge

    def start(self) -> None:
        """After the first build."""
        gc.collect()
        gc.freeze()
        self.thresholds = gc.get_threshold()
        young, middle, _ = self.thresholds
        gc.set_threshold(young, middle, self.NO_FULL_PASS)

    def before_build(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def after_build(self) -> None:
        if self.thresholds is None:
            return
        self.builds += 1
        self.timer = threading.Timer(self.QUIET, self._collect, (self.builds % self.FULL_EVERY == 0,))
        self.timer.daemon = True
        self.timer.start()

    @staticmethod
    def _collect(everything: bool) -> None:
        if everything:
            gc.unfreeze()
        gc.collect()
        gc.freeze()

    def stop(self) -> None:
        self.before_build()
        if self.thresholds is not None:
            gc.set_threshold(*self.thresholds)
            gc.unfreeze()
            self.thresholds = None


class ChangeLog:
    """The files under ``kb/`` that the operating system said changed since the last build, so
    that a rebuild looks (``stat``) only at those: on a KB of 10,000 files the sweep over all of
    them was a tenth of every rebuild.

    Only with the system's watcher (not polling); every ``SWEEP_EVERY`` builds, and after any event
    on a folder (a file added or removed in it, the folder moved, or several changes reported as
    one), every file is looked at again. An event that
    comes in while a build runs asks for one more build, so that no save is left unread when it
    was reported after the build took its list (the server's own watcher asks at the same time,
    so one save is still one build)."""

    SWEEP_EVERY = 50

    def __init__(self, root: Path) -> None:
        self.folder = str(root)
        self.root = self.folder.rstrip(os.sep) + os.sep
        self.lock = threading.Lock()
        self.changed: set[str] = set()
        self.sweep = True  # the first build after the watcher starts looks at everything
        self.builds = 0
        self.now: set[str] | None = None  # this build's list; None: look at every file

    #: the events that are changes (as the server's own watcher takes them): not a file opened
    #: or closed, which every build does to them all
    CHANGES = ("created", "deleted", "modified", "moved")

    def record(self, event: Any) -> bool:
        """Note a change; True when this build may have missed it (its list was taken before)."""
        if event.event_type not in self.CHANGES:
            return False
        paths = [os.fsdecode(p) for p in (event.src_path, getattr(event, "dest_path", "")) if p]
        with self.lock:
            if event.is_directory:  # a folder's own event (macOS may fold its files' into one)
                self.sweep = True
            self.changed.update(paths)
        now = self.now
        return now is not None and not all(p in now for p in paths)

    def begin(self) -> None:
        """At the start of a build: take the list of what changed since the last one."""
        with self.lock:
            changed, sweep = self.changed, self.sweep
            self.changed, self.sweep = set(), False
        self.builds += 1
        self.now = None if sweep or self.builds % self.SWEEP_EVERY == 0 else changed

    def unchanged(self, path: Path) -> bool:
        """Whether ``path`` is a file under ``kb/`` that no event named since the last build."""
        now = self.now
        if now is None:
            return False
        text = str(path)
        return text.startswith(self.root) and text not in now

    def watch(self, server: Any) -> bool:
        """Hear of changes from the live-reload ``server``'s own observer; False where it has
        none this way (then every file is looked at, as without this)."""
        from watchdog.events import FileSystemEventHandler

        observer, cond = getattr(server, "observer", None), getattr(server, "_rebuild_cond", None)
        if observer is None or cond is None or not hasattr(server, "_want_rebuild"):
            return False
        handler = FileSystemEventHandler()

        def heard(event: Any) -> None:
            if self.record(event):  # the build this save started may have taken its list already
                with cond:
                    server._want_rebuild = True
                    cond.notify_all()

        handler.on_any_event = heard  # type: ignore[method-assign]
        type(observer).schedule(observer, handler, self.folder, recursive=True)
        return True
