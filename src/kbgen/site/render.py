"""One function per page kind, each returning Markdown text, and the site's Jinja environment:
:mod:`kbgen.templating`'s, plus what only a page has (links between records, badges, marks, charts).
"""

from __future__ import annotations

import datetime as dt
import itertools
from enum import Enum
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from kbgen import mdsafe, templating
from kbgen.models import Likelihood, Severity, Status
from kbgen.site.data import (
    BUGS,
    CAUSES,
    ERRORS,
    FIXES,
    HOME,
    PROBES,
    SEVERITY_ORDER,
    TAGS,
    SiteData,
    page_uri,
    relative,
    tag_anchor,
)
from kbgen.site.filters import (
    Memo,
    dashboard_charts,
    html_link,
    icon,
    link_bug_ids,
    mark,
    record_link,
    task,
)
from kbgen.templating import render

_LIKELIHOOD_RANK = {Likelihood.high: 0, Likelihood.medium: 1, Likelihood.low: 2}
_URGENT = frozenset({Severity.critical, Severity.high})


@jinja2.pass_context
def _href(context: Any, target: str) -> Markup:
    # Targets are built from validated ids, never from free text.
    return Markup(relative(target, context["here"]))


_ORDER: dict[str, list[Any]] = {"status": list(Status), "sev": SEVERITY_ORDER}


@jinja2.pass_context
def _link(context: Any, kind: str, record_id: str) -> Markup:
    """``[title](page)`` for a record, or its id as text when there is no such record."""
    found = record_link(context, kind, record_id)
    if found is None:
        return mdsafe.inline(record_id)
    label, target = found
    return Markup(f"[{mdsafe.inline(label)}]({target})")


@jinja2.pass_context
def _probe_link(context: Any, probe_id: str) -> Markup:
    """The probe's id as code, linked to its entry in the catalogue when it has one."""
    if probe_id not in context["site"].probes:
        return mdsafe.code(probe_id)
    return Markup(f"[{mdsafe.code(probe_id)}]({relative(f'{PROBES}#probe-{probe_id}', context['here'])})")


@jinja2.pass_context
def _tag_chips(context: Any, names: list[str]) -> Markup:
    """A record's tags as the theme draws them above a page, each a link to its section of the
    tags page (the page hides the theme's own, which link nowhere when kbgen writes that page)."""
    if not names:
        return Markup("")
    here = context["here"]
    chips = [f"[{mdsafe.inline(n)}]({relative(f'{TAGS}#{tag_anchor(n)}', here)}){{ .md-tag }}" for n in names]
    return Markup(f'<nav class="md-tags" markdown="span">{" ".join(chips)}</nav>\n\n')


def _badge(kind: str, value: Enum) -> Markup:
    """A coloured label for a status, severity ("sev"), risk or likelihood ("like")."""
    label = value.value.replace("-", " ") + (" risk" if kind == "risk" else "")
    order = _ORDER.get(kind)
    sort = f' data-sort="{order.index(value)}"' if order else ""  # the bug table sorts by rank
    return Markup(f'<span class="kb-badge kb-{kind} kb-{kind}--{value.value}"{sort}>{label}</span>')


@jinja2.pass_context
def _md(context: Any, text: Any) -> Markup:
    site = context.get("site")
    made = mdsafe.prose(text)
    return made if site is None else Markup(link_bug_ids(made, site.bugs, context["here"]))


@jinja2.pass_context
def _body(context: Any, text: str, top: int = 3) -> Markup:
    site = context.get("site")
    made = mdsafe.body(text, top)
    return made if site is None else Markup(link_bug_ids(made, site.bugs, context["here"]))


def make_environment(dirs: list[Path], *, html_nonce: str = "") -> jinja2.Environment:
    """The site's Jinja environment over ``dirs``: the template filters, plus links, badges and marks.

    ``html_nonce``: the site plugin builds the pages and lifts big HTML tables, marked with this
    secret, out of Markdown's way (:mod:`kbgen.site.rawhtml`)."""
    env = templating.make_environment(dirs)
    env.filters.update(body=_body, md=_md)  # the same filters, with bug ids linked to their pages
    env.globals.update(
        href=_href,
        link=_link,
        html_link=html_link,
        probe_link=_probe_link,
        tag_chips=_tag_chips,
        badge=_badge,
        icon=icon,
        mark=mark,
        task=task,
        uri=page_uri,
        HOME=HOME,
        BUGS=BUGS,
        ERRORS=ERRORS,
        CAUSES=CAUSES,
        FIXES=FIXES,
        PROBES=PROBES,
        TAGS=TAGS,
        SEVERITIES=SEVERITY_ORDER,
        lift_html=bool(html_nonce),
        html_nonce=html_nonce,
        memo=Memo(),  # kept with the environment: a server renders with one across rebuilds
    )
    return env


# --------------------------------------------------------------------------- pages


