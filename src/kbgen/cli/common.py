"""Small helpers the command modules share."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import click

from kbgen.kinds import BUG, ERROR

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

    from kbgen.bugs.body import BodyTemplate
    from kbgen.store import Kb, Project


def project_of(ctx: click.Context) -> Project:
    """The project chosen by ``--kb``/``$KBGEN_KB``, or found by walking up from the cwd."""
    from kbgen.store import find_project

    root = ctx.find_root()
    override = (root.obj or {}).get("kb_path")
    return find_project(override=override)


def load_clean_kb(ctx: click.Context) -> Kb:
    """Load the KB and fail (listing every problem) when any file cannot be read or validated."""
    from kbgen.errors import EntryError
    from kbgen.store import load_kb

    kb = load_kb(project_of(ctx))
    if kb.problems:
        raise EntryError(kb.problems, hint="`kbgen validate` lists every problem")
    return kb


#: C0 and C1 control characters (ESC starts a terminal escape sequence), DEL, and the Unicode
#: direction overrides that make text display in another order than it is stored.
_CONTROL_RE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def one_line(text: str) -> str:
    """Record text made safe for a terminal line: tabs and line breaks become spaces, and control
    characters (terminal escape sequences, direction overrides) are dropped."""
    return _CONTROL_RE.sub(lambda m: " " if m.group(0) in "\t\n\r" else "", text)


# --------------------------------------------------------------------------- shell completion
# Called by click while the shell completes a word: file names only, no records parsed, and
# never an error (a shell completion that prints a traceback breaks the prompt).


def _ids_in(ctx: click.Context, folder: str, suffix: str = ".md") -> list[str]:
    try:
        project = project_of(ctx)
        return sorted(p.name[: -len(suffix)] for p in (project.kb / folder).glob(f"*{suffix}"))
    except Exception:  # completion must never fail loudly
        return []


def _items(ids: list[str], incomplete: str) -> list[CompletionItem]:
    from click.shell_completion import CompletionItem

    low = incomplete.lower()
    return [CompletionItem(i) for i in ids if i.lower().startswith(low)]


def complete_bug_ids(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    return _items(_ids_in(ctx, BUG.folder), incomplete)


def complete_error_ids(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    return _items(_ids_in(ctx, ERROR.folder), incomplete)


def complete_probe_ids(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    from pathlib import Path

    import kbgen

    builtin = Path(kbgen.__file__).parent / "probes" / "builtin"
    names = [p.stem.replace("_", "-") for p in builtin.glob("*.py") if not p.name.startswith("_")]
    return _items(sorted({*names, *_ids_in(ctx, "probes", ".py")}), incomplete)


def bug_template(project: Project) -> BodyTemplate:
    """The body template of a new bug (templates/bug.md.j2); an old one with frontmatter says so."""
    from kbgen.bugs.body import body_template

    loaded = body_template(project.root)
    if loaded.notice:
        click.echo(f"warning: {loaded.notice}", err=True)
    return loaded
