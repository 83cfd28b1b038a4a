"""The kinds of record a KB holds, one row each: the only place a kind's name, folder and model
are written down. Everything else (loading, validation, the site, the CLI's choices) reads them
from :data:`KINDS`.

Importing this module loads no pydantic: the CLI builds its ``--kind`` choices from it before
any command runs, so a kind's model is imported only when it is first asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from kbgen.models import Bug, ErrorType, Fix, Record, RootCause

R = TypeVar("R", bound="Record", covariant=True)


@dataclass(frozen=True)
class RecordKind(Generic[R]):
    """One kind of record: ``name`` is its ``kind`` in messages and on the command line,
    ``folder`` the kb/ sub-folder its files live in (and the site section of its pages)."""

    name: str
    folder: str
    load: Callable[[], type[R]]  # imports the model when it is needed, not before
    #: error types, causes and fixes are knowledge, which the base layer may ship; bugs belong
    #: to one project
    knowledge: bool = True

    @property
    def model(self) -> type[R]:
        return self.load()


def _error() -> type[ErrorType]:
    from kbgen.models import ErrorType

    return ErrorType


def _cause() -> type[RootCause]:
    from kbgen.models import RootCause

    return RootCause


def _fix() -> type[Fix]:
    from kbgen.models import Fix

    return Fix


def _bug() -> type[Bug]:
    from kbgen.models import Bug

    return Bug


ERROR: RecordKind[ErrorType] = RecordKind("error", "errors", _error)
CAUSE: RecordKind[RootCause] = RecordKind("cause", "causes", _cause)
FIX: RecordKind[Fix] = RecordKind("fix", "fixes", _fix)
BUG: RecordKind[Bug] = RecordKind("bug", "bugs", _bug, knowledge=False)

#: every kind by name, in the order records are loaded, checked and listed
KINDS: dict[str, RecordKind[Record]] = {k.name: k for k in (ERROR, CAUSE, FIX, BUG)}
#: the kinds a base layer may ship, and ``kbgen kb`` lists and copies
KNOWLEDGE: dict[str, RecordKind[Record]] = {n: k for n, k in KINDS.items() if k.knowledge}
