"""The seen-before fields of a bug record: its fingerprint and its occurrences."""

from __future__ import annotations

from typing import Annotated

from pydantic import AwareDatetime, BaseModel, ConfigDict, StringConstraints

from kbgen.seen.fingerprint import Fingerprint

__all__ = ["Fingerprint", "Occurrence"]


class Occurrence(BaseModel):
    """One more time a bug's crash was seen: where, when, running what, and how it ended."""

    model_config = ConfigDict(extra="forbid")

    at: AwareDatetime
    host: Annotated[str, StringConstraints(max_length=200)] | None = None
    command: Annotated[str, StringConstraints(max_length=2000)] | None = None
    exit_status: int | None = None
    by: Annotated[str, StringConstraints(max_length=200)] | None = None
