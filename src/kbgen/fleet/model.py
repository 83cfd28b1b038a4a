"""What the fleet stores per node: the newest probe report, the last attempt, a bounded history."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from kbgen.probes.report import ProbeReport, Scalar

SCHEMA_VERSION: Literal[1] = 1
#: Summaries of earlier reports kept per node; older ones are dropped.
HISTORY_LIMIT = 20
#: Other machines kept per host name (the newest report of each); older ones are dropped.
OTHERS_LIMIT = 8

AttemptStatus = Literal["ok", "failed", "unreachable", "timeout"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NodeAttempt(_Model):
    """One try at probing a node, whatever came of it."""

    node: str
    engine: str
    at: AwareDatetime
    status: AttemptStatus
    error: str = ""
    report: ProbeReport | None = None


class HistoryItem(_Model):
    collected_at: AwareDatetime
    engine: str
    facts: dict[str, Scalar] = {}


class OtherMachine(_Model):
    """The newest report of another machine that gave the same host name (a re-installed node,
    a second container on one host): kept beside the node's own, never merged into it."""

    machine: str
    collected_at: AwareDatetime
    engine: str
    facts: dict[str, Scalar] = {}


class NodeHead(BaseModel):
    """What ``fleet show`` and the site need of a node file; the full report is not validated."""

    model_config = ConfigDict(extra="ignore")

    node: str
    engine: str = ""
    collected_at: AwareDatetime | None = None
    facts: dict[str, Scalar] = {}
    last_attempt: NodeAttempt | None = Field(default=None, description="the newest try, report left out")
    machine: str | None = Field(
        default=None, description="which machine the report is from (see facts.machine_of)"
    )
    others: list[OtherMachine] = Field(default=[], description="other machines that gave this host name")


class NodeRecord(NodeHead):
    """``kb/fleet/<node>.json``: newest report wins; a failed try never erases a good report.

    ``collected_at`` and ``facts`` are the newest report's, kept on top so a reader of many
    nodes need not validate every full report.
    """

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = SCHEMA_VERSION
    report: ProbeReport | None = None
    history: list[HistoryItem] = []


class Drift(_Model):
    fact: str
    value: Scalar
    majority: Scalar
    reason: str


class NodeView(_Model):
    """One row of ``kbgen fleet show --json``: a node, or another machine that gave its host name."""

    host: str
    machine: str = ""
    other: bool = Field(default=False, description="another machine's row, not the node's own report")
    shared: str = Field(
        default="", description="set when several machines gave this host name: which this is"
    )
    collected_at: dt.datetime | None
    status: str
    error: str = ""
    facts: dict[str, Scalar] = {}
    drift: list[Drift] = []
