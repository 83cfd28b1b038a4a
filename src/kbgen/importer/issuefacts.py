"""What a bug keeps of the GitHub issue it is imported from: the title without the form's prefix,
the issue's number, address, author and labels (its ``origin``), the day it was opened.

Each value is checked against the :class:`kbgen.origin.Origin` model's own types; one that is not
what ``gh`` prints is left out of the bug with a note that names it, and the issue is imported.
"""

from __future__ import annotations

import functools
import json
import re
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError

from kbgen.importer.issues import Issue
from kbgen.origin import MAX_LABELS, GithubUrl, LabelName, Login, Origin

if TYPE_CHECKING:
    from kbgen.models import Bug

#: what an issue form (or a habit) puts before the title: "[Bug]: ", "[BUG] ", "Bug: ", "[GPU] "
_TITLE_PREFIX = re.compile(
    r"^\s*(?:\[\s*(?:bug(?:\s*report)?|gpu(?:\s*(?:failure|bug|error))?|crash|failure|error)\s*\]\s*:?"
    r"|(?:bug(?:\s*report)?|gpu\s*failure)\s*:)\s*",
    re.IGNORECASE,
)


def strip_prefix(title: str) -> str:
    """The title without the form's prefix ("" when the title is nothing else)."""
    return _TITLE_PREFIX.sub("", title.strip(), count=1).strip()


def origin_of(issue: Issue, notes: list[str]) -> Origin:
    """The issue's number, address, author and labels as the bug keeps them; each value that is
    not what gh prints is left out, with a line in ``notes`` that says which and why."""
    url = issue.url
    if url is not None and not _fits(GithubUrl, url):
        notes.append(f"url left out: {_shown(url)} is not an https://github.com/OWNER/REPO/issues/N address")
        url = None
    if url is not None and not url.endswith(f"/{issue.number}"):
        notes.append(f"url left out: {_shown(url)} is the address of another issue")
        url = None
    author = issue.author.get("login") if isinstance(issue.author, dict) else issue.author
    if author is not None and not _fits(Login, author):
        notes.append(f"author left out: {_shown(author)} is not a GitHub login")
        author = None
    labels: list[str] = []
    for name in dict.fromkeys(issue.label_names()):
        if _fits(LabelName, name) and len(labels) < MAX_LABELS:
            labels.append(name)
        elif name:
            notes.append(f"label left out: {_shown(name)} is not one line of at most 100 characters")
    given = {"url": url, "author": author, "labels": labels}
    return Origin(number=issue.number, **{key: value for key, value in given.items() if value})


def _fits(kind: Any, value: Any) -> bool:
    """Whether ``value`` is one of ``kind`` (a constrained type of the Origin model)."""
    try:
        _adapter(kind).validate_python(value, strict=True)
    except ValidationError:
        return False
    return True


@functools.cache
def _adapter(kind: Any) -> TypeAdapter[Any]:
    return TypeAdapter(kind)


def _shown(value: Any) -> str:
    """A hostile value, quoted, short and on one line."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    shown = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text[:60])
    return f"'{shown}{'…' if len(text) > 60 else ''}'"


class IssueFacts:
    """What the bug keeps of the issue: created when it was opened, its origin, the import as its
    first event; then the environment hook (``then``), if any."""

    def __init__(self, issue: Issue, origin: Origin, now: Any, by: str | None, then: Any) -> None:
        self.issue, self.origin, self.now, self.by, self.then = issue, origin, now, by, then

    def __call__(self, bug: Bug) -> Bug:
        from kbgen.models import Event, EventKind

        note = f"from GitHub issue #{self.issue.number}"
        event = Event(at=self.now, kind=EventKind.imported, by=self.by, note=note)
        update: dict[str, Any] = {"origin": self.origin, "history": [event]}
        if self.issue.created_at is not None:
            update["created"] = self.issue.created_at
        bug = bug.model_copy(update=update)
        return self.then(bug) if self.then is not None else bug
