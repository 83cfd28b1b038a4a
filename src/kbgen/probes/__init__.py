"""Probes: small Python files run in a child process on the affected machine.

A probe file (built-in: ``kbgen/probes/builtin/<id with _>.py``; a project's: ``kb/probes/<id>.py``)
holds a literal metadata dict, read with ``ast.literal_eval`` and never executed by kbgen, and a
``run()`` function executed only in the interpreter under test::

    PROBE = {"id": "my-check", "title": "...", "description": "...",
             "needs": ["torch"], "timeout": 30, "default": False}

    def run():
        import torch  # imports inside run(): the file must load without torch
        return {"status": "pass", "message": "...", "facts": {"version": torch.__version__}}

Probe code uses the standard library and torch only (kbgen need not be installed there).
``status`` is pass, warn, fail, skip or error; the runner adds crash and timeout. ``needs``:
``torch`` (skipped where torch does not import), ``torch?`` (uses torch when it can), ``cuda``
(skipped without a CUDA device), ``command:NAME`` (skipped when NAME is not on PATH). Facts are
scalars, stored flat in a bug as ``<probe-id>.<fact>``.

Public API (imported lazily so ``kbgen.probes.runner`` can start a worker before pydantic loads):
:func:`discover`, :func:`discover_problems`, :func:`builtin_ids`, :class:`ProbeSpec`,
:func:`run_probes` returning a :class:`ProbeReport`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kbgen.probes.build import run_probes
    from kbgen.probes.discovery import ProbeSpec, builtin_ids, discover, discover_problems, select
    from kbgen.probes.report import ProbeReport, ProbeResult

_EXPORTS = {
    "ProbeSpec": "discovery",
    "discover": "discovery",
    "discover_problems": "discovery",
    "builtin_ids": "discovery",
    "select": "discovery",
    "run_probes": "build",
    "ProbeReport": "report",
    "ProbeResult": "report",
}

__all__ = [
    "ProbeReport",
    "ProbeResult",
    "ProbeSpec",
    "builtin_ids",
    "discover",
    "discover_problems",
    "run_probes",
    "select",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kbgen.probes' has no attribute {name!r}")
    return getattr(importlib.import_module(f"kbgen.probes.{module}"), name)
