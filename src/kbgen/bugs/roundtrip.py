"""Write changed frontmatter keys back into a file without touching anything else.

Each top-level key kbgen changes is cut out of the original frontmatter text by line and replaced
with freshly dumped YAML (ruamel, round-trip style); keys it does not change keep their exact
lines, comments included, and the body keeps its exact bytes. A key the file does not have yet
goes where :func:`key_order` puts it among the keys there (at the end when it has no place).

A whole new file (``kbgen new-bug``, ``kbgen import``) is written by :func:`compose` with the same
dumper, every key set on the record in one fixed order, so the three ways a bug file is written
quote and lay out a value the same way, and a field added to the model needs no template edit.
"""

from __future__ import annotations

import datetime as dt
import io
import re
import threading
from collections.abc import Callable, Sequence
from enum import Enum
from typing import Any

from pydantic import BaseModel
from yaml.resolver import Resolver

from kbgen.errors import KbgenError
from kbgen.fileio import locked
from kbgen.kinds import R
from kbgen.store import Entry, Source, atomic_write, encode, reread

_RESOLVER = Resolver()  # PyYAML's (YAML 1.1) resolver: the one the read path uses


def plain(value: Any) -> Any:
    """Turn models, enums and tuples into the plain values YAML can write."""
    if isinstance(value, BaseModel):
        # unset, not default: a `state: pending` a person (or the template) wrote stays written
        dumped = value.model_dump(mode="python", by_alias=True, exclude_unset=True)
        return plain(dumped)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


_OTHER_BREAKS = frozenset("\r\x85\u2028\u2029")


def _styled(value: Any) -> Any:
    """Multi-line text as a literal block; a list of short one-line values on one line, ``[a, b]``."""
    from ruamel.yaml.comments import CommentedSeq
    from ruamel.yaml.scalarstring import LiteralScalarString

    if isinstance(value, str) and "\n" in value and not _OTHER_BREAKS.intersection(value):
        return LiteralScalarString(value)  # a literal block would turn \r\n into \n: those stay quoted
    if isinstance(value, dict):
        return {k: _styled(v) for k, v in value.items()}
    if isinstance(value, list):
        if value and all(_is_short_scalar(v) for v in value):
            seq = CommentedSeq(value)
            seq.fa.set_flow_style()
            return seq
        return [_styled(v) for v in value]
    return value


def _is_short_scalar(value: Any) -> bool:
    if isinstance(value, str):
        return "\n" not in value and len(value) <= 80
    return isinstance(value, int | float)  # bool too


def dump_keys(values: dict[str, Any]) -> str:
    """Dump ``{key: value}`` as a YAML block (``\\n`` newlines, trailing newline).

    A top-level key dumps to the same lines alone as among others (:func:`splice` relies on it),
    so a long list or mapping is dumped on its own and its text kept: the checklist every new bug
    of an error type starts with is dumped once per import of thousands, not once per bug.
    """
    parts: list[str] = []
    run: dict[str, Any] = {}
    for key, value in values.items():
        value = plain(value)
        shown = repr(value) if isinstance(value, list | dict) else ""
        if len(shown) < _KEEP_FROM:
            run[key] = value
            continue
        if run:
            parts.append(_dump(run))
            run = {}
        text = _DUMPED.get((key, shown))
        if text is None:
            if len(_DUMPED) >= _KEEP_AT_MOST:
                _DUMPED.clear()
            text = _DUMPED[key, shown] = _dump({key: value})
        parts.append(text)
    if run:
        parts.append(_dump(run))
    return "".join(parts)


_KEEP_FROM = 100  # characters of repr(): a shorter value costs less to dump than to keep apart
_KEEP_AT_MOST = 1024
_DUMPED: dict[tuple[str, str], str] = {}  # (key, repr of the plain value) -> its YAML


def _dump(values: dict[str, Any]) -> str:
    out = io.StringIO()
    _dumper().dump({k: _styled(v) for k, v in values.items()}, out)
    return out.getvalue()


_DUMPERS = threading.local()  # one dumper per thread, set up once (half the cost of a small dump)