def _page(env: jinja2.Environment, site: SiteData, name: str, here: str, **context: Any) -> str:
    return render(env, name, site=site, here=here, today=site.today, **context)


def render_home(env: jinja2.Environment, site: SiteData, recent: int = 10) -> str:
    """The dashboard: open bugs by status and severity, recent bugs, busy error types, stale fixes."""
    bugs = sorted(site.bugs.values(), key=lambda b: (b.updated, b.id), reverse=True)
    busiest = sorted(site.bugs_by_error.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    failing = list(itertools.islice((b for b in bugs if site.failed_findings(b)), recent))
    stale = sorted(
        (f for f in site.fixes.values() if site.is_stale(f)),
        key=lambda f: (f.last_verified or dt.date.min, f.id),
    )
    open_bugs = [b for b in bugs if site.is_open(b)]
    return _page(
        env,
        site,
        "page-home.md.j2",
        HOME,
        urgent=[b for b in open_bugs if b.severity in _URGENT],
        recent=bugs[:recent],
        busiest=busiest[:recent],
        failing=failing,
        stale=stale,
        unverified=[f for f in site.fixes.values() if f.last_verified is None],
        open_bugs=open_bugs,
        charts=dashboard_charts(site),
    )


def render_bug_index(env: jinja2.Environment, site: SiteData) -> str:
    """Every bug in one sortable table, newest first."""
    bugs = sorted(site.bugs.values(), key=lambda b: b.id, reverse=True)
    digest = site.digest
    rows = [((digest("bug", b.id), digest("error", b.error) if b.error else ""), b) for b in bugs]
    return _page(env, site, "page-bugs.md.j2", BUGS, bugs=bugs, rows=rows)


def render_bug(env: jinja2.Environment, site: SiteData, bug_id: str) -> str:
    """One bug report."""
    bug = site.bugs[bug_id]
    tried = {attempt.fix for attempt in bug.fixes_tried}
    causes = [*bug.confirmed_causes, *bug.suspected_causes]
    untried = [fix_id for fix_id in site.fixes_of(causes) if fix_id not in tried]
    return _page(
        env,
        site,
        "page-bug.md.j2",
        page_uri("bug", bug_id),
        bug=bug,
        untried=untried,
        source=site.source_of("bug", bug_id),
        body=site.body("bug", bug_id),
    )


def ranked_causes(error: Any) -> list[Any]:
    """An error type's cause references, most likely first (stable within a rank)."""
    return sorted(error.causes, key=lambda ref: _LIKELIHOOD_RANK[ref.likelihood])


def render_error_index(env: jinja2.Environment, site: SiteData) -> str:
    errors = sorted(site.errors.values(), key=lambda e: e.title.lower())
    return _page(env, site, "page-errors.md.j2", ERRORS, errors=errors)


def render_error(env: jinja2.Environment, site: SiteData, error_id: str) -> str:
    """A troubleshooting page: signatures, ranked causes with fixes, diagnostics, bugs."""
    error = site.errors[error_id]
    return _page(
        env,
        site,
        "page-error.md.j2",
        page_uri("error", error_id),
        error=error,
        causes=ranked_causes(error),
        fix_ids=site.fixes_of(ref.cause for ref in ranked_causes(error)),
        source=site.source_of("error", error_id),
        body=site.body("error", error_id),
    )


def render_cause_index(env: jinja2.Environment, site: SiteData) -> str:
    causes = sorted(site.causes.values(), key=lambda c: c.title.lower())
    return _page(env, site, "page-causes.md.j2", CAUSES, causes=causes)


def render_cause(env: jinja2.Environment, site: SiteData, cause_id: str) -> str:
    return _page(
        env,
        site,
        "page-cause.md.j2",
        page_uri("cause", cause_id),
        cause=site.causes[cause_id],
        source=site.source_of("cause", cause_id),
        body=site.body("cause", cause_id),
    )


def render_fix_index(env: jinja2.Environment, site: SiteData) -> str:
    fixes = sorted(site.fixes.values(), key=lambda f: f.title.lower())
    return _page(env, site, "page-fixes.md.j2", FIXES, fixes=fixes)


def render_fix(env: jinja2.Environment, site: SiteData, fix_id: str) -> str:
    return _page(
        env,
        site,
        "page-fix.md.j2",
        page_uri("fix", fix_id),
        fix=site.fixes[fix_id],
        source=site.source_of("fix", fix_id),
        body=site.body("fix", fix_id),
    )


def render_probes(env: jinja2.Environment, site: SiteData) -> str:
    """The probe catalogue: what each probe checks and how to run it."""
    probes = sorted(site.probes.values(), key=lambda p: (not p.builtin, p.id))
    return _page(env, site, "page-probes.md.j2", PROBES, probes=probes)


def render_tags(env: jinja2.Environment, site: SiteData) -> str:
    return _page(env, site, "page-tags.md.j2", TAGS)
