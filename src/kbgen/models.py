"""Pydantic models of every KB record. No I/O here: the store reads and writes files.

Every model forbids unknown keys, so a typo in a frontmatter key is an error, not silence.
"""

from __future__ import annotations

import datetime as dt
import re
from enum import Enum
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, field_validator

SLUG_RE = r"^[a-z0-9][a-z0-9-]*[a-z0-9]$|^[a-z0-9]$"
BUG_ID_RE = r"^BUG-([0-9]{8})-([0-9]{3,})$"  # [0-9], not \d: other scripts' digits are no id

Slug = Annotated[str, StringConstraints(pattern=SLUG_RE, max_length=80)]
BugId = Annotated[str, StringConstraints(pattern=BUG_ID_RE)]
Text = Annotated[str, StringConstraints(max_length=200_000)]


def _aware(value: dt.datetime) -> dt.datetime:
    """A time without a UTC offset is taken as UTC, so times always compare with each other."""
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.timezone.utc)


Moment = Annotated[dt.datetime, AfterValidator(_aware)]


class Strict(BaseModel):
    """Base of every record: unknown keys are errors; values are validated on assignment."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class Likelihood(str, Enum):
    high = "high"
    medium = "medium"
    low = "low"


class Risk(str, Enum):
    low = "low"
    medium = "medium"
    high = "high"


class Status(str, Enum):
    open = "open"
    confirmed = "confirmed"
    investigating = "investigating"
    fix_in_progress = "fix-in-progress"
    fixed = "fixed"
    verified = "verified"
    wontfix = "wontfix"
    duplicate = "duplicate"


CLOSED_STATUSES = frozenset({Status.fixed, Status.verified, Status.wontfix, Status.duplicate})


class Severity(str, Enum):
    low = "low"
    medium = "medium"
    high = "high"
    critical = "critical"


class StepState(str, Enum):
    pending = "pending"
    passed = "passed"
    failed = "failed"
    skipped = "skipped"


class ProbeStatus(str, Enum):
    """What a probe run concluded. ``crash`` and ``timeout`` come from the runner, not the probe."""

    pass_ = "pass"
    warn = "warn"
    fail = "fail"
    skip = "skip"
    error = "error"
    crash = "crash"
    timeout = "timeout"


# --------------------------------------------------------------------------- knowledge


class Signature(Strict):
    """A regular expression that identifies an error type in a log line."""

    regex: str
    weight: float = Field(default=1.0, gt=0, le=10)
    note: str | None = None

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"invalid regular expression: {exc}") from None
        return value


class CauseRef(Strict):
    cause: Slug
    likelihood: Likelihood = Likelihood.medium
    note: str | None = None


class DiagnosticStep(Strict):
    """One step of an error type's diagnosis; the probe named decides it."""

    id: Slug
    title: str
    probe: Slug | None = None
    expect: str | None = None


class ErrorType(Strict):
    KIND: ClassVar[str] = "error"
    id: Slug
    title: str
    summary: str
    signatures: list[Signature] = Field(min_length=1)
    symptoms: list[str] = []
    causes: list[CauseRef] = []
    diagnostics: list[DiagnosticStep] = []
    related: list[Slug] = []
    secondary_to: list[Slug] = Field(
        default=[],
        description="error types that commonly cause this one; in a log, theirs is the primary error",
    )
    tags: list[str] = []
    sources: list[str] = []

    @field_validator("signatures", mode="before")
    @classmethod
    def _plain_strings(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"regex": v} if isinstance(v, str) else v for v in value]
        return value


class RootCause(Strict):
    KIND: ClassVar[str] = "cause"
    id: Slug
    title: str
    summary: str
    evidence: list[str] = []
    fixes: list[Slug] = []
    tags: list[str] = []
    sources: list[str] = []


class FixStep(Strict):
    title: str
    command: str | None = None
    note: str | None = None


class Fix(Strict):
    KIND: ClassVar[str] = "fix"
    id: Slug
    title: str
    summary: str
    steps: list[FixStep] = Field(min_length=1)
    risk: Risk = Risk.low
    verify_probe: Slug | None = None
    last_verified: dt.date | None = None
    tags: list[str] = []
    sources: list[str] = []


class ProbeMeta(Strict):
    """A probe's metadata: a literal ``PROBE = {...}`` dict at the top of its file."""

    id: Slug
    title: str
    description: str = ""
    needs: list[str] = Field(default=[], description="torch, cuda, or command:NAME")
    timeout: float = Field(default=30.0, gt=0, le=3600)
    default: bool = False


# --------------------------------------------------------------------------- bugs


class Facts(Strict):
    """When, where and with what interpreter the probes ran, and what they reported."""

    collected_at: Moment | None = None
    host: str | None = None
    python: str | None = None
    values: dict[str, str | int | float | bool | None] = {}


class Finding(Strict):
    probe: Slug
    status: ProbeStatus
    message: str = ""
    when: Moment | None = None


class ProgressStep(Strict):
    id: Slug
    title: str
    probe: Slug | None = None
    state: StepState = StepState.pending
    evidence: str | None = None
    when: Moment | None = None


class AttemptOutcome(str, Enum):
    worked = "worked"
    failed = "failed"
    partial = "partial"
    pending = "pending"


class FixAttempt(Strict):
    fix: Slug
    outcome: AttemptOutcome = AttemptOutcome.pending
    note: str | None = None
    date: dt.date | None = None


class EventKind(str, Enum):
    created = "created"
    status = "status"
    probe_fill = "probe-fill"
    renumber = "renumber"
    note = "note"
    imported = "imported"


class Event(Strict):
    at: Moment
    kind: EventKind
    by: str | None = None
    old: str | None = Field(default=None, alias="from")
    new: str | None = Field(default=None, alias="to")
    note: str | None = None

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Bug(Strict):
    KIND: ClassVar[str] = "bug"
    id: BugId
    title: Annotated[str, StringConstraints(min_length=1, max_length=300)]
    created: Moment
    updated: Moment
    status: Status = Status.open
    severity: Severity = Severity.medium
    error: Slug | None = None
    suspected_causes: list[Slug] = []
    confirmed_causes: list[Slug] = []
    fixes_tried: list[FixAttempt] = []
    message: Text | None = None
    environment: Facts = Facts()
    findings: list[Finding] = []
    progress: list[ProgressStep] = []
    repro: Slug | None = None
    related: list[BugId] = []
    tags: list[str] = []
    assignee: str | None = None
    aliases: list[BugId] = []
    history: list[Event] = []

    @property
    def date(self) -> str:
        """The ``YYYYMMDD`` part of the id."""
        return self.id.split("-")[1]


#: frontmatter ``kind`` → model, and the kb/ folder each kind lives in.
KINDS: dict[str, type[Strict]] = {
    "error": ErrorType,
    "cause": RootCause,
    "fix": Fix,
    "bug": Bug,
}
FOLDERS: dict[str, str] = {"error": "errors", "cause": "causes", "fix": "fixes", "bug": "bugs"}