def _dumper() -> Any:
    yaml = getattr(_DUMPERS, "yaml", None)
    if yaml is not None:
        return yaml
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt", pure=True)
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.default_flow_style = False
    # one timestamp shared by several fields must be written out each time, not as &id001/*id001
    yaml.representer.ignore_aliases = lambda data: True
    for kind in (dt.datetime, dt.date):
        yaml.representer.add_representer(kind, _represent_time)
    yaml.representer.add_representer(str, _represent_str)
    _DUMPERS.yaml = yaml
    return yaml


def _represent_str(representer: Any, value: str) -> Any:
    """Quote strings the YAML 1.1 reader would take for something else ('no' -> False, '1:20' -> 80)."""
    import yaml as pyyaml

    tag = _RESOLVER.resolve(pyyaml.ScalarNode, value, (True, False))
    if tag != "tag:yaml.org,2002:str":
        return representer.represent_scalar("tag:yaml.org,2002:str", value, style="'")
    return representer.represent_str(value)


def _represent_time(representer: Any, value: dt.date) -> Any:
    text = value.isoformat()
    if isinstance(value, dt.datetime) and not value.microsecond:
        text = value.isoformat(timespec="seconds")
    return representer.represent_scalar("tag:yaml.org,2002:timestamp", text)


#: the keys a person looks for first, in this order; every other field follows in the model's order
LEAD_KEYS = ("id", "title", "status", "severity", "error", "created", "updated", "assignee", "tags", "repro")


def key_order(model: type[BaseModel]) -> list[str]:
    """The order :func:`frontmatter` writes ``model``'s keys in (aliases where a field has one)."""
    names = [field.alias or name for name, field in model.model_fields.items()]
    return [k for k in LEAD_KEYS if k in names] + [k for k in names if k not in LEAD_KEYS]


def frontmatter(record: BaseModel) -> str:
    """The frontmatter text of ``record`` (without the ``---`` lines): every field it was given
    that holds a value, in :func:`key_order`, dumped as :func:`splice` dumps an update."""
    values = plain(record.model_dump(mode="python", by_alias=True, exclude_unset=True, exclude_none=True))
    return dump_keys({k: values[k] for k in key_order(type(record)) if values.get(k) not in (None, [], {})})


def compose(record: BaseModel, body: str) -> str:
    """A whole record file: ``---``, :func:`frontmatter`, ``---``, then ``body`` as given.

    The text is read back before anything is written: a value the YAML reader would take for
    something other than what the record holds is an error here, never a changed record on disk.
    """
    text = f"---\n{frontmatter(record)}---\n{body}"
    _check_reads_back(record, text)
    return text


def _check_reads_back(record: BaseModel, text: str) -> None:
    from pydantic import ValidationError

    from kbgen.yamlio import FrontmatterError, parse_document

    want = record.model_dump()
    try:
        again = type(record).model_validate(parse_document(text).data).model_dump()
    except (FrontmatterError, ValidationError) as exc:
        again = {"(unreadable)": str(exc).splitlines()[0]}
    if again != want:
        changed = sorted(k for k in {*want, *again} if want.get(k) != again.get(k))
        raise KbgenError(
            f"{want.get('id', 'the record')}: nothing was written: {', '.join(changed)} would not read back "
            "as given",
            hint="this is a kbgen bug; please report it with the value you gave",
        )


def _key_spans(source: Source) -> dict[str, tuple[int, int]]:
    """Top-level key → (first, end) line indexes within the frontmatter text, end exclusive."""
    lines = source.parsed.fm_text.split("\n")
    starts = source.parsed.key_lines.get(id(source.parsed.data), {})
    # the frontmatter text begins right after the opening '---', on the same line
    order = sorted((line, key) for key, line in starts.items() if isinstance(key, str))
    spans: dict[str, tuple[int, int]] = {}
    for index, (first, key) in enumerate(order):
        end = order[index + 1][0] if index + 1 < len(order) else len(lines)
        while end - 1 > first and _is_trivia(lines[end - 1]):
            end -= 1
        spans[key] = (first, end)
    return spans


