"""The mkdocs plugin: the KB's pages join the site as generated files; kb/ edits reload it.

``on_files`` loads and checks kb/, renders every page (reusing the ones whose inputs did not
change) and adds each as a generated file whose edit link points at its kb/ source. Nothing is
written into docs/. Under ``mkdocs serve --dirty`` each page's file (and the page mkdocs made of
it) is kept from one build to the next and says itself whether its text changed, so mkdocs
reads, renders and writes just those (:mod:`kbgen.site.serving`).
"""

from __future__ import annotations

import json
import os
import posixpath
from pathlib import Path
from typing import Any, Literal

from mkdocs.config import base
from mkdocs.config import config_options as c
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.plugins import BasePlugin, event_priority, get_plugin_logger
from mkdocs.structure.files import File, Files, InclusionLevel
from mkdocs.structure.nav import Navigation, Section
from mkdocs.structure.pages import Page as MkPage

from kbgen import clock, layers, mdsafe, templating
from kbgen.errors import KbgenError
from kbgen.fileio import new_file_mode, replace_file
from kbgen.site import devserver, navmemo, output, pages, rawhtml, render, serving, themeplugins
from kbgen.site.data import ERRORS, STALE_DAYS, TAGS
from kbgen.site.fleet import FLEET
from kbgen.store import Project, find_project

log = get_plugin_logger(__name__)

#: the site's own CSS, JavaScript and favicon, served from the package (a docs/ file of the same
#: name wins), so an upgrade of kbgen brings new assets and a project's docs/ holds only its pages
ASSET_CSS = "assets/kbgen.css"
ASSET_JS = "assets/kbgen.js"


class KbgenConfig(base.Config):
    #: the project folder (or its kb/), relative to mkdocs.yml; default: found from mkdocs.yml up
    kb = c.Optional(c.Type(str))
    #: a fix not verified for this many days is listed as stale
    stale_days = c.Type(int, default=STALE_DAYS)
    #: list the error types under the navigation section whose index is errors/index.md
    nav_errors = c.Type(bool, default=True)


