"""What a probe run produced: one :class:`ProbeResult` per probe, gathered in a :class:`ProbeReport`.

``kbgen probe --json`` prints a ProbeReport; ``schema_version`` changes whenever a field changes
meaning or disappears (adding a field does not change it).
"""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from kbgen.models import ProbeStatus

SCHEMA_VERSION: Literal[1] = 1
Scalar = str | int | float | bool | None


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProbeResult(_Model):
    """One probe's outcome. ``signal``/``exit_code``/``stderr_tail`` are set when its process died."""

    id: str
    title: str = ""
    builtin: bool = True
    status: ProbeStatus
    message: str = ""
    facts: dict[str, Scalar] = {}
    duration_s: float = 0.0
    signal: str | None = None
    exit_code: int | None = None
    stderr_tail: str | None = Field(default=None, description="the end of what the probe printed")


class Interpreter(_Model):
    executable: str
    version: str | None = None


class TorchImport(_Model):
    """How importing torch went in the worker that runs the torch probes."""

    status: Literal["ok", "missing", "crash", "timeout", "not-needed"]
    version: str | None = None
    seconds: float | None = None
    message: str = ""
    signal: str | None = None
    stderr_tail: str | None = None


class ProbeReport(_Model):
    schema_version: Literal[1] = SCHEMA_VERSION
    kbgen_version: str
    #: with its UTC offset, so reports from nodes in any time zone compare
    collected_at: AwareDatetime
    host: str
    python: Interpreter
    interpreter_error: str | None = Field(
        default=None, description="set when the interpreter could not start; no probe ran then"
    )
    torch_import: TorchImport | None = None
    wall_s: float = 0.0
    results: list[ProbeResult] = []
    problems: list[str] = Field(default=[], description="probe files that could not be read")

    def result(self, probe_id: str) -> ProbeResult | None:
        return next((r for r in self.results if r.id == probe_id), None)

    def facts(self) -> dict[str, Scalar]:
        """Every fact, flat, as ``<probe-id>.<fact>`` (the keys a bug's environment stores)."""
        return {f"{r.id}.{key}": value for r in self.results for key, value in r.facts.items()}

    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for result in self.results:
            counts[result.status.value] = counts.get(result.status.value, 0) + 1
        return counts
