"""Small helpers the command modules share."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
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