class KbgenPlugin(BasePlugin[KbgenConfig]):
    """Adds the KB's generated pages to a mkdocs build."""

    def __init__(self) -> None:
        self.cache = pages.PageCache()
        # Parsed files are kept only while serving: a one-off build would just make every
        # garbage collection of the page rendering that follows walk them again.
        self.entries: pages.EntryCache | None = None
        self.search = themeplugins.SearchEntries()
        self.project: Project | None = None
        self.dirty = False  # serving with dirty reload: pages kept between builds
        self.env: Any = None
        self.templates_digest = ""
        self.error_uris: list[str] = []
        self.generated: set[str] = set()  # src uris of the pages made from kb/
        self.last_good: list[pages.Page] | None = None  # while serving: the pages last published
        self.problem = ""  # while serving: why kb/ cannot be published now ("" when it can)
        self.tag_sections: themeplugins.Sections = list  # of the latest site published
        self.cleaners: dict[str, Any] = {}  # src uri -> its big blocks cleaned (sanitize.BlockCleaner)
        self.navmemo: navmemo.NavMemo | None = None
        self.lifted: dict[str, rawhtml.Lifted] = {}  # src uri -> HTML blocks kept out of Markdown
        self.nonce = rawhtml.new_nonce()  # marks the blocks only the templates may have lifted
        self.compiled: navmemo.CompiledTemplates | None = None  # while serving: the theme's
        self.edit_uris: dict[tuple[str, Path, Path], str] = {}  # (kb/ source, docs/, project) -> edit link
        self.nav: Navigation | None = None  # this build's
        self.nav_key: Any = None  # what the last build's navigation showed (serving.nav_key)
        self.theme_listings: dict[Any, list[str]] = {}  # while serving: the theme's files, listed once
        # under `serve --dirty`: what is kept between builds (kbgen.site.serving)
        self.kept = serving.KeptFiles()
        self.docs_pages = serving.DocsPages()
        self.tags = themeplugins.TagPlugins()
        self.tags_export = themeplugins.TagsExport()
        self.sitemap = themeplugins.Sitemap()
        self.files: Files | None = None  # this build's
        self.read: set[str] = set()  # src uris of the pages mkdocs read in this build
        self.collector = serving.Collector()  # while serving
        # the links of lifted HTML blocks as resolved, by page, while the site's files stay the same
        self.links: dict[str, dict[str, str]] = {}
        self.link_files: tuple[frozenset[str], bool] | None = None  # files and use_directory_urls

    # Having on_startup keeps this instance alive across `mkdocs serve` rebuilds, cache included.
    def on_startup(self, *, command: Literal["build", "gh-deploy", "serve"], dirty: bool) -> None:
        if command == "serve":
            self.entries = pages.EntryCache()
            self.compiled = navmemo.CompiledTemplates()
        self.dirty = command == "serve" and dirty

    def on_shutdown(self) -> None:
        self.collector.stop()

    def on_config(self, config: MkDocsConfig) -> None:
        self.collector.before_build()
        here = Path(config.config_file_path or ".").resolve().parent
        try:
            chosen = self.config.kb
            self.project = find_project(here, override=str(here / chosen) if chosen else None)
        except KbgenError as exc:
            raise PluginError(f"kbgen: {exc}") from None
        if self.env is None:
            self.env = render.make_environment(
                templating.template_dirs(self.project.root), html_nonce=self.nonce
            )
        if self.entries is not None:  # serving
            navmemo.memo_theme_listing(config.theme, self.theme_listings)
        if ASSET_CSS not in config.extra_css:
            config.extra_css.append(ASSET_CSS)
        if ASSET_JS not in [str(script) for script in config.extra_javascript]:
            config.extra_javascript.append(ASSET_JS)

    def on_files(self, files: Files, /, *, config: MkDocsConfig) -> Files:
        assert self.project is not None
        generated = self._generate()
        docs = Path(config.docs_dir).resolve()
        for file, why in output.unpublishable_files(files, config.docs_dir, docs):
            log.warning(f"kbgen: {docs / file.src_uri} is left out of the site: {why}")
            files.remove(file)
        self.read = set()
        if self.dirty:
            self.kept.start(config)
        taken = files.src_uris
        for page in generated:
            if page.uri in taken:
                raise PluginError(
                    f"kbgen: {Path(config.docs_dir, page.uri)} is in the way of the generated "
                    f"page {page.uri}; remove or rename it"
                )
            files.append(self._file(config, page, docs))
        if self.dirty:  # a page gone from the site (a deleted record) is gone from the preview
            for file in self.kept.keep_only({p.uri for p in generated}):
                serving.remove_output(file, config.site_dir)
        for uri, path in pages.report_files(self.project).items():  # bug pages link to them
            if files.get_file_from_path(uri) is None:
                files.append(File.generated(config, uri, abs_src_path=str(path)))
        for uri in pages.asset_files():
            if files.get_file_from_path(uri) is None:
                files.append(
                    File.generated(config, uri, abs_src_path=str(pages.ASSETS / uri[len("assets/") :]))
                )
        self.error_uris = [p.uri for p in sorted(generated, key=_title_key) if p.kind == "error"]
        self.generated = {p.uri for p in generated}
        self.search.urls = dict.fromkeys(file.url for file in files.documentation_pages())
        link_files = (frozenset(files.src_uris), config.use_directory_urls)
        if link_files != self.link_files:
            self.links, self.link_files, self.cleaners = {}, link_files, {}
        return files

    def _generate(self) -> list[pages.Page]:
        assert self.project is not None
        try:
            site, warnings = pages.load_site(
                self.project, today=clock.now().date(), stale_days=self.config.stale_days, cache=self.entries
            )
            for problem in warnings:
                log.warning(problem.format())
            digest = templating.fingerprint(self.env)
            if digest != self.templates_digest:
                # a new override shadows a cached packaged template whose file did not change
                self.env.cache.clear()
                self.env.globals["memo"].clear()
                self.templates_digest = digest
            generated = pages.generate(site, self.env, self.cache, digest)
            self.tag_sections = site.tag_index
        except KbgenError as exc:
            if self.entries is None:  # a one-off build fails; a server keeps answering
                raise PluginError(f"kbgen: the KB cannot be published:\n{exc}") from None
            return self._keep_serving(exc)
        self.problem = ""
        if self.entries is not None:
            self.last_good = generated
        return generated

    def _keep_serving(self, exc: KbgenError) -> list[pages.Page]:
        """The last good pages (or a page saying why there are none) while kb/ has a problem."""
        self.problem = str(exc)
        log.error(f"kbgen: showing the last good site until this is fixed:\n{exc}")
        if self.last_good is not None:
            return self.last_good
        text = "# The KB cannot be published yet\n\nFix this and save; the site reloads.\n\n"
        text += f"{mdsafe.fence(exc)}\n"
        return [pages.Page(uri, text) for uri, _ in pages.INDEX_PAGES]

    def _file(self, config: MkDocsConfig, page: pages.Page, docs: Path) -> File:
        # Record pages stay out of the sidebar: a nav listing every bug makes each page carry it.
        # The Fleet page joins the nav in on_nav (no mkdocs.yml has to name it); its nodes never.
        outside = page.source or page.kind == "fleet"
        level = InclusionLevel.NOT_IN_NAV if outside else InclusionLevel.UNDEFINED
        edit_uri = None  # generated; or shipped with kbgen: `kbgen kb copy ID` forks it into kb/
        if page.source is not None and not page.source.startswith(layers.BASE_LABEL):
            edit_uri = self._edit_uri(page.source, docs)
        if self.dirty:
            return self.kept.file(config, page.uri, page.text, level, edit_uri)
        file = File.generated(config, page.uri, content=page.text, inclusion=level)
        if page.source is not None:
            file.edit_uri = edit_uri
        return file

    def _edit_uri(self, source: str, docs: Path) -> str:
        """The kb/ file ``source`` relative to docs/, like every other page's edit link (an
        edit_uri of ".../docs/" resolves ".."); remembered, as a rebuild asks for every page's."""
        assert self.project is not None
        key = (source, docs, self.project.root)
        if key not in self.edit_uris:
            target = self.project.root / source
            self.edit_uris[key] = posixpath.join(*Path(os.path.relpath(target, docs)).parts)
        return self.edit_uris[key]

    @event_priority(110)  # before the theme's tags plugin makes its tag index
    def on_env(self, env: Any, /, *, config: MkDocsConfig, files: Files) -> Any:
        # Material renders the navigation, error types included, into every page: render it
        # once for all the record pages that show the same one.
        self.navmemo = navmemo.install(env)
        if self.compiled is not None:  # mkdocs makes a new environment, so a cold one, per build
            env.bytecode_cache = self.compiled
        if self.dirty and self.nav is not None:
            self.tags.merge(config, files, self.read)
            self.tags_export.write(config)
            self._rebuild_all_when_nav_changed(self.nav, files)
        return env

    def on_nav(self, nav: Navigation, /, *, config: MkDocsConfig, files: Files) -> Navigation:
        nav = self.nav = self._with_kb_entries(nav, files)
        self.files = files
        if not self.dirty:
            return nav
        if self.kept.fresh_key and self.nav_key is not None:  # mkdocs.yml changed: read every page
            for file in files.documentation_pages():
                serving.mark_for_rebuild(file)
        self.docs_pages.carry_over(files)
        in_serve = files.documentation_pages(inclusion=InclusionLevel.is_in_serve)
        if any(file.is_modified() for file in in_serve):
            self.tags.force_listings(files)
        return nav

    def _rebuild_all_when_nav_changed(self, nav: Navigation, files: Files) -> None:
        """Every page shows the navigation (the tabs, the sidebar): under ``serve --dirty`` a
        page whose own file did not change is not rebuilt, so when the navigation changes (the
        Fleet tab after the first ``fleet ingest``, a new or retitled error type, one whose
        open-bugs mark comes or goes) every page is rebuilt once from what it holds, or the pages
        built before would go on showing the old one. Found once the changed pages are read."""
        key = serving.nav_key(nav.items)
        changed = self.nav_key is not None and key != self.nav_key
        self.nav_key = key
        if changed:
            for file in files.documentation_pages(inclusion=InclusionLevel.is_in_serve):
                serving.mark_for_rebuild(file)

    def _with_kb_entries(self, nav: Navigation, files: Files) -> Navigation:
        section = _section_of(nav.items, ERRORS) if self.config.nav_errors else None
        fleet = files.get_file_from_path(FLEET)
        fleet_page = fleet.page if fleet is not None else None
        add_fleet = fleet_page is not None and fleet_page not in _pages_in(nav.items)
        if section is None and not add_fleet:
            return nav
        for uri in self.error_uris if section is not None else []:
            file = files.get_file_from_path(uri)
            if file is not None and file.page is not None:
                file.page.parent = section
                section.children.append(file.page)  # type: ignore[union-attr]
        if add_fleet:
            nav.items.append(fleet_page)
        ordered = list(_pages_in(nav.items))
        for before, after in zip([None, *ordered], [*ordered, None], strict=True):
            if before is not None:
                before.next_page = after
            if after is not None:
                after.previous_page = before
        return Navigation(nav.items, ordered)

    def on_pre_template(self, template: Any, /, *, template_name: str, config: MkDocsConfig) -> Any:
        if self.dirty and template_name == self.sitemap.NAME and self.files is not None:
            return self.sitemap.template(template, self.files)
        return template

    def on_post_template(self, output: str, /, *, template_name: str, config: MkDocsConfig) -> str:
        if self.dirty and template_name == self.sitemap.NAME:
            self.sitemap.rendered(output)
        return output

    def on_page_markdown(self, markdown: str, /, *, page: MkPage, config: MkDocsConfig, files: Files) -> str:
        self.read.add(page.file.src_uri)
        if page.file.src_uri not in self.generated:
            return markdown
        lifted = rawhtml.Lifted(self.nonce)
        markdown = lifted.lift(markdown)
        self.lifted.update({page.file.src_uri: lifted} if lifted.blocks else {})
        return markdown

    def on_page_content(self, html: str, /, *, page: MkPage, config: MkDocsConfig, files: Files) -> str:
        """A page made from KB text leaves here as allow-listed HTML: no script, handler or script URL."""
        if page.file.src_uri not in self.generated:
            return html
        from kbgen.site.sanitize import BlockCleaner, clean_html

        if page.file.src_uri == TAGS:
            themeplugins.listing_anchors(page, self.tag_sections)
        html, lifted = clean_html(html), self.lifted.get(page.file.src_uri)
        if (
            lifted is not None
        ):  # the blocks go back cleaned after search reads the page (placeholders are text)

            def url_of(href: str) -> str | None:
                target = files.get_file_from_path(rawhtml.target_uri(page.file.src_uri, href))
                return None if target is None else target.url_relative_to(page.file)

            cleaner = self.cleaners.setdefault(page.file.src_uri, BlockCleaner())
            html = lifted.hold(html, url_of, self.links.setdefault(page.file.src_uri, {}), cleaner)
        return html

    @event_priority(-100)  # after the search plugin has read the page without its big blocks
    def on_page_context(self, context: Any, /, *, page: MkPage, config: MkDocsConfig, nav: Navigation) -> Any:
        if (lifted := self.lifted.pop(page.file.src_uri, None)) is not None:
            page.content = lifted.put_back(page.content or "")
        self.search.built.add(page.url)
        outside = page.file.inclusion == InclusionLevel.NOT_IN_NAV and page.parent is None
        if outside and page.file.generated_by == "kbgen":
            # A record page outside the nav would show an empty navigation sidebar: hide it, so
            # kbgen.css moves the page's table of contents there and the text gets the width.
            hide = page.meta.get("hide")
            page.meta["hide"] = [*(hide if isinstance(hide, list) else []), "navigation"]
        return context

    @event_priority(100)  # before the search plugin writes its index
    def on_post_build(self, *, config: MkDocsConfig) -> None:
        if self.navmemo is not None:
            memo = self.navmemo
            log.debug(
                f"the navigation of {memo.hits + memo.misses} pages outside it was rendered "
                f"{memo.misses} time(s)"
            )
        if self.entries is not None:  # serving: kbgen.js shows this file's problem as a banner
            status = Path(config.site_dir) / PROBLEM_FILE  # read by the page while this runs
            problem = json.dumps({"problem": self.problem}).encode()
            replace_file(status, problem, new_file_mode(), durable=False)
        if self.dirty:
            self.search.keep_complete(config)
            self.kept.built()
            self.tags.remember_listings(config)
            self.tags_export.check()
        self.search.built = set()
        self.lifted = {}  # a page mkdocs did not render this time must not keep its blocks
        self.nav = self.files = None  # kept by nothing between builds
        self.collector.after_build()

    def on_serve(self, server: Any, /, *, config: MkDocsConfig, builder: Any) -> Any:
        assert self.project is not None
        devserver.install(server, config.dev_addr.host)  # no answer to a foreign Host: header
        for folder in [self.project.kb, *templating.template_dirs(self.project.root)]:
            if folder.is_dir():  # a templates/ made later is seen at the next start
                server.watch(str(folder))
        if devserver.notify_changes(server):
            # a save reaches kbgen as a burst of events within milliseconds: a short wait for
            # the burst to end is enough (mkdocs waits 0.1 s, made for its polling)
            server.build_delay = min(server.build_delay, 0.02)
            changes = serving.ChangeLog(self.project.kb)
            if self.entries is not None and changes.watch(server):  # a rebuild looks at what changed
                self.entries.changes = changes
        else:
            log.info("watching for changes by polling every half second")
        self.collector.start()  # called once, after the first build
        return server


#: Written into the served site after each build: what keeps kb/ from being published now.
PROBLEM_FILE = "kbgen-problem.json"


def _title_key(page: pages.Page) -> tuple[str, str]:
    return page.title.lower(), page.uri


def _section_of(items: list[Any], uri: str) -> Section | None:
    """The nav section whose children include the page at ``uri``."""
    for item in items:
        if isinstance(item, Section):
            if any(isinstance(ch, MkPage) and ch.file.src_uri == uri for ch in item.children):
                return item
            found = _section_of(item.children, uri)
            if found is not None:
                return found
    return None


def _pages_in(items: list[Any]) -> Any:
    for item in items:
        if isinstance(item, MkPage):
            yield item
        elif isinstance(item, Section):
            yield from _pages_in(item.children)
