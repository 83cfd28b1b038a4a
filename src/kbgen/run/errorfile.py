"""The error file a torchrun child leaves (``TORCHELASTIC_ERROR_FILE``), read as an untrusted record.

The command writes it, so it can be anything: a link to ``/dev/zero``, a FIFO that never gets a
writer, a gigabyte, JSON nested a million deep, or JSON of another shape. Only a regular file that
is not a link is opened, never more than :data:`MAX_BYTES` is read, and the JSON must have the shape
``torch.distributed.elastic`` writes; anything else is set aside with a reason, never raised.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

#: an error file is a message and a traceback; more than this is not one
MAX_BYTES = 1024 * 1024
#: the variable torchrun reads to learn where a failing child's error goes
VARIABLE = "TORCHELASTIC_ERROR_FILE"


@dataclass(frozen=True)
class ErrorFile:
    """What was read: ``text`` (the child's traceback and message) or ``note`` (why it was set aside)."""

    text: str | None = None
    note: str | None = None


def _shapes() -> Any:
    """The pydantic model of the file, built on first use (pydantic is slow to import)."""
    from pydantic import BaseModel, ConfigDict

    class _Strict(BaseModel):
        model_config = ConfigDict(strict=True, extra="ignore")

    class ExtraInfo(_Strict):
        py_callstack: str | None = None

    class Message(_Strict):
        message: str = ""
        extraInfo: ExtraInfo | None = None  # torch's key

    class Record(_Strict):
        message: str | Message | None = None

    return Record


_JSON_TYPES = {"list": "an array", "str": "a string", "float": "a number", "bool": "true or false"}
_SHOULD = {"string_type": "should be a string", "model_type": "should be an object"}


def _problem(errors: list[ErrorDetails]) -> str:
    """The deepest of pydantic's findings as ``message.extraInfo: should be an object``."""
    first = max(errors, key=lambda e: len(e["loc"]))
    # pydantic names the branch of a union it tried ("str", "Message"); a reader knows only keys
    where = ".".join(str(part) for part in first["loc"] if part not in ("str", "Message"))
    return f"{where or 'the file'}: {_SHOULD.get(first['type'], first['msg'])}"


def _clean(text: str) -> str:
    """Text that encodes as UTF-8: a lone surrogate from a ``\\udxxx`` escape becomes ``?``."""
    return text.encode("utf-8", errors="replace").decode("utf-8")


def read(path: Path) -> ErrorFile:
    """The message and traceback a torchrun child (``@record``) wrote to ``path``, or why not."""
    from pydantic import ValidationError

    from kbgen.fileio import Unreadable, read_limited_nofollow

    try:
        raw = read_limited_nofollow(path, MAX_BYTES, "the file")
    except FileNotFoundError:
        return ErrorFile()  # the usual case: the command is not a torchrun child, or did not fail there
    except Unreadable as exc:
        return ErrorFile(note=exc.message)
    except OSError as exc:
        return ErrorFile(note=f"cannot read it: {exc.strerror or exc}")
    try:
        # ints are never used: parsing them as floats keeps a 500,000-digit number from costing minutes
        data = json.loads(raw.decode("utf-8", errors="replace"), parse_int=float)
    except RecursionError:
        return ErrorFile(note="not JSON kbgen reads: nested too deeply")
    except ValueError as exc:
        return ErrorFile(note=f"not JSON: {getattr(exc, 'msg', 'cannot be parsed')}")
    if not isinstance(data, dict):
        kind = _JSON_TYPES.get(type(data).__name__, "null")
        return ErrorFile(note=f"not the shape torchrun writes: {kind}, not an object")
    try:
        record = _shapes().model_validate(data)
    except ValidationError as exc:
        return ErrorFile(note=f"not the shape torchrun writes: {_problem(exc.errors())}")
    except RecursionError:  # pragma: no cover - pydantic stops at its own depth first
        return ErrorFile(note="not JSON kbgen reads: nested too deeply")
    message = record.message
    if message is None or isinstance(message, str):
        return ErrorFile(text=_clean(message) if message else None)
    stack = message.extraInfo.py_callstack if message.extraInfo else None
    text = f"{stack}\n{message.message}" if stack else message.message
    return ErrorFile(text=_clean(text) if text else None)
