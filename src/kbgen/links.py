"""The links between records, one row each: the only place a link field is written down.

A record names other records by id (a bug its error type, a cause its fixes, a checklist step
its probe). :data:`LINKS` declares each such field once, with the kind it points at; the checks
(every id named exists), the site's backward lists ("bugs with this error") and the pages a
``kbgen serve`` rebuild renders again after an edit are all derived from it. A field that names
records and is not listed here is checked by nothing and shown stale by a running preview.

Like :mod:`kbgen.kinds`, importing this module loads no pydantic.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

#: what a probe link points at: probes are files of code, not records with pages
PROBE = "probe"

#: where in a record an id is named, as pydantic and the checks write it: ("causes", 0, "cause")
Loc = tuple[Any, ...]


@dataclass(frozen=True)
class Link:
    """A field of records of kind ``source`` that names records of kind ``target`` by id.

    ``path`` says where the ids are: ``error`` (one id or none), ``related[]`` (a list of ids),
    ``causes[].cause`` (a list of objects, each naming one), ``environments[].findings[].probe``.
    ``step``: the objects are checklist steps, whose probe may be given by their ``decided_by``
    condition alone; a missing probe is then reported there. ``role``: how the target's page
    speaks of the source ("confirmed", "suspected"), where it tells links of one pair of kinds
    apart.
    """

    source: str
    path: str
    target: str
    step: bool = False
    role: str = ""
    name: str = field(init=False, compare=False)  # "bug.error", "cause.fixes", ...
    parts: list[str] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        # asked for every id of every record on each build: worked out once
        object.__setattr__(self, "name", f"{self.source}.{self.path.split('[', 1)[0]}")
        object.__setattr__(self, "parts", self.path.split("."))

    def refs(self, record: Any) -> Iterator[tuple[Loc, str, Any]]:
        """(location, id, the object naming it, or None for an id held directly) for every id
        this field of ``record`` names, in the record's order."""
        parts = self.parts
        head = parts[0].removesuffix("[]")
        value = getattr(record, head)
        if len(parts) == 1 and not parts[0].endswith("[]"):  # one id, or none
            if value:
                yield (head,), value, None
        elif len(parts) == 1:  # a list of ids
            for i, ref in enumerate(value):
                yield (head, i), ref, None
        elif len(parts) == 2 and not parts[1].endswith("[]"):  # a list of objects naming one each
            for i, item in enumerate(value):
                ref = getattr(item, parts[1])
                if ref:
                    yield (head, i, _step_key(item) if self.step else parts[1]), ref, item
        else:
            yield from _walk(record, parts, (), None, self.step)


def _walk(obj: Any, parts: list[str], loc: Loc, holder: Any, step: bool) -> Iterator[tuple[Loc, str, Any]]:
    head, rest = parts[0], parts[1:]
    name = head.removesuffix("[]")
    value = getattr(obj, name)
    if not head.endswith("[]"):
        if rest:
            yield from _walk(value, rest, (*loc, name), value, step)
        elif value:
            yield (*loc, _step_key(obj) if step else name), value, holder
        return
    for i, item in enumerate(value):
        if rest:
            yield from _walk(item, rest, (*loc, name, i), item, step)
        elif item:
            yield (*loc, name, i), item, None


def _step_key(step: Any) -> str:
    """Where a step names its probe: ``probe``, or else its ``decided_by`` condition."""
    return "probe" if "probe" in step.model_fields_set else "decided_by"


LINKS: tuple[Link, ...] = (
    Link("error", "causes[].cause", "cause"),
    Link("error", "diagnostics[].probe", PROBE, step=True),
    Link("error", "related[]", "error"),
    Link("error", "secondary_to[]", "error"),
    Link("cause", "fixes[]", "fix"),
    Link("fix", "verify_probe", PROBE),
    Link("bug", "error", "error"),
    # confirmed before suspected: a cause's page lists a bug once, as confirmed when it is
    Link("bug", "confirmed_causes[]", "cause", role="confirmed"),
    Link("bug", "suspected_causes[]", "cause", role="suspected"),
    Link("bug", "fixes_tried[].fix", "fix"),
    Link("bug", "environments[].findings[].probe", PROBE),
    Link("bug", "progress[].probe", PROBE, step=True),
    Link("bug", "repro", PROBE),
    Link("bug", "related[]", "bug"),
    Link("bug", "duplicate_of", "bug"),
)

#: the links declared by each kind of record, in :data:`LINKS` order
FROM: dict[str, tuple[Link, ...]] = {}
for _link in LINKS:
    FROM[_link.source] = (*FROM.get(_link.source, ()), _link)
#: each link by its name ("bug.error", "cause.fixes", ...)
BY_NAME: dict[str, Link] = {link.name: link for link in LINKS}


def refs(kind: str, record: Any) -> Iterator[tuple[Link, Loc, str, Any]]:
    """(link, location, id, holder) for every id ``record`` (of ``kind``) names."""
    for link in FROM.get(kind, ()):
        for loc, ref, holder in link.refs(record):
            yield link, loc, ref, holder


class RefMemo:
    """The ids each record names, kept while it is the same record object: a running
    ``kbgen serve`` walks again only the records of the files it read again."""

    def __init__(self) -> None:
        self.kept: dict[int, tuple[Any, list[tuple[Link, str, Any]]]] = {}
        self.seen: dict[int, tuple[Any, list[tuple[Link, str, Any]]]] = {}

    def of(self, kind: str, record: Any) -> list[tuple[Link, str, Any]]:
        """(link, id, holder) for every id ``record`` (of ``kind``) names."""
        kept = self.seen.get(id(record)) or self.kept.get(id(record))
        if kept is None or kept[0] is not record:
            kept = (record, [(link, ref, holder) for link, _, ref, holder in refs(kind, record)])
        self.seen[id(record)] = kept
        return kept[1]

    def forget_unseen(self) -> None:
        """Keep only the records asked about since the last call (those of the latest build)."""
        self.kept, self.seen = self.seen, {}
