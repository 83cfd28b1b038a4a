"""Probes: small Python files run in a child process on the affected machine.

Public API (imported lazily so ``kbgen.probes.runner`` can start a worker before pydantic loads):

- :func:`discover` / :func:`discover_problems` / :func:`builtin_ids` (``discovery``)
- :class:`ProbeSpec` (``discovery``)
- :func:`run_probes` (``runner``) returning a :class:`ProbeReport` (``report``)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kbgen.probes.discovery import ProbeSpec, builtin_ids, discover, discover_problems, select
    from kbgen.probes.report import ProbeReport, ProbeResult
    from kbgen.probes.runner import run_probes

_EXPORTS = {
    "ProbeSpec": "discovery",
    "discover": "discovery",
    "discover_problems": "discovery",
    "builtin_ids": "discovery",
    "select": "discovery",
    "run_probes": "runner",
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
