"""The issue list ``gh issue list --json number,title,body,labels,createdAt,author,url`` prints, read
as every input kbgen takes is read.

The list comes from a regular file (never a FIFO or a device) or ``-`` (standard input), and no
more than :data:`MAX_BYTES` of it is read. Each issue's shape is checked on its own (the
:class:`Issue` model): one that is not an issue is reported by its number, or by its place in the
list when it has no usable number, and the others are imported. An issue listed twice is taken
once, from its first listing. ``createdAt`` is a date and time as gh prints it, between GitHub's
first year and tomorrow (a number, or a year 1, is no issue's date); ``url`` and ``author`` are
read as they come and checked when the bug's origin is made (see :mod:`kbgen.importer.github`).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictInt,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

from kbgen.errors import KbgenError
from kbgen.fileio import Unreadable, read_limited

#: an export of tens of thousands of issues fits; a larger file is not a `gh issue list` export
MAX_BYTES = 64 * 1024 * 1024
EXPORT = "gh issue list --json number,title,body,labels,createdAt,author,url > issues.json"
_TOO_BIG_HINT = "export fewer issues at a time (gh issue list --limit N --search ...)"
_NOT_A_FILE_HINT = "kbgen reads the issue list from a regular file, or from - (standard input)"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_ISO_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def _whole_characters(text: str) -> str:
    """A JSON ``\\ud800`` without its pair is no character UTF-8 can write: U+FFFD instead."""
    return _LONE_SURROGATE.sub("\ufffd", text)


Text = Annotated[str, AfterValidator(_whole_characters)]
#: no GitHub issue is older than GitHub
FIRST_YEAR = 2008


def _date_text(value: Any) -> Any:
    """gh prints ``createdAt`` as ISO 8601 text; a number (or digits) would be read as seconds since 1970."""
    if not isinstance(value, str) or not _ISO_DAY.match(value):
        raise PydanticCustomError(
            "datetime_type", "Input should be a date and time as text (2025-11-20T10:00:00Z)"
        )
    return value


def _issue_date(value: dt.datetime) -> dt.datetime:
    from kbgen import clock

    value = value if value.tzinfo is not None else value.replace(tzinfo=dt.timezone.utc)
    if value.year < FIRST_YEAR:
        raise PydanticCustomError(
            "datetime_past", "Input should be a date from {first} on", {"first": FIRST_YEAR}
        )
    if value > clock.now() + dt.timedelta(days=1):
        raise PydanticCustomError("datetime_future", "Input should not be a date in the future")
    return value


IssueDate = Annotated[dt.datetime, BeforeValidator(_date_text), AfterValidator(_issue_date)]


class Label(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: Text = ""

    @model_validator(mode="before")
    @classmethod
    def _bare_name(cls, data: Any) -> Any:
        return {"name": data} if isinstance(data, str) else data  # "bug" for {"name": "bug"}


class Issue(BaseModel):
    """The fields of one issue kbgen reads; any other field gh prints is ignored."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    number: StrictInt = Field(ge=1, lt=2**63)
    title: Text | None = None
    body: Text | None = None
    labels: list[Label] | None = None
    created_at: IssueDate | None = Field(default=None, alias="createdAt")
    url: Any = None  # checked when the bug's origin is made: a bad one is left out, not the issue
    author: Any = None

    def label_names(self) -> list[str]:
        return [label.name for label in self.labels or []]


@dataclass
class Listed:
    """One item of the list, at ``place`` (from 1): an issue, or why it is not imported."""

    place: int
    issue: Issue | None
    number: int | None = None
    problem: str = ""
    repeat: bool = False  # the issue was listed before; ``problem`` says where

    @property
    def name(self) -> str:
        return f"#{self.number}" if self.number is not None else f"item {self.place}"


def read_issue_list(source: str) -> list[Listed]:
    """Every item of the issue list in ``source`` (a path, or ``-``); KbgenError when the file as
    a whole cannot be one."""
    name = "<stdin>" if source == "-" else source
    raw = _read_stdin() if source == "-" else _read_file(Path(source))
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise KbgenError(f"{name}: not UTF-8 text (byte {exc.start:,}); nothing was imported") from None
    try:
        data = json.loads(text)
    except RecursionError:
        raise KbgenError(
            f"{name}: nested too deeply to be an issue list; nothing was imported", hint=EXPORT
        ) from None
    except ValueError as exc:  # a number of more digits than Python converts is one too
        raise KbgenError(f"{name}: not JSON ({exc}); nothing was imported", hint=EXPORT) from None
    if not isinstance(data, list):
        raise KbgenError(
            f"{name}: {_kind(data)}, not the list of issues `gh issue list --json ...` prints; "
            "nothing was imported",
            hint=EXPORT,
        )
    return _checked(data)


def _read_file(path: Path) -> bytes:
    try:
        return read_limited(path, MAX_BYTES, "the issue list")
    except Unreadable as exc:
        # read_limited says what the file is, or that it is over the limit ("the issue list is N bytes")
        if exc.message.startswith("the issue list"):
            message, hint = f"{exc.message} (64 MiB)", _TOO_BIG_HINT
        else:
            message, hint = exc.message, _NOT_A_FILE_HINT
        raise KbgenError(f"{path}: {message}; nothing was imported", hint=hint) from None
    except OSError as exc:
        raise KbgenError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _read_stdin() -> bytes:
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        raise KbgenError("-: there is no standard input to read the issue list from")
    chunks: list[bytes] = []
    total = 0
    while chunk := stream.read(min(1 << 20, MAX_BYTES + 1 - total)):
        chunks.append(chunk)
        total += len(chunk)
        if total > MAX_BYTES:
            raise KbgenError(
                f"<stdin>: more than {MAX_BYTES:,} bytes (64 MiB); nothing was imported", hint=_TOO_BIG_HINT
            )
    return b"".join(chunks)


def _checked(data: list[Any]) -> list[Listed]:
    listed: list[Listed] = []
    first: dict[int, int] = {}  # number -> place of its first listing
    for place, item in enumerate(data, start=1):
        number = _usable_number(item)
        if not isinstance(item, dict):
            listed.append(Listed(place, None, None, f"{_kind(item)}, not an issue (a JSON object)"))
            continue
        try:
            issue = Issue.model_validate(item)
        except ValidationError as exc:
            listed.append(Listed(place, None, number, _problem(exc)))
            continue
        if issue.number in first:
            why = f"listed again as item {place}; item {first[issue.number]} is the one imported"
            listed.append(Listed(place, None, issue.number, why, repeat=True))
            continue
        first[issue.number] = place
        listed.append(Listed(place, issue, issue.number))
    return listed


def _usable_number(item: Any) -> int | None:
    number = item.get("number") if isinstance(item, dict) else None
    return number if type(number) is int and 1 <= number < 2**63 else None


def _problem(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False, include_input=False)
    first = errors[0]
    where = ".".join(str(p) for p in first["loc"]) or "(the issue)"
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    return f"{where}: {first['msg']}{more}"


def _kind(value: Any) -> str:
    kinds = {dict: "an object", list: "a list", str: "a string", bool: "true/false", type(None): "null"}
    return kinds.get(type(value), "a number")
