"""Every generated page of a KB, rendered once per change, and a writer for a pages folder.

A page is rendered again only when something it shows changed: its cache key is the digest of
the templates plus the content digests of every record the page draws on. The mkdocs plugin and
``kbgen build-pages`` share this; the writer rewrites a file only when its text changed, so a
file's modification time says when its page last changed.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
import yaml

from kbgen import templating
from kbgen.errors import EntryError, KbgenError, Problem
from kbgen.kinds import BUG, KINDS, R, RecordKind
from kbgen.links import RefMemo
from kbgen.site import render
from kbgen.site.data import (
    BUGS,
    CAUSES,
    ERRORS,
    FIXES,
    HOME,
    PROBES,
    STALE_DAYS,
    TAGS,
    ProbeInfo,
    SiteData,
    page_uri,
)
from kbgen.site.output import folder_files
from kbgen.store import Entry, Project, load_kb, read_entry

if TYPE_CHECKING:
    from kbgen.probes.discovery import ProbeSpec
    from kbgen.validate import CheckMemo


@dataclass(frozen=True)
class Page:
    """One generated page: where it goes, its Markdown, and the kb/ file it shows (if one)."""

    uri: str
    text: str
    source: str | None = None
    kind: str = "index"
    title: str = ""


# --------------------------------------------------------------------------- loading


def probe_catalogue(project: Project, specs: list[ProbeSpec]) -> dict[str, ProbeInfo]:
    """Built-in and project probes by id, as the catalogue page shows them."""
    found = {}
    for spec in specs:
        meta = spec.meta
        where = f"kbgen/probes/builtin/{spec.path.name}" if spec.builtin else project.rel(spec.path)
        found[meta.id] = ProbeInfo(
            meta.id,
            meta.title,
            meta.description,
            list(meta.needs),
            meta.timeout,
            meta.default,
            spec.builtin,
            where,
        )
    return found


class EntryCache:
    """Entries of files that did not change since they were read (same size, times and inode),
    and what the checks found in them."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, Path], tuple[tuple[int, ...], Entry[Any]]] = {}
        self.checks: CheckMemo | None = None  # what the checks found in those entries
        self.refs = RefMemo()  # the ids their records name
        self.tags: dict[int, Any] = {}  # their tags (SiteData.tag_memo)
        self.changes: Any = None  # while serving: what the file watcher reported (serving.ChangeLog)

    def read(self, path: Path, kind: RecordKind[R], project: Project) -> Entry[R]:
        if self.changes is not None and self.changes.unchanged(path):
            known = self.entries.get((kind.name, path))
            if known is not None:
                return known[1]
        try:
            st = path.stat()
            stamp: tuple[int, ...] = (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
        except OSError:
            return read_entry(path, kind, project)  # reports the problem with file and line
        known = self.entries.get((kind.name, path))
        if known is not None and known[0] == stamp:
            return known[1]
        entry = read_entry(path, kind, project)  # a broken file raises and is not remembered
        self.entries[(kind.name, path)] = (stamp, entry)
        return entry


def load_site(
    project: Project, *, today: dt.date, stale_days: int = STALE_DAYS, cache: EntryCache | None = None
) -> tuple[SiteData, list[Problem]]:
    """Load and check the KB; raise EntryError listing every error, return the warnings."""
    from kbgen.probes.discovery import scan
    from kbgen.validate import CheckMemo, validate_kb

    if cache is not None and cache.changes is not None:
        cache.changes.begin()
    kb = load_kb(project, cache.read if cache is not None else None)
    scanned = scan(project)  # the probe files, read once: for the checks and for the catalogue
    if cache is not None and cache.checks is None:
        cache.checks = CheckMemo()
    problems = validate_kb(kb, scanned, cache.checks if cache is not None else None)
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        raise EntryError(errors, hint="`kbgen validate` lists the same problems")
    memo = cache.refs if cache is not None else RefMemo()
    site = SiteData(
        kb,
        today,
        probe_catalogue(project, scanned[0]),
        stale_days,
        refs=memo,
        tag_memo=cache.tags if cache else {},
    )
    return site, [p for p in problems if p.severity != "error"]


# --------------------------------------------------------------------------- rendering

Renderer = Callable[..., str]


@dataclass
class PageCache:
    """Rendered pages by dependency key; keeps only what the latest build used."""

    pages: dict[str, str] = field(default_factory=dict)
    hits: int = 0
    misses: int = 0
    records: RecordPlan | None = None  # the record pages of the latest build


#: past this many changed records a build plans every record page again (a new template or a
#: day's change does anyway): the bookkeeping would cost more than it saves
INCREMENTAL_LIMIT = 500


@dataclass
class RecordPlan:
    """The record pages of one build: each page's key and the records it names, and for each
    record the pages that name it. The next build plans again only the pages of the records
    whose entry changed (a file read again, added or gone), of those that name them, and of
    those they now name; the others keep their key."""

    base: tuple[str, ...]  # what every record page depends on: templates, probes, date
    entries: dict[tuple[str, str], Any] = field(default_factory=dict)  # (kind, id) -> Entry
    planned: dict[str, tuple[Page, str, frozenset[tuple[str, str]]]] = field(default_factory=dict)
    dependents: dict[tuple[str, str], set[str]] = field(default_factory=dict)  # -> page uris

    def affected(self, site: SiteData, entries: dict[tuple[str, str], Any]) -> set[str] | None:
        """The uris of the record pages to plan again (None: all of them)."""
        changed = [k for k, entry in entries.items() if self.entries.get(k) is not entry]
        changed += [k for k in self.entries if k not in entries]
        if len(changed) > INCREMENTAL_LIMIT:
            return None
        found: set[str] = set()
        for kind, record_id in changed:
            found.add(page_uri(kind, record_id))
            found.update(self.dependents.get((kind, record_id), ()))  # the pages that show it
            entry = entries.get((kind, record_id))
            if entry is not None:  # the records it names now list it among those naming them
                found.update(page_uri(t, ref) for t, ref in _named(site, kind, entry.record))
        return found

    def keep(self, uri: str, planned: tuple[Page, str, frozenset[tuple[str, str]]]) -> None:
        before = self.planned.get(uri)
        for name in before[2] - planned[2] if before is not None else ():
            self.dependents.get(name, set()).discard(uri)
        for name in planned[2]:
            self.dependents.setdefault(name, set()).add(uri)
        self.planned[uri] = planned


def _key(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


INDEX_PAGES: list[tuple[str, Renderer]] = [
    (HOME, render.render_home),
    (BUGS, render.render_bug_index),
    (ERRORS, render.render_error_index),
    (CAUSES, render.render_cause_index),
    (FIXES, render.render_fix_index),
    (PROBES, render.render_probes),
    (TAGS, render.render_tags),
]


def _plan(
    site: SiteData, templates: str, cache: PageCache
) -> Iterable[tuple[Page, Renderer, tuple[str, ...], str]]:
    """Each page with its render function, arguments and key: the digest of the templates and
    of everything its content depends on."""
    everything = [
        site.digest(name, rid) for name, kind in KINDS.items() for rid in sorted(site.kb.entries(kind))
    ]
    probes = _key(*(repr(p) for p in site.probes.values()))
    # prose links each known bug id it mentions: a bug added or removed changes those links
    dated = [site.today.isoformat(), str(site.stale_days), _key(*sorted(site.bugs))]
    for uri, fn in INDEX_PAGES:  # lists and counts: they change with any record
        yield Page(uri, ""), fn, (), _key(templates, uri, _key(*everything), probes, *dated)
    yield from _record_pages(site, templates, (probes, *dated), cache)
    from kbgen.site.fleet import plan as fleet_plan

    for uri, title, fleet_fn, args, digest in fleet_plan(site):
        key = _key(templates, uri, digest, _key(*everything), *dated)
        yield Page(uri, "", None, "fleet", title), fleet_fn, args, key


RECORD_PAGES: dict[str, Renderer] = {
    "bug": render.render_bug,
    "error": render.render_error,
    "cause": render.render_cause,
    "fix": render.render_fix,
}


def _record_pages(
    site: SiteData, templates: str, base: tuple[str, ...], cache: PageCache
) -> Iterable[tuple[Page, Renderer, tuple[str, ...], str]]:
    """Each record page with its key, kept from the build before when nothing it names changed
    (see :class:`RecordPlan`)."""
    entries = {(name, rid): e for name, kind in KINDS.items() for rid, e in site.kb.entries(kind).items()}
    before, full_base = cache.records, (templates, *base)
    affected = before.affected(site, entries) if before is not None and before.base == full_base else None
    plan = before if affected is not None and before is not None else RecordPlan(full_base)
    plan.entries = entries
    seen: set[str] = set()
    for kind, fn in RECORD_PAGES.items():
        for record_id, entry in site.kb.entries(KINDS[kind]).items():
            uri = page_uri(kind, record_id)
            seen.add(uri)
            kept = plan.planned.get(uri) if affected is not None and uri not in affected else None
            if kept is not None:
                yield kept[0], fn, (record_id,), kept[1]
                continue
            deps, names = _deps(site, kind, entry.record)
            page = _page(kind, record_id, site)
            key = _key(templates, uri, site.digest(kind, record_id), *base, *deps)
            plan.keep(uri, (page, key, frozenset(names)))
            yield page, fn, (record_id,), key
    for uri in [u for u in plan.planned if u not in seen]:
        plan.keep(uri, (Page(uri, ""), "", frozenset()))
        del plan.planned[uri]
    cache.records = plan


def _named(site: SiteData, kind: str, record: Any) -> Iterable[tuple[str, str]]:
    """The records (of the kinds that have pages) that ``record`` names."""
    return ((link.target, ref) for link, ref, _ in site.refs.of(kind, record) if link.target in KINDS)


def _deps(site: SiteData, kind: str, record: Any) -> tuple[list[str], set[tuple[str, str]]]:
    """The digests of the records a record's page shows: those it links to, those that link to
    it (both from :mod:`kbgen.links`), and the fixes of the causes it names; and every record it
    names so (whether loaded or not), by which a later build knows when to plan it again."""
    deps: list[str] = []
    causes: list[str] = []
    names = {(kind, record.id)}
    for link, ref, _ in site.refs.of(kind, record):
        if link.target in KINDS:
            deps.append(site.digest(link.target, ref))
            names.add((link.target, ref))
        if link.target == "cause":
            causes.append(ref)
    backward = site.linking_to(kind, record.id)
    deps += (site.digest(*other) for other in backward)
    names.update(backward)
    deps += (site.digest("fix", f) for f in site.fixes_of(causes))
    for cause_id in causes:
        cause = site.causes.get(cause_id)
        names.update(("fix", f) for f in (cause.fixes if cause is not None else ()))
    return deps, names


def _page(kind: str, record_id: str, site: SiteData) -> Page:
    title = site.kb.entries(KINDS[kind])[record_id].record.title
    return Page(page_uri(kind, record_id), "", site.source_of(kind, record_id), kind, title)


def generate(
    site: SiteData,
    env: jinja2.Environment,
    cache: PageCache | None = None,
    templates_digest: str | None = None,
) -> list[Page]:
    """Every page of the site; with ``cache``, pages whose inputs did not change are reused."""
    cache = cache if cache is not None else PageCache()
    digest = templates_digest or templating.fingerprint(env)
    fresh: dict[str, str] = {}
    pages = []
    for page, fn, args, key in _plan(site, digest, cache):
        text = cache.pages.get(key)
        if text is None:
            cache.misses += 1
            text = fn(env, site, *args)
        else:
            cache.hits += 1
        fresh[key] = text
        pages.append(Page(page.uri, text, page.source, page.kind, page.title))
    cache.pages = fresh
    return pages


# --------------------------------------------------------------------------- the site's folders


@dataclass(frozen=True)
class SiteOptions:
    docs_dir: str = "docs"
    stale_days: int = STALE_DAYS


class _TolerantLoader(yaml.SafeLoader):
    """Reads mkdocs.yml without importing what its ``!!python/name:`` tags name."""


_TolerantLoader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)
_TolerantLoader.add_multi_constructor("!", lambda loader, suffix, node: None)


def site_options(config: Path) -> SiteOptions:
    """docs_dir and the kbgen plugin's stale_days from ``config`` (defaults where it has none)."""
    try:
        data = yaml.load(config.read_text(encoding="utf-8"), Loader=_TolerantLoader) or {}
    except FileNotFoundError:
        return SiteOptions()
    except (OSError, yaml.YAMLError) as exc:
        raise KbgenError(f"{config}: cannot read: {exc}") from None
    stale = STALE_DAYS
    for plugin in data.get("plugins") or []:
        if isinstance(plugin, dict) and isinstance(plugin.get("kbgen"), dict):
            stale = int(plugin["kbgen"].get("stale_days", stale))
    return SiteOptions(str(data.get("docs_dir", "docs")), stale)


def report_files(project: Project) -> dict[str, Path]:
    """The full probe reports kept beside bugs (``kb/bugs/BUG-…/env-*.json``), by site uri;
    bug pages link to them."""
    folder = project.folder(BUG)
    return {f"bugs/{p.parent.name}/{p.name}": p for p in sorted(folder.glob("BUG-*/env-*.json"))}


#: the site's own CSS, JavaScript and favicon, shipped in the package and served as assets/<name>
ASSETS = Path(__file__).resolve().parent.parent / "assets"


def asset_files() -> dict[str, bytes]:
    return {f"assets/{rel}": data for rel, data in folder_files(ASSETS).items()}
