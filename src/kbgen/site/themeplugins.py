"""What the theme's plugins make of a site under dirty reload (``kbgen serve``).

The theme's tags and search plugins collect what they need from each page as mkdocs reads or
builds it, and write their tag index, ``tags.json`` and search index of what they collected: after
a dirty build, of the pages just rebuilt. Here what they collected of the other pages is kept and
handed back, so that they write what a full build writes; and what they write for the whole site
is made from kept parts where a first build showed that to be the same (:mod:`kbgen.site.serving`
keeps the pages themselves).
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import Files, InclusionLevel
from mkdocs.structure.pages import Page as MkPage

from kbgen.fileio import new_file_mode, replace_file
from kbgen.site.data import TagSection
from kbgen.site.serving import mark_for_rebuild


class TagPlugins:
    """The theme's tags plugins (``material/tags``) under dirty reload.

    Such a plugin collects each page's tags while the page is read, and makes its tag index and
    ``tags.json`` of what it collected: after a dirty build, of the pages just rebuilt. The
    mappings of the pages not read again are put back, in the order a full build makes them; and
    the index pages (those that list tags) are rebuilt whenever another page is, since a rebuilt
    page links its tags to them and a changed title or tag shows there.
    """

    def __init__(self) -> None:
        self.mappings: dict[str, dict[str, Any]] = {}  # plugin name -> page url -> its mapping
        self.listing_uris: set[str] = set()  # src uris of the pages holding a tag index

    @staticmethod
    def _plugins(config: MkDocsConfig) -> list[tuple[str, Any]]:
        found = []
        for name, plugin in config.plugins.items():
            data = getattr(getattr(plugin, "mappings", None), "data", None)
            if type(plugin).__module__.startswith("material.plugins.tags") and isinstance(data, dict):
                found.append((name, plugin))
        return found

    def force_listings(self, files: Files) -> None:
        for uri in self.listing_uris:
            file = files.get_file_from_path(uri)
            if file is not None:
                mark_for_rebuild(file)

    def merge(self, config: MkDocsConfig, files: Files, read: set[str]) -> None:
        """Before the tags plugins make their index: the mappings of every page, the ones of
        pages ``read`` in this build as they made them, the others as kept."""
        for name, plugin in self._plugins(config):
            data: dict[str, Any] = plugin.mappings.data
            made, before = dict(data), self.mappings.get(name, {})
            data.clear()
            for file in files.documentation_pages(inclusion=InclusionLevel.is_in_serve):
                if file.page is None:
                    continue
                url = file.page.url
                mapping = made.get(url) if file.src_uri in read else before.get(url)
                if mapping is not None:
                    data[url] = mapping
            self.mappings[name] = dict(data)

    def remember_listings(self, config: MkDocsConfig) -> None:
        uris = set()
        for _, plugin in self._plugins(config):
            for listing in getattr(getattr(plugin, "listings", None), "data", None) or ():
                page = getattr(listing, "page", None)
                if page is not None:
                    uris.add(page.file.src_uri)
        if uris:  # a build that read no listing page keeps the last ones
            self.listing_uris = uris


class SearchEntries:
    """The theme's search index under dirty reload, which would hold only the pages just rebuilt.

    Every page's entries are kept across builds and the theme is handed the whole set to write,
    in the order of a full build. Each page's entries are kept as JSON too, so writing the index
    does not encode every page again: the index the theme would write is made once and compared,
    and only if it is the same are the later ones made from the kept JSON.
    """

    def __init__(self) -> None:
        self.built: set[str] = set()  # urls of the pages rendered in this build
        self.urls: dict[str, None] = {}  # every page's url, in the order mkdocs builds them
        self.entries: dict[str, list[Any]] = {}  # page url -> its search entries
        self.encoded: dict[str, str] = {}  # page url -> its entries as JSON, comma-separated
        self.trusted: bool | None = None  # whether the index made from self.encoded is the theme's
        self.kept_urls: dict[str, None] = {}  # the urls self.entries was last trimmed to

    def keep_complete(self, config: MkDocsConfig) -> None:
        search = next((p for p in config.plugins.values() if hasattr(p, "search_index_prev")), None)
        index = getattr(search, "search_index", None)
        if search is None or not isinstance(getattr(index, "entries", None), list):
            return
        fresh: dict[str, list[Any]] = {url: [] for url in self.built}
        for entry in index.entries:  # type: ignore[union-attr]
            fresh.setdefault(str(entry.get("location", "")).split("#")[0], []).append(entry)
        if self.urls.keys() != self.kept_urls.keys():  # a page added or gone: its entries too
            self.entries = {url: found for url, found in self.entries.items() if url in self.urls}
            self.encoded = {url: text for url, text in self.encoded.items() if url in self.urls}
            self.kept_urls = self.urls
        self.entries.update(fresh)
        for url, found in fresh.items():
            self.encoded[url] = ",".join(_json(entry) for entry in found)
        if not self.trusted:  # the theme makes the index from its entries (once trusted, from ours)
            index.entries = [entry for url in self.urls for entry in self.entries.get(url, ())]  # type: ignore[union-attr]
        search.search_index_prev = None  # its own merge would drop pages below a rebuilt index page
        self._write_from_kept(index)

    def _write_from_kept(self, index: Any) -> None:
        make = getattr(index, "generate_search_index", None)
        settings = getattr(index, "config", None)
        if make is None or not isinstance(settings, dict) or self.trusted is False:
            return
        try:
            shown = {key: settings[key] for key in ("lang", "separator", "pipeline", "fields")}
        except KeyError:
            return
        parts = (self.encoded[url] for url in self.urls if self.encoded.get(url))
        made = f'{{"config":{_json(shown)},"docs":[{",".join(parts)}]}}'
        if self.trusted is None:
            self.trusted = make(None) == made
        if self.trusted:
            index.generate_search_index = lambda prev: made


def _json(value: Any) -> str:
    """JSON as the theme's search plugin writes its index."""
    return json.dumps(value, separators=(",", ":"), default=str)


