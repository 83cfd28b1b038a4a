"""What a probe run hands back: plain data, no pydantic, so the runner can fill it before kbgen loads.

:mod:`kbgen.probes.build` turns a :class:`ProbeRun` into the redacted, versioned report.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class RawResult:
    """One probe's outcome as the runner saw it, before redaction and validation."""

    status: str
    message: str = ""
    facts: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    signal: str | None = None
    exit_code: int | None = None
    output: str | None = None


@dataclass
class ProbeRun:
    """Everything one run of probes produced, keyed by probe id."""

    python: str
    python_version: str | None = None
    interpreter_error: str | None = None
    #: how importing torch went in the torch worker (the fields of ``report.TorchImport``)
    torch_import: dict[str, Any] | None = None
    wall: float = 0.0
    results: dict[str, RawResult] = field(default_factory=dict)
