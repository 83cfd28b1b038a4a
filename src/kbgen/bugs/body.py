"""The text of a new bug file: the frontmatter from the Bug's fields, the body from ``bug.md.j2``.

``kbgen new-bug`` (and ``import --github``, ``adopt``) write the file with
:func:`kbgen.bugs.roundtrip.compose`, the writer ``kbgen import`` and every update use, so a field set
on the record is written the same way by all of them. ``templates/bug.md.j2`` holds only the
Markdown body (:meth:`BodyTemplate.body`); it is found like the site's page templates (the
project's ``templates/`` first, then kbgen's) and rendered with :mod:`kbgen.templating`'s filters
and Jinja's default whitespace rules. Writing a bug never loads the site.

A project's own ``bug.md.j2`` from before still starts with a frontmatter block. It keeps working:
the block is left out (its lines are blanked, so errors still name the right line) and kbgen says
which lines to delete; the frontmatter written is always the one made from the record.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbgen.errors import relpath
from kbgen.models import Bug

TEMPLATE = "bug.md.j2"

# Jinja comments (and blank space) a template may start with before its first line of output
_LEADING_COMMENTS = re.compile(r"(?:\s*\{#.*?#\})*\s*", re.DOTALL)


@dataclass
class BodyTemplate:
    """The loaded body template, and a notice for the person when it is an old one."""

    template: Any  # jinja2.Template
    notice: str = ""

    def body(self, bug: Bug, error: Any = None) -> str:
        """The Markdown below the frontmatter: a blank line, then the rendered template."""
        from kbgen import templating

        text = templating.render_template(self.template, TEMPLATE, bug=bug, error=error)
        return "\n" + text.lstrip("\n")


def body_template(project_root: Path | None) -> BodyTemplate:
    """Load ``bug.md.j2`` from the templates' search path."""
    import jinja2

    from kbgen import templating

    # Jinja's default whitespace rules: a block tag keeps its newline unless it says `{%-`, as
    # bug.md.j2 has always been written
    dirs = templating.template_dirs(project_root)
    env = templating.make_environment(dirs, trim_blocks=False, lstrip_blocks=False)
    assert env.loader is not None
    try:
        source, filename, _ = env.loader.get_source(env, TEMPLATE)
    except jinja2.TemplateNotFound:
        return BodyTemplate(templating.load(env, TEMPLATE))  # raises the search path's message
    block = old_frontmatter(source)
    if block is None:
        return BodyTemplate(templating.load(env, TEMPLATE))
    first, last = block  # the old block used a `yaml` filter the environment no longer has
    lines = source.split("\n")
    blanked = "\n".join("" if first <= i <= last else line for i, line in enumerate(lines))
    try:
        code = env.compile(blanked, TEMPLATE, filename)
    except jinja2.TemplateSyntaxError as exc:
        raise templating.syntax_error(exc, TEMPLATE) from None
    body = env.template_class.from_code(env, code, env.make_globals(None))
    where = relpath(Path(filename)) if filename else TEMPLATE
    notice = (
        f"{where}:{first + 1}: lines {first + 1}-{last + 1} are a frontmatter block kbgen no longer "
        "uses (it writes the frontmatter from the bug's fields); delete them to keep only the body"
    )
    return BodyTemplate(body, notice)


def old_frontmatter(source: str) -> tuple[int, int] | None:
    """The first and last line index of a ``---`` … ``---`` block a template starts with, if any."""
    match = _LEADING_COMMENTS.match(source)
    start = match.end() if match else 0
    if source[start:].split("\n", 1)[0].rstrip() != "---":
        return None
    lines = source.split("\n")
    first = source.count("\n", 0, start)
    last = next((i for i in range(first + 1, len(lines)) if lines[i].rstrip() == "---"), None)
    return None if last is None else (first, last)