class TagsExport:
    """The tags plugins' ``tags.json`` written with one encoding call.

    The plugin streams it through Python's JSON encoder, a tenth of a second on 10,000 tagged
    pages; the same text, made by ``json.dumps``, takes a fraction of that. The first build
    compares the two; only if they are the same does kbgen write it in later builds.
    """

    def __init__(self) -> None:
        self.trusted: bool | None = None
        self.made: dict[str, tuple[Path, str]] = {}  # plugin name -> (path, text), first build
        #: id of a mapping -> (the mapping, its page's url and title, its JSON): a kept page keeps
        #: its mapping object between builds, so its JSON is made once
        self.encoded: dict[int, tuple[Any, str, str, str]] = {}

    def write(self, config: MkDocsConfig) -> None:
        """Before the tags plugins make their index: their export, made here when trusted."""
        to_json = _mapping_to_json()
        if to_json is None or self.trusted is False:
            return
        for name, plugin in TagPlugins._plugins(config):
            settings = plugin.config
            if not (settings.enabled and settings.export):
                continue
            path = Path(os.path.normpath(Path(config.site_dir, settings.export_file)))
            text = '{"mappings": [' + ", ".join(self._encoded(plugin.mappings, to_json)) + "]}"
            if self.trusted:
                path.parent.mkdir(parents=True, exist_ok=True)
                replace_file(path, text.encode("utf-8"), new_file_mode(), durable=False)
                settings.export = False  # this build's settings: written here instead
            else:
                self.made[name] = (path, text)

    def _encoded(self, mappings: Any, to_json: Any) -> list[str]:
        """Each mapping as ``json.dumps`` writes it inside the list (the same text as the whole)."""
        kept, made = self.encoded, []
        fresh: dict[int, tuple[Any, str, str, str]] = {}
        for mapping in mappings:
            item = mapping.item
            found = kept.get(id(mapping))
            if found is None or found[0] is not mapping or found[1] != item.url or found[2] != item.title:
                found = (mapping, item.url, item.title, json.dumps(to_json(mapping)))
            fresh[id(mapping)] = found
            made.append(found[3])
        self.encoded = fresh
        return made

    def check(self) -> None:
        """After the first build: trust what ``write`` made if the plugins wrote the same."""
        if self.trusted is not None or not self.made:
            return
        same = True
        for path, text in self.made.values():
            try:
                same = same and path.read_text(encoding="utf-8") == text
            except (OSError, UnicodeDecodeError):
                same = False
        self.trusted, self.made = same, {}


def _mapping_to_json() -> Any:
    """The tags plugin's own encoding of one mapping (None where this theme has none)."""
    try:
        storage = importlib.import_module("material.plugins.tags.structure.mapping.storage")
    except ImportError:
        return None
    return getattr(storage, "_mapping_to_json", None)


class Sitemap:
    """The theme's sitemap.xml, rendered again only when what it lists changed: each page's
    address, date and kind (a link or a page), and the template's file."""

    NAME = "sitemap.xml"

    def __init__(self) -> None:
        self.key: tuple[Any, ...] | None = None
        self.text: str | None = None
        self.pending: tuple[Any, ...] | None = None

    def template(self, template: Any, files: Files) -> Any:
        """What mkdocs renders: ``template``, or the last rendering when nothing changed."""
        filename = getattr(template, "filename", None)
        try:
            stamp = Path(filename).stat().st_mtime_ns if filename else None
        except OSError:
            stamp = None
        shown = tuple(
            (page.canonical_url, page.abs_url, page.update_date, page.is_link)
            for page in (file.page for file in files.documentation_pages())
            if page is not None
        )
        key = (filename, stamp, shown)
        if key == self.key and self.text is not None:
            return _Rendered(self.text)
        self.pending = key
        return template

    def rendered(self, output: str) -> None:
        if self.pending is not None:
            self.key, self.text, self.pending = self.pending, output, None


class _Rendered:
    """A template that renders what it was given."""

    def __init__(self, text: str) -> None:
        self.text = text

    def render(self, *args: Any, **context: Any) -> str:
        return self.text


#: the marker a tags page leaves for the theme's own listing
THEME_TAGS = "<!-- material/tags"
Sections = Callable[[], list[TagSection]]


def listing_anchors(page: MkPage, sections: Sections) -> None:
    """A team's tags page that leaves the listing to the theme gets its sections' anchors: the
    theme makes them after mkdocs has looked for them, and every tag link would seem broken.
    (The page's own text is read: the theme has put its own headline in place of the marker.)"""
    if page.present_anchor_ids is not None and THEME_TAGS in page.file.content_string:
        page.present_anchor_ids |= {section.anchor for section in sections()}
