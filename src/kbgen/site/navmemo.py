"""The theme's navigation, rendered once for all the pages that show the same one.

mkdocs-material renders the whole navigation tree into every page (the sidebar, and the drawer on
a phone), and the plugin lists every error type in it: on a KB of 1,000 bugs that was the largest
part of what the plugin added to a build. A page outside the navigation (a bug, cause or fix page)
marks no entry as the current one and shows no table of contents in it, so its navigation can
differ from another such page's only in its relative links. Pages whose links come out the same
share one rendering; a page in the navigation is rendered by the theme as before.

Only Material's own navigation templates are memoised: when a project overrides one of them (a
``custom_dir`` with ``partials/nav.html``...), which could show anything of the page, every page
renders its own navigation.

While serving, :class:`CompiledTemplates` also keeps the theme's compiled templates from one
rebuild to the next, and :func:`memo_theme_listing` the list of the theme's files (mkdocs lists
every file of the theme's folders on each build, Material's thousands of icons included).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Hashable, Iterator
from pathlib import Path
from typing import Any

import jinja2
import jinja2.bccache
from markupsafe import Markup

NAV = "partials/nav.html"
#: the templates the navigation is made of, each of which must be the theme's own
_PARTS = (NAV, "partials/nav-item.html", "partials/logo.html", "partials/source.html")
#: the theme's navigation template, under a name of its own, for the memo to render
_THEME_NAV = "kbgen-theme/" + NAV
_CALL = "{{ _kbgen_nav() }}"


class _Loader(jinja2.BaseLoader):
    """The theme's loader, with ``partials/nav.html`` answered by the memo."""

    def __init__(self, inner: jinja2.BaseLoader) -> None:
        self.inner = inner

    def get_source(
        self, environment: jinja2.Environment, template: str
    ) -> tuple[str, str | None, Callable[[], bool] | None]:
        if template == NAV:
            return _CALL, None, lambda: True
        if template == _THEME_NAV:
            return self.inner.get_source(environment, NAV)
        return self.inner.get_source(environment, template)

    def list_templates(self) -> list[str]:
        return self.inner.list_templates()


def install(env: jinja2.Environment) -> NavMemo | None:
    """Let ``env`` render the navigation through a memo; None (nothing changed) when the theme's
    navigation is not Material's own."""
    inner = env.loader
    if inner is None or not all(_from_material(env, inner, name) for name in _PARTS):
        return None
    memo = NavMemo()
    env.loader = _Loader(inner)
    env.globals["_kbgen_nav"] = memo
    if env.cache is not None:
        env.cache.clear()
    return memo


def _from_material(env: jinja2.Environment, loader: jinja2.BaseLoader, name: str) -> bool:
    try:
        _, filename, _ = loader.get_source(env, name)
    except jinja2.TemplateNotFound:
        return False
    spec = importlib.util.find_spec("material")
    if filename is None or spec is None or spec.origin is None:
        return False
    return Path(spec.origin).resolve().parent in Path(filename).resolve().parents


class NavMemo:
    """Navigation HTML by what it depends on, for one build."""

    def __init__(self) -> None:
        self.rendered: dict[Hashable, str] = {}
        self.hits = 0
        self.misses = 0
        self._urls: tuple[int, list[str]] | None = None

    @jinja2.pass_context
    def __call__(self, context: Any) -> Markup:
        key = self._key(context)
        if key is None:
            return Markup(_render(context))
        html = self.rendered.get(key)
        if html is None:
            self.misses += 1
            html = self.rendered[key] = _render(context)
        else:
            self.hits += 1
        return Markup(html)

    def _key(self, context: Any) -> Hashable | None:
        """What the navigation of this page depends on; None when it is the page's own."""
        page, nav = context.get("page"), context.get("nav")
        if page is None or nav is None or _shown_in(nav.items, page):
            return None
        url: Any = context.environment.filters["url"]
        links = tuple(url(context, target) for target in self._targets(context, nav))
        return id(nav), tuple(context.get("features") or ()), links

    def _targets(self, context: Any, nav: Any) -> list[str]:
        """Every address the navigation links to, as written before the page makes it relative."""
        if self._urls is None or self._urls[0] != id(nav):
            config = context.get("config") or {}
            extra, theme = config.get("extra") or {}, config.get("theme") or {}
            home = extra.get("homepage") or (nav.homepage.url if nav.homepage else "")
            found = [str(item.url) for item in _items(nav.items) if getattr(item, "url", None) is not None]
            self._urls = id(nav), [*found, str(home), str(theme.get("logo") or "")]
        return self._urls[1]


def _items(items: list[Any]) -> Iterator[Any]:
    for item in items:
        yield item
        yield from _items(getattr(item, "children", None) or [])


def _shown_in(items: list[Any], page: Any) -> bool:
    """Whether the navigation marks anything as current on ``page``, or lists the page itself."""
    for item in _items(items):
        if item is page or getattr(item, "active", False) or page in (getattr(item, "pages", None) or ()):
            return True
    return False


def _render(context: Any) -> str:
    template = context.environment.get_template(_THEME_NAV)
    return str(template.render(context.get_all()))


class CompiledTemplates(jinja2.BytecodeCache):
    """The theme's templates, compiled once while serving instead of once per rebuild.

    mkdocs makes a new Jinja environment for every build, so every rebuild parsed and compiled
    Material's templates again (about half a second at 1,000 bugs). Jinja keys each entry by the
    template's name and a checksum of its source, so an edited override is compiled afresh.
    """

    def __init__(self) -> None:
        self.code: dict[str, bytes] = {}

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        known = self.code.get(bucket.key)
        if known is not None:
            bucket.bytecode_from_string(known)

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        self.code[bucket.key] = bucket.bytecode_to_string()


def memo_theme_listing(theme: Any, listings: dict[Any, list[str]]) -> None:
    """Have the environments ``theme`` makes list the theme's files from ``listings`` after the
    first time (a memo kept across rebuilds by the caller). Keyed by the theme's folders and
    static templates and by the filter's code: a static file added to a ``custom_dir`` while
    serving is picked up at the next start, as mkdocs does for theme changes unless watched."""
    make_env = theme.get_env

    def get_env() -> jinja2.Environment:
        env: jinja2.Environment = make_env()
        list_templates = env.list_templates

        def listed(extensions: Any = None, filter_func: Any = None) -> list[str]:
            key = (
                tuple(theme.dirs),
                tuple(theme.static_templates),
                tuple(extensions) if extensions is not None else None,
                getattr(filter_func, "__code__", filter_func),
            )
            if key not in listings:
                listings[key] = list_templates(extensions=extensions, filter_func=filter_func)
            return list(listings[key])

        env.list_templates = listed  # type: ignore[method-assign]
        return env

    theme.get_env = get_env
