"""The Jinja side of kbgen: where templates are found, the environment and filters every template
gets, and template errors that name ``file:line``.

Both the bug file ``kbgen new-bug`` writes (``bug.md.j2``) and the site's pages are rendered
from here; the site adds what only a page has (links between records, badges, charts) in
:mod:`kbgen.site.render`. Templates come from the project's ``templates/`` first, then the copy
packaged with kbgen (a wheel carries them as ``kbgen/templates``), then a source checkout's
``templates/``, so a team can override one template and keep the others.

Every ``{{ value }}`` is escaped to literal Markdown unless it is :class:`~markupsafe.Markup`
made on purpose by a filter (``fence``, ``code``, ``body``) or a macro: user text is data.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import html
import json
import re
import traceback
from enum import Enum
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

import kbgen
from kbgen import mdsafe
from kbgen.errors import KbgenError, relpath


class TemplateError(KbgenError):
    """A template that does not parse or fails while rendering; names file:line."""


def template_dirs(project_root: Path | None = None) -> list[Path]:
    """Where templates are looked up (site pages and new-bug alike), first match wins: project,
    packaged copy, source checkout.

    The project's ``templates/`` is listed even before it exists, so a first override counts.
    """
    package = Path(kbgen.__file__).resolve().parent
    candidates = [package / "templates"]
    if package.parent.name == "src":  # a source checkout: <repo>/src/kbgen, templates in <repo>
        candidates.append(package.parent.parent / "templates")
    seen = [(project_root / "templates").resolve()] if project_root is not None else []
    for folder in candidates:
        if folder.is_dir() and folder.resolve() not in seen:
            seen.append(folder.resolve())
    return seen


def make_environment(dirs: list[Path], **options: Any) -> jinja2.Environment:
    """A Jinja environment over ``dirs`` with kbgen's text filters; undefined names are errors.

    ``options`` override Jinja settings (the bug body keeps Jinja's default whitespace rules)."""
    settings: dict[str, Any] = {
        "autoescape": True,  # with _finalize: anything not Markup becomes literal Markdown
        "finalize": _finalize,
        "undefined": jinja2.StrictUndefined,
        "trim_blocks": True,
        "lstrip_blocks": True,
        "keep_trailing_newline": True,
        # No stat of every template on every render: the site compares fingerprint() per build
        # and clears the cache when a template changed.
        "auto_reload": False,
    }
    env = jinja2.Environment(loader=jinja2.FileSystemLoader([str(d) for d in dirs]), **(settings | options))
    env.filters.update(
        inline=mdsafe.inline,
        fence=mdsafe.fence,
        code=mdsafe.code,
        body=mdsafe.body,
        md=mdsafe.prose,
        source_link=mdsafe.link,
        when=_when,
        first_sentence=first_sentence,
        readable_pattern=readable_pattern,
        json=lambda v: Markup(json.dumps(v, ensure_ascii=False)),
        text=mdsafe.escape_html,  # text inside a raw HTML element
        # for the `title:` key: the theme prints page titles unescaped (and unescapes H1 text)
        html=lambda v: html.escape(str(v), quote=True),
    )
    return env


def _finalize(value: Any) -> Any:
    if isinstance(value, Markup):
        return value
    if value is None:
        return Markup("")
    if isinstance(value, Enum):
        value = value.value
    return mdsafe.inline(value)


def _when(value: Any) -> str:
    if value is None or value == "":
        return ""
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


_SENTENCE_END_RE = re.compile(r"(?<=[a-z0-9)`'\"])[.;:](?=\s+[A-Z(`])")


def first_sentence(text: Any, limit: int = 160) -> str:
    """The first sentence of ``text`` on one line, cut at a word near ``limit`` characters."""
    flat = " ".join(str(text).split())
    end = _SENTENCE_END_RE.search(flat)
    short = flat[: end.start() + 1] if end else flat
    if len(short) > limit:
        cut = short[:limit].rsplit(" ", 1)[0].rstrip(",;:")
        short = cut + " …" if cut.count("`") % 2 == 0 else cut + "` …"
    return short


_ESCAPED_RE = re.compile(r"\\([^\w\s])")
_META_RE = re.compile(r"[\[\](){}|*+?^$\\]")


def readable_pattern(regex: str) -> str:
    """A signature regex as the log line it matches when it is plain text with escapes
    (``Illegal instruction \\(core dumped\\)`` reads as ``Illegal instruction (core dumped)``);
    the regex itself when it uses alternatives, classes or repeats."""
    plain = regex.replace(r"\b", "")
    if _META_RE.search(_ESCAPED_RE.sub("", plain)):
        return regex
    return _ESCAPED_RE.sub(r"\1", plain)


def fingerprint(env: jinja2.Environment) -> str:
    """A digest of every template the environment can load, as it resolves them."""
    digest = hashlib.sha256()
    for name in sorted(env.list_templates(extensions=["j2"])):
        source, _, _ = env.loader.get_source(env, name)  # type: ignore[union-attr]
        digest.update(name.encode() + b"\0" + source.encode() + b"\0")
    return digest.hexdigest()


def render(env: jinja2.Environment, name: str, **context: Any) -> str:
    """Render template ``name``; a broken template raises TemplateError naming file:line."""
    return render_template(load(env, name), name, **context)


def load(env: jinja2.Environment, name: str) -> jinja2.Template:
    """Template ``name`` from the search path; one that is missing or does not parse is a TemplateError."""
    try:
        return env.get_template(name)
    except jinja2.TemplateSyntaxError as exc:
        raise syntax_error(exc, name) from None
    except jinja2.TemplateNotFound as exc:
        raise TemplateError(
            f"template {exc.name} not found in {', '.join(map(str, env.loader.searchpath))}"  # type: ignore[union-attr]
        ) from None


def syntax_error(exc: jinja2.TemplateSyntaxError, name: str) -> TemplateError:
    where = f"{relpath(Path(exc.filename))}:{exc.lineno}" if exc.filename else f"{name}:{exc.lineno}"
    return TemplateError(f"{where}: {exc.message}", hint="fix the template syntax")


def render_template(template: jinja2.Template, name: str, **context: Any) -> str:
    """Render a loaded template; any failure is a TemplateError naming the template's file:line."""
    try:
        return template.render(**context)
    except jinja2.TemplateSyntaxError as exc:  # an {% include %} of a template that does not parse
        raise syntax_error(exc, name) from None
    except Exception as exc:  # a template runs code: any failure is reported as template:line
        where = _template_frame(exc) or name
        what = (
            exc.message
            if isinstance(exc, jinja2.TemplateError) and exc.message
            else f"{type(exc).__name__}: {exc}"
        )
        raise TemplateError(f"{where}: {what}", hint=f"while rendering {context.get('here', name)}") from None


def _template_frame(exc: BaseException) -> str | None:
    """``file:line`` of the innermost template frame in ``exc``'s traceback."""
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename.endswith(".j2"):
            found = f"{relpath(Path(frame.filename))}:{frame.lineno}"
    return found
