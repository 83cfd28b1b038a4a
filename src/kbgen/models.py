"""Pydantic models of every KB record, with no I/O; unknown keys are errors, not silence."""

from __future__ import annotations

import datetime as dt
import re
from enum import Enum
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

from kbgen.checks import MANUAL, CheckSyntaxError, parse_check
from kbgen.fingerprint import Fingerprint
from kbgen.keyfacts import KEY_FACT_KEYS
from kbgen.origin import Origin
from kbgen.vocab import CLOSED_STATUSES as CLOSED_STATUSES
from kbgen.vocab import AttemptOutcome as AttemptOutcome
from kbgen.vocab import Likelihood as Likelihood
from kbgen.vocab import ProbeStatus as ProbeStatus
from kbgen.vocab import Risk as Risk
from kbgen.vocab import Severity as Severity
from kbgen.vocab import Status as Status
from kbgen.vocab import StepState as StepState

SLUG_RE = r"^[a-z0-9][a-z0-9-]*[a-z0-9]$|^[a-z0-9]$"
#: a bug id, ``BUG-YYYYMMDD-NNN`` (day and number captured): the one place its shape is written.
#: [0-9], not \d: other scripts' digits are no id.
BUG_ID = r"BUG-([0-9]{8})-([0-9]{3,})"
BUG_ID_RE = rf"^{BUG_ID}$"
REPORT_RE = rf"^{BUG_ID}/env-[A-Za-z0-9][A-Za-z0-9._-]{{0,100}}\.json$"

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


class Record(Strict):
    """Base of the kinds of record a KB holds (see kbgen.kinds): each has an id and a title."""

    id: str
    title: str


# --------------------------------------------------------------------------- knowledge


class Signature(Strict):
    """A regular expression that identifies an error type in a log line."""

    regex: str
    weight: float = Field(default=1.0, gt=0, le=10)
    note: str | None = None
    supporting: bool = Field(
        default=False,
        description="evidence only beside another signature of the same error type; alone it matches nothing",
    )
    consequence: bool = Field(
        default=False,
        description="this error as the result of another one the log shows (an impossible allocation size)",
    )
    at_end: bool = Field(
        default=False,
        description="counts only on the log's last non-blank line: progress that stopped means a freeze",
    )

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


class Decided(Strict):
    """What decides a checklist step: ``decided_by`` passes it, ``fails_if`` fails it.

    Both are ``PROBE: CONDITION`` (see kbgen.checks); ``decided_by: manual`` means only a person
    ticks the step (``kbgen step``). ``probe`` is the probe to run for it: the one the conditions
    name, or for a manual step a probe whose report helps the person decide.
    """

    id: Slug
    title: str
    probe: Slug | None = None
    decided_by: str = MANUAL
    fails_if: str | None = None

    @model_validator(mode="after")
    def _conditions(self) -> Decided:
        try:
            passes, fails = parse_check(self.decided_by), parse_check(self.fails_if)
        except CheckSyntaxError as exc:
            raise ValueError(str(exc)) from None
        named = {c.probe for c in (passes, fails) if c is not None}
        if len(named) > 1:
            raise ValueError(f"decided_by and fails_if name different probes: {sorted(named)}")
        if named and self.probe not in (None, *named):
            raise ValueError(f"probe {self.probe!r} is not the probe that decides the step ({named.pop()})")
        if named and self.probe is None:
            object.__setattr__(self, "probe", named.pop())
        return self


class DiagnosticStep(Decided):
    """One step of an error type's diagnosis, and what decides it."""

    expect: str | None = None


class ErrorType(Record):
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
    causes_anywhere: bool = Field(
        default=False,
        description=(
            "its causes usually happen in another process (another rank), whose lines can come before"
            " or after it in a log: a cause anywhere in the log counts, not only an earlier one"
        ),
    )
    tags: list[str] = []
    sources: list[str] = []

    @field_validator("signatures", mode="before")
    @classmethod
    def _plain_strings(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"regex": v} if isinstance(v, str) else v for v in value]
        return value


class RootCause(Record):
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


class Fix(Record):
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


FactValue = str | int | float | bool


class Finding(Strict):
    probe: Slug
    status: ProbeStatus
    message: str = ""
    when: Moment | None = None