def _is_trivia(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _keep_trailing_comment(old: list[str], block: list[str]) -> list[str]:
    """``status: open  # why`` rewritten to one line again keeps its ``# why``."""
    if len(old) != 1 or len(block) != 1:
        return block
    match = _TRAILING_COMMENT.search(old[0].rstrip("\r"))
    return [block[0] + match.group(0)] if match else block


_TRAILING_COMMENT = re.compile(r"\s+#[^'\"]*$")


#: a value for ``splice``/``save_changes`` that removes the key from the frontmatter
REMOVE: Any = type("Remove", (), {"__repr__": lambda self: "REMOVE"})()


def splice(source: Source, changes: dict[str, Any], order: Sequence[str] = ()) -> str:
    """The file's text with ``changes`` written into its frontmatter (same newline style).

    A key the file does not have yet goes before the first key ``order`` puts after it (and the
    comment lines just above that key), or at the end of the block.
    """
    lines = source.parsed.fm_text.split("\n")
    spans = _key_spans(source)
    replaced: dict[int, tuple[int, list[str]]] = {}
    new: dict[str, list[str]] = {}
    hole = None  # where the first removed key was: new keys go there (a rename stays in place)
    for key, value in changes.items():
        if value is REMOVE:
            if key in spans:
                replaced[spans[key][0]] = (spans[key][1], [])
                hole = spans[key][0] if hole is None else min(hole, spans[key][0])
            continue
        block = dump_keys({key: value}).rstrip("\n").split("\n")
        if key in spans:
            first, end = spans[key]
            replaced[first] = (end, _keep_trailing_comment(lines[first:end], block))
        else:
            new[key] = block
    if new and hole is not None:
        replaced[hole] = (replaced[hole][0], [line for block in new.values() for line in block])
        new = {}
    before, appended = _place(new, spans, lines, order)
    out: list[str] = []
    index = 0
    while index < len(lines):
        out.extend(before.pop(index, []))
        if index in replaced:
            end, block = replaced[index]
            out.extend(block)
            index = end
        else:
            out.append(lines[index])
            index += 1
    if appended:
        # the frontmatter text ends with the newline before the closing '---'
        tail = out.pop() if out and out[-1] == "" else None
        out.extend(appended)
        if tail is not None:
            out.append(tail)
    fm_text = "\n".join(line.rstrip("\r") for line in out)
    if source.newline == "\r\n":
        fm_text = fm_text.replace("\n", "\r\n")
    text = source.text
    fm_end = source.parsed.fm_start + len(source.parsed.fm_text)
    return text[: source.parsed.fm_start] + fm_text + text[fm_end:]


def _place(
    new: dict[str, list[str]], spans: dict[str, tuple[int, int]], lines: list[str], order: Sequence[str]
) -> tuple[dict[int, list[str]], list[str]]:
    """Where each new key's lines go: {line index: lines to insert before it}, and the rest."""
    rank = {key: i for i, key in enumerate(order)}
    before: dict[int, list[str]] = {}
    appended: list[str] = []
    for key, block in sorted(new.items(), key=lambda item: rank.get(item[0], len(rank))):
        later = [spans[k][0] for k in spans if key in rank and rank.get(k, -1) > rank[key]]
        if not later:
            appended.extend(block)
            continue
        at = min(later)
        while at > 1 and lines[at - 1].lstrip().startswith("#"):
            at -= 1
        before.setdefault(at, []).extend(block)
    return before, appended


def save_changes(source: Source, changes: dict[str, Any], order: Sequence[str] = ()) -> bool:
    """Splice ``changes`` into the file atomically; False when nothing would change.

    Raises ConflictError if the file changed on disk since ``source`` was read.
    """
    text = splice(source, changes, order)
    if text == source.text:
        return False
    atomic_write(source.path, encode(text, bom=source.bom), expect_digest=source.digest)
    return True


def update_entry(
    entry: Entry[R], make: Callable[[Entry[R]], dict[str, Any]]
) -> tuple[Entry[R], dict[str, Any]]:
    """Read the record again and write ``make(fresh)``'s changes, holding the file's lock from the
    read to the rename: two kbgen writers of one file take turns and neither loses the other's
    change. Returns the record as read and the changes written (empty when none were needed)."""
    with locked(entry.path):
        fresh = reread(entry)
        changes = make(fresh)
        if not changes or not save_changes(fresh.source, changes, key_order(type(fresh.record))):
            return fresh, {}
    return fresh, changes
