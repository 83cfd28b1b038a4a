"""Small helpers the command modules share."""

from __future__ import annotations

import re
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


#: C0 and C1 control characters (ESC starts a terminal escape sequence), DEL, and the Unicode
#: direction overrides that make text display in another order than it is stored.
_CONTROL_RE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def one_line(text: str) -> str:
    """Record text made safe for a terminal line: tabs and line breaks become spaces, and control
    characters (terminal escape sequences, direction overrides) are dropped."""
    return _CONTROL_RE.sub(lambda m: " " if m.group(0) in "\t\n\r" else "", text)