class Environment(Strict):
    """One machine the probes ran on (a host and an interpreter), its key facts and findings."""

    host: Annotated[str, StringConstraints(min_length=1, max_length=200)] = "unknown"
    python: str | None = None
    collected_at: Moment | None = None
    facts: dict[str, FactValue] = {}
    report: Annotated[str, StringConstraints(pattern=REPORT_RE)] | None = Field(
        default=None, description="the full probe report, relative to kb/bugs/: BUG-ID/env-NAME.json"
    )
    findings: list[Finding] = []
    #: set when the facts were read from a pasted report, not probed: where it was pasted
    pasted: Annotated[str, StringConstraints(max_length=200)] | None = None
    #: set when this machine cannot show the bug's error (a CUDA error, torch without CUDA): why
    cannot_reproduce: Annotated[str, StringConstraints(max_length=300)] | None = None

    @field_validator("facts", mode="before")
    @classmethod
    def _no_nulls(cls, value: Any) -> Any:
        return {k: v for k, v in value.items() if v is not None} if isinstance(value, dict) else value

    def same_machine(self, host: str, python: str | None) -> bool:
        return self.host == host and self.python == python

    def finding(self, probe: str) -> Finding | None:
        return next((f for f in self.findings if f.probe == probe), None)


class ProgressStep(Decided):
    """One step of a bug's checklist: its state and the evidence that set it."""

    state: StepState = StepState.pending
    evidence: str | None = None
    when: Moment | None = None
    host: str | None = Field(default=None, description="the machine whose evidence set the state")
    by: str | None = None


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
    step = "step"
    fix = "fix"
    migrated = "migrated"


class Event(Strict):
    at: Moment
    kind: EventKind
    by: str | None = None
    old: str | None = Field(default=None, alias="from")
    new: str | None = Field(default=None, alias="to")
    note: str | None = None

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Occurrence(BaseModel):
    """One more time a bug's crash was seen: where, when, running what, and how it ended."""

    model_config = ConfigDict(extra="forbid")

    at: AwareDatetime
    host: Annotated[str, StringConstraints(max_length=200)] | None = None
    command: Annotated[str, StringConstraints(max_length=2000)] | None = None
    exit_status: int | None = None
    by: Annotated[str, StringConstraints(max_length=200)] | None = None


class Bug(Record):
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
    environments: list[Environment] = Field(
        default=[], description="one per machine the probes ran on; the first is the failing machine"
    )
    progress: list[ProgressStep] = []
    repro: Slug | None = None
    related: list[BugId] = []
    duplicate_of: BugId | None = None
    tags: list[str] = []
    assignee: str | None = None
    aliases: list[BugId] = []
    fingerprint: Fingerprint | None = None
    occurrences: list[Occurrence] = []
    origin: Origin | None = Field(default=None, description="the GitHub issue it was imported from")
    history: list[Event] = []

    @model_validator(mode="before")
    @classmethod
    def _old_shape(cls, data: Any) -> Any:
        """Read the old single-environment shape (``environment`` + ``findings``) as one machine."""
        if not isinstance(data, dict) or not ({"environment", "findings"} & data.keys()):
            return data
        data = dict(data)
        old = data.pop("environment", None) or {}
        findings = data.pop("findings", None) or []
        if "environments" in data:
            raise ValueError("has both `environments` and the old `environment`/`findings` keys")
        if old or findings:
            data["environments"] = [legacy_environment(old, findings)]
        return data

    @property
    def date(self) -> str:
        """The ``YYYYMMDD`` part of the id."""
        return self.id.split("-")[1]

    @property
    def primary(self) -> Environment | None:
        """The failing machine: the first environment."""
        return self.environments[0] if self.environments else None

    @property
    def findings(self) -> list[Finding]:
        """The failing machine's findings."""
        return self.primary.findings if self.primary else []


def legacy_environment(old: dict[str, Any], findings: list[Any]) -> dict[str, Any]:
    """The old ``environment: {host, python, collected_at, values}`` as one Environment's data."""
    if not isinstance(old, dict):
        raise ValueError("`environment` must be a mapping")
    values = old.get("values") or {}
    env = {k: old[k] for k in ("host", "python", "collected_at") if old.get(k) is not None}
    env["facts"] = {k: v for k, v in values.items() if v is not None and k in KEY_FACT_KEYS}
    env["findings"] = findings
    return env
