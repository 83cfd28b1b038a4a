"""The two layers a KB is read from: the base knowledge shipped in the package, then the project.

The base layer (``kbgen/knowledge/{errors,causes,fixes,probes}``) holds the error types, root
causes, fixes and general probes every team needs; ``pip install -U kbgen`` updates it. A
project's ``kb/`` holds its bugs and whatever it adds; a project record with the id of a base
record overrides it. Base records are read-only: ``kbgen kb copy ID`` forks one into ``kb/``.

``$KBGEN_BASE=off`` reads the project alone (a KB that carries all of its own knowledge).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

BASE_ENV = "KBGEN_BASE"
BASE = "base"
PROJECT = "project"
#: how a base file is named in messages and on pages
BASE_LABEL = "kbgen/knowledge"


def base_dir() -> Path | None:
    """The shipped knowledge folder, or None when ``$KBGEN_BASE`` turns the base layer off."""
    if os.environ.get(BASE_ENV, "").strip().lower() in ("off", "0", "no", "false", "none"):
        return None
    return _knowledge()


@functools.cache
def _knowledge() -> Path:
    return Path(__file__).resolve().parent / "knowledge"


def folders(kb: Path, name: str) -> list[tuple[str, Path]]:
    """``(layer, folder)`` for the sub-folder ``name`` (``errors``, ``probes``...), base first."""
    base = base_dir()
    found = [(BASE, base / name)] if base is not None else []
    return [*found, (PROJECT, kb / name)]


def base_rel(path: Path) -> str | None:
    """``kbgen/knowledge/errors/x.md`` for a file of the base layer, None for any other file."""
    base = base_dir()
    if base is None:
        return None
    full = os.path.abspath(path)  # noqa: PTH100
    if not full.startswith(str(base)):  # a project file: the site asks for thousands of them
        return None
    try:
        rel = Path(full).relative_to(base)
    except ValueError:
        return None
    return f"{BASE_LABEL}/{rel.as_posix()}"
