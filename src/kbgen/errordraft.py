"""``kbgen new-error --from-log``: draft an error type in the project's kb/errors/ from a log.

The draft's one signature is the log's error line, generalised: hex addresses, paths, sizes
and numbers become wildcards, the rest stays literal (quoted names too: they are what tells
one error from another). It must match the line it came from and none of the negative lines
kbgen ships (real error lines that are no GPU failure, and ordinary log output): a signature
that matches those would name every log. The record has the sections a person fills in
(symptoms, causes, diagnostics, sources) and ``validate`` checks it like any other.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import re2

from kbgen.errors import KbgenError

if TYPE_CHECKING:
    from kbgen.errors import Problem
    from kbgen.store import Kb

NEGATIVES = Path(__file__).resolve().parent / "knowledge" / "data" / "negative-lines.json"
MAX_NEGATIVES_BYTES = 4 << 20
#: the literal part of the error line a signature keeps (longer lines are cut at a word)
MAX_LITERAL = 200
MIN_LITERAL = 12

# Pieces of an error line that change from run to run, most specific first, with the RE2
# pattern that stands for each in the signature.
_VARIABLE = re2.compile(
    r"(0x[0-9a-fA-F]+)"
    r"|((?:[A-Za-z]:)?(?:[\\/][^\\/\s'\"(),:;]+){2,}[\\/]?)"
    r"|(\d+(?:\.\d+)?\s?(?:[KMGTP]i?B|bytes|B)\b)"
    r"|([0-9a-f]{12,})"
    r"|(\d+(?:\.\d+)?)"
)
_WILDCARDS = (
    r"0x[0-9a-fA-F]+",
    r"\S+",
    r"[0-9.]+ ?[KMGTP]?i?B(?:ytes)?",
    r"[0-9a-f]+",
    r"[0-9]+(?:\.[0-9]+)?",
)
_SPECIAL = frozenset("\\.^$|?*+()[]{}")
_SLUG_WORD = re2.compile(r"[A-Za-z][A-Za-z]{2,}")
_DROP = frozenset(
    ("the", "and", "for", "with", "from", "that", "this", "was", "were", "not", "error", "could", "because")
)


@dataclass(frozen=True)
class Draft:
    id: str
    title: str
    line: str  # the error line the signature was generalised from
    regex: str
    text: str  # the whole file


def generalise(line: str) -> str:
    """``line`` as an RE2 pattern: variable parts as wildcards, the rest literal."""
    out, at = [], 0
    for found in _VARIABLE.finditer(line):
        out.append(_escape(line[at : found.start()]))
        group = next(i for i in range(1, 6) if found.group(i) is not None)
        out.append(_WILDCARDS[group - 1])
        at = found.end()
    out.append(_escape(line[at:]))
    return "".join(out)


def _escape(text: str) -> str:
    return "".join(f"\\{c}" if c in _SPECIAL else c for c in text)


def error_line(text: str) -> str | None:
    """The line the draft is made from: the last Python exception, else the last error-like line."""
    from kbgen.triage.pyerror import last_error
    from kbgen.triage.verdict import last_errorish_line

    failure = last_error(text)
    if failure is not None:
        return f"{failure.name}: {failure.message}" if failure.message else failure.name
    return last_errorish_line(text)


def draft_error(kb: Kb, text: str, source: str, *, error_id: str | None, title: str | None) -> Draft:
    """A draft error type for the log ``text``; raises KbgenError when none can be made safely."""
    from kbgen.redact import redact_text
    from kbgen.triage.signatures import SignatureError, compile_exact

    line = error_line(text)
    if not line:
        raise KbgenError(
            f"{source}: no error line found (no Python exception, no line saying error or failed)"
        )
    line = redact_text(_cut(line.strip()))
    if len(line) < MIN_LITERAL:
        raise KbgenError(f"{source}: the error line '{line}' is too short to tell this error from others")
    regex = generalise(line)
    try:
        exact = compile_exact(regex)
    except SignatureError as exc:  # pragma: no cover - generalise only writes RE2 syntax
        raise KbgenError(f"{source}: the generalised line is no valid signature: {exc}") from None
    if not exact.search(line):  # pragma: no cover - a bug in generalise, never the user's
        raise KbgenError(f"{source}: the generalised signature does not match its own line")
    hit = next((neg for neg in negative_lines() if exact.search(neg)), None)
    if hit is not None:
        raise KbgenError(
            f"{source}: the error line '{line}' is too generic: its signature also matches '{hit}', "
            "a line that is no GPU failure",
            hint="write the error type by hand (`kbgen kb copy` shows a complete one to start from)",
        )
    error_id = error_id or slug_for(line)
    _check_free(kb, error_id)
    title = title or _title(line)
    return Draft(error_id, title, line, regex, _render(error_id, title, line, regex, source))


def _cut(line: str) -> str:
    if len(line) <= MAX_LITERAL:
        return line
    cut = line[:MAX_LITERAL]
    return cut[: cut.rfind(" ")] if " " in cut[MIN_LITERAL:] else cut


def slug_for(line: str) -> str:
    """An id from the error line: the exception's name without ``Error``, then the message's
    first distinctive words (``linalg-cholesky-factorization-could-completed``)."""
    head, sep, message = _VARIABLE.sub(" ", line).partition(": ")
    name = head.strip("_").removesuffix("Error").removesuffix("Exception").lower() if sep else ""
    words = [w.lower() for w in _SLUG_WORD.findall(message if sep else line)]
    kept: list[str] = [name] if name.isalnum() else []
    for word in words:
        if word not in _DROP and word not in kept and len(kept) < 5:
            kept.append(word)
    return "-".join(kept)[:60].strip("-") or "new-error"


def _title(line: str) -> str:
    title: str = _VARIABLE.sub("N", line)
    return title if len(title) <= 100 else title[: title.rfind(" ", 0, 100)].rstrip(" (,:;") + " …"


def _check_free(kb: Kb, error_id: str) -> None:
    import re

    from kbgen.models import SLUG_RE

    if len(error_id) > 80 or not re.fullmatch(SLUG_RE, error_id):
        raise KbgenError(f"'{error_id}' is no valid id (lower-case words joined by '-')")
    if error_id in kb.errors:
        where = kb.project.rel(kb.errors[error_id].path)
        raise KbgenError(
            f"{error_id}: an error type with this id exists ({where})", hint="choose another with --id"
        )


def _render(error_id: str, title: str, line: str, regex: str, source: str) -> str:
    from kbgen.bugs.roundtrip import dump_keys

    front: dict[str, Any] = {
        "id": error_id,
        "title": title,
        "summary": f"Drafted by kbgen new-error from {Path(source).name} on {dt.date.today():%Y-%m-%d}: "
        "say in a sentence what fails and why.",
        "signatures": [{"regex": regex, "weight": 8, "note": f"generalised from: {line}"}],
        "symptoms": [],
        "causes": [],
        "diagnostics": [],
        "tags": ["draft"],
        "sources": [],
    }
    body = (
        f"# {title}\n\n"
        "<!-- What the error means, in two or three sentences. -->\n\n"
        "## Causes\n\n"
        "<!-- Name the causes under `causes:` (`kbgen kb list --kind cause`), most likely first. -->\n\n"
        "## What helps\n\n"
        "<!-- The fixes that worked, with the commands; link them from the causes. -->\n"
    )
    return f"---\n{dump_keys(front)}---\n\n{body}"


def write_draft(kb: Kb, draft: Draft) -> Path:
    """Write the draft as kb/errors/<id>.md, never through a link and never over a file."""
    from kbgen import nofollow
    from kbgen.fileio import new_file_mode

    parts = [*kb.project.folder("error").relative_to(kb.project.root).parts]
    name = f"{draft.id}.md"
    try:
        with nofollow.folder(kb.project.root, parts, create=True) as fd:
            assert fd is not None
            nofollow.write_file(fd, name, draft.text.encode("utf-8"), new_file_mode(), over=None)
    except nofollow.Blocked as exc:
        raise KbgenError(f"{exc.where}: {exc.message}") from None
    except FileExistsError:
        raise KbgenError(
            f"{'/'.join(parts)}/{name} exists already", hint="choose another id with --id"
        ) from None
    return kb.project.folder("error") / name


@functools.cache
def negative_lines() -> tuple[str, ...]:
    """The shipped negative lines (empty when the file is missing or broken: validate says so)."""
    try:
        return tuple(_read_negatives()["lines"])
    except (OSError, ValueError, KeyError, TypeError):
        return ()


def _read_negatives() -> dict[str, Any]:
    from kbgen.fileio import read_limited

    data = json.loads(read_limited(NEGATIVES, MAX_NEGATIVES_BYTES).decode("utf-8"))
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return data


def problems() -> list[Problem]:
    """``kbgen validate``'s check of the negative lines file."""
    from kbgen import layers
    from kbgen.errors import Problem

    if layers.base_dir() is None:
        return []
    where = f"{layers.BASE_LABEL}/data/{NEGATIVES.name}"
    try:
        data = _read_negatives()
    except (OSError, ValueError) as exc:
        return [Problem(where, None, None, f"cannot be read: {exc}", code="data")]
    lines = data.get("lines")
    if not isinstance(lines, list) or not lines or not all(isinstance(x, str) and x for x in lines):
        return [Problem(where, None, None, "needs 'lines': a list of non-empty strings", code="data")]
    if not isinstance(data.get("sources"), list) or not data.get("refreshed"):
        return [Problem(where, None, None, "needs 'sources' (a list) and 'refreshed' (a date)", code="data")]
    return []
