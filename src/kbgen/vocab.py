"""The words a record's fields choose from: statuses, severities, step states, outcomes.

Plain enums with no pydantic, so the CLI can offer them as choices while `kbgen --help` stays
fast; the models use the same classes, so the two can never disagree.
"""

from __future__ import annotations

from enum import Enum


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


class AttemptOutcome(str, Enum):
    worked = "worked"
    failed = "failed"
    partial = "partial"
    pending = "pending"
