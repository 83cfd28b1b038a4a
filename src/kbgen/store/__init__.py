"""Find the KB, load its files into validated records, and write files back safely.

Reads go through libyaml (fast); writes splice only the frontmatter keys kbgen owns into the
original text, so the body's bytes and every other line a person wrote stay exactly as they were.
"""

from __future__ import annotations

import errno
import gc
import hashlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Protocol, overload

from pydantic import ValidationError

from kbgen import layers
from kbgen.errors import EntryError, KbgenError, KbNotFoundError, Problem, UnknownIdError, relpath
from kbgen.fileio import MAX_ENTRY_BYTES, Unreadable, atomic_write, read_limited
from kbgen.kinds import BUG, CAUSE, ERROR, FIX, KINDS, KNOWLEDGE, R, RecordKind
from kbgen.models import BUG_ID_RE, SLUG_RE, Bug, ErrorType, Fix, Record, RootCause
from kbgen.store.leftovers import set_aside_leftovers
from kbgen.yamlio import FrontmatterError, Parsed, parse_document, validation_problems

__all__ = ["MAX_ENTRY_BYTES", "atomic_write"]  # kept here for the modules that write records
KB_ENV = "KBGEN_KB"
BOM = "\ufeff"


@dataclass(frozen=True)
class Project:
    """A folder holding ``kb/`` (and, optionally, ``templates/`` and ``mkdocs.yml``)."""

    root: Path

    @property
    def kb(self) -> Path:
        return self.root / "kb"

    def folder(self, kind: RecordKind[Record] | str) -> Path:
        return self.kb / (KINDS[kind] if isinstance(kind, str) else kind).folder

    @property
    def probes(self) -> Path:
        return self.kb / "probes"

    def rel(self, path: Path) -> str:
        return layers.base_rel(path) or relpath(path, self.root)


def find_project(start: Path | None = None, override: str | os.PathLike[str] | None = None) -> Project:
    """Walk up from ``start`` to the first folder with a ``kb/``; ``override``/$KBGEN_KB win."""
    chosen = override or os.environ.get(KB_ENV)
    if chosen:
        path = Path(chosen).expanduser().resolve()
        if path.name == "kb" and path.is_dir():
            return Project(path.parent)
        if (path / "kb").is_dir():
            return Project(path)
        raise KbNotFoundError(
            f"{chosen}: no kb/ folder there", hint="point --kb (or $KBGEN_KB) at a project or its kb/"
        )
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "kb").is_dir():
            return Project(folder)
    raise KbNotFoundError(
        f"no kb/ folder in {here} or any folder above it",
        hint="run kbgen inside a project, or pass --kb PATH (or set $KBGEN_KB)",
    )


# --------------------------------------------------------------------------- reading


@dataclass
class Source:
    """What was read from disk, kept so a later write can splice and detect conflicts."""

    path: Path
    digest: str
    text: str
    parsed: Parsed
    bom: bool
    newline: str
    rel: str = ""  # the path as messages show it

    @property
    def body(self) -> str:
        return self.parsed.body


@dataclass(frozen=True)
class Entry(Generic[R]):
    """A record, the file it was read from and its kind: ``Entry[Bug]`` holds a Bug."""

    record: R
    source: Source
    kind: RecordKind[R]

    @property
    def path(self) -> Path:
        return self.source.path


def check_id(value: str, kind: str) -> str:
    """Refuse anything that is not a plain id before it can become part of a path."""
    pattern = BUG_ID_RE if kind == "bug" else SLUG_RE
    if not re.fullmatch(pattern, value or ""):
        shape = "BUG-YYYYMMDD-NNN" if kind == "bug" else "lowercase letters, digits and dashes"
        raise UnknownIdError(f"{value!r} is not a valid {kind} id (expected {shape})")
    return value


def _read_bounded(path: Path, rel: str) -> bytes:
    """The file's bytes: only a regular file, never more than MAX_ENTRY_BYTES of it."""
    try:
        return read_limited(path, MAX_ENTRY_BYTES)
    except Unreadable as exc:
        raise EntryError([Problem(rel, None, None, exc.message, code="io")]) from None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOENT) and path.is_symlink():
            message = "broken or looping symbolic link"
        else:
            message = f"cannot read: {exc.strerror or exc}"
        raise EntryError([Problem(rel, None, None, message, code="io")]) from None


def id_matches_file(record_id: str, path: Path) -> bool:
    """A file is named after its id; a bug's name may add a ``-title-words`` tail."""
    stem = path.stem
    return stem == record_id or (record_id.startswith("BUG-") and stem.startswith(record_id + "-"))


def read_source(path: Path, rel: str) -> Source:
    """Read and parse one file; raise EntryError with the file and line when it is broken."""
    raw = _read_bounded(path, rel)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise EntryError(
            [
                Problem(
                    rel,
                    line,
                    None,
                    f"not UTF-8: byte 0x{raw[exc.start]:02x} at offset {exc.start}; save the file as UTF-8",
                    code="encoding",
                )
            ]
        ) from None
    bom = text.startswith(BOM)
    if bom:
        text = text[1:]
    try:
        parsed = parse_document(text)
    except FrontmatterError as exc:
        raise EntryError([Problem(rel, exc.line, None, str(exc), code="frontmatter")]) from None
    newline = "\r\n" if "\r\n" in parsed.fm_text or text.startswith("---\r\n") else "\n"
    return Source(path, hashlib.sha256(raw).hexdigest(), text, parsed, bom, newline, rel)


def build_record(source: Source, model: type[R], rel: str) -> R:
    try:
        return model.model_validate(source.parsed.data)
    except ValidationError as exc:
        raise EntryError(validation_problems(exc, source.parsed, rel, model)) from None


@overload
def read_entry(path: Path, kind: RecordKind[R], project: Project) -> Entry[R]: ...
@overload
def read_entry(path: Path, kind: str, project: Project) -> Entry[Record]: ...
def read_entry(path: Path, kind: RecordKind[Record] | str, project: Project) -> Entry[Record]:
    """Read and validate one record of ``kind`` (a kind or its name); raise EntryError listing
    every problem."""
    return _read_as(path, KINDS[kind] if isinstance(kind, str) else kind, project.rel(path))


def reread(entry: Entry[R]) -> Entry[R]:
    """The record of ``entry`` as it is on disk now (a writer calls this holding the file's lock)."""
    return _read_as(entry.path, entry.kind, entry.source.rel)


def _read_as(path: Path, kind: RecordKind[R], rel: str) -> Entry[R]:
    source = read_source(path, rel)
    record = build_record(source, kind.model, rel)
    if not id_matches_file(record.id, path):
        line = source.parsed.line_of(("id",))
        raise EntryError(
            [
                Problem(
                    rel,
                    line,
                    "id",
                    f"'{record.id}' does not match the file name '{path.name}'; "
                    f"name the file {record.id}.md (bugs may add a -title tail) or fix the id",
                    code="id-mismatch",
                )
            ]
        )
    return Entry(record, source, kind)


@dataclass
class Kb:
    """Every loaded record by kind and id, plus the problems found while loading."""

    project: Project
    problems: list[Problem] = field(default_factory=list)
    #: bug id -> every file that claims it (more than one after two branches merge)
    claims: dict[str, list[Path]] = field(default_factory=dict)
    #: old id -> (old copy, renumbered bug) left by a `kbgen renumber` that was interrupted
    leftovers: dict[str, list[tuple[Entry[Bug], Entry[Bug]]]] = field(default_factory=dict)
    #: (kind, id) of every record read from the base layer (kbgen/knowledge) and still in use
    base: set[tuple[str, str]] = field(default_factory=set)
    #: (kind, id) -> the base file a project record of the same id overrides
    overrides: dict[tuple[str, str], Path] = field(default_factory=dict)
    #: kind name -> id -> entry. Only entries(kind) reads it: the kind it is given says what
    #: the entries hold (each was read with that kind's model), so the values stay untyped here.
    _entries: dict[str, dict[str, Entry[Any]]] = field(
        default_factory=lambda: {name: {} for name in KINDS}, init=False, repr=False
    )

    def entries(self, kind: RecordKind[R]) -> dict[str, Entry[R]]:
        """The loaded entries of ``kind`` by id (the dict itself: loading adds to it)."""
        return self._entries[kind.name]

    def records(self, kind: RecordKind[R]) -> dict[str, R]:
        """The loaded records of ``kind`` by id."""
        return {k: e.record for k, e in self._entries[kind.name].items()}

    @property
    def errors(self) -> dict[str, Entry[ErrorType]]:
        return self.entries(ERROR)

    @property
    def causes(self) -> dict[str, Entry[RootCause]]:
        return self.entries(CAUSE)

    @property
    def fixes(self) -> dict[str, Entry[Fix]]:
        return self.entries(FIX)

    @property
    def bugs(self) -> dict[str, Entry[Bug]]:
        return self.entries(BUG)

    def resolve_bug(self, bug_id: str) -> Entry[Bug]:
        """The bug with this id or alias; UnknownIdError names close ids when there is none."""
        check_id(bug_id, "bug")
        if bug_id in self.bugs:
            return self.bugs[bug_id]
        for entry in self.bugs.values():
            if bug_id in entry.record.aliases:
                return entry
        raise UnknownIdError(
            f"no bug {bug_id} in {self.project.rel(self.project.folder(BUG))}",
            hint="`kbgen list` shows the bugs there are",
        )


def entry_files(folder: Path) -> Iterator[Path]:
    """The ``*.md`` files directly in ``folder``, sorted; sub-folders and links to folders skipped."""
    try:
        with os.scandir(folder) as listing:  # the kind of each name comes with it: no stat each
            found = sorted(
                (item.name, _is_dir(item))
                for item in listing
                if item.name.endswith(".md") and not item.name.startswith(".")
            )
    except FileNotFoundError:
        return
    except OSError as exc:
        raise KbgenError(f"{folder}: cannot list: {exc.strerror}") from None
    for name, is_dir in found:
        if not is_dir:
            yield folder / name


def _is_dir(item: os.DirEntry[str]) -> bool:
    """Whether ``item`` is a folder or a link to one; a broken or looping link is not (its
    reader reports it)."""
    try:
        return item.is_dir()
    except OSError:
        return False


class Reader(Protocol):
    """How load_kb reads one file: :func:`read_entry`, or the site's reader that reuses
    unchanged files."""

    def __call__(self, path: Path, kind: RecordKind[R], project: Project, /) -> Entry[R]: ...


def load_kb(project: Project, read: Reader | None = None) -> Kb:
    """Load every record; problems are collected in ``kb.problems``, never raised one by one.

    ``read`` replaces :func:`read_entry` (the site passes one that reuses unchanged files).
    """
    kb = Kb(project)
    if not project.kb.is_dir():
        raise KbNotFoundError(f"{project.kb}: not a folder")
    # Records are acyclic, so reference counting frees them; the cyclic collector would only
    # rescan the growing heap again and again (about a fifth of the load time on 5,000 files).
    enabled = gc.isenabled()
    gc.disable()
    try:
        _load_into(kb, read or read_entry)
    finally:
        if enabled:
            gc.enable()
    return kb


def _load_into(kb: Kb, read: Reader) -> None:
    for kind in KNOWLEDGE.values():
        for layer, entry in _read_all(kb, kind, read):
            _add(kb, kind, layer, entry)
    claimed = _read_all(kb, BUG, read)
    for layer, bug in claimed:
        _add(kb, BUG, layer, bug)
    set_aside_leftovers(kb, [bug for _, bug in claimed])


def _read_all(kb: Kb, kind: RecordKind[R], read: Reader) -> list[tuple[str, Entry[R]]]:
    """(layer, entry) for every readable file of ``kind``, base layer first; the problems of
    the others go to ``kb.problems``."""
    project = kb.project
    # bugs belong to a project; the base layer ships knowledge only
    found = layers.folders(project.kb, kind.folder) if kind.knowledge else []
    read_ok: list[tuple[str, Entry[R]]] = []
    for layer, folder in found or [(layers.PROJECT, project.folder(kind))]:
        for path in entry_files(folder):
            try:
                read_ok.append((layer, read(path, kind, project)))
            except EntryError as exc:
                kb.problems.extend(exc.problems)
    return read_ok


def _add(kb: Kb, kind: RecordKind[R], layer: str, entry: Entry[R]) -> None:
    """Keep the first record of an id in a layer; a project record replaces a base one."""
    key = (kind.name, entry.record.id)
    loaded = kb.entries(kind)
    if kind is BUG:
        kb.claims.setdefault(entry.record.id, []).append(entry.path)
    if layer == layers.PROJECT and key in kb.base:
        kb.overrides[key] = loaded[entry.record.id].path
        kb.base.discard(key)
        loaded[entry.record.id] = entry
        return
    if entry.record.id not in loaded:
        loaded[entry.record.id] = entry
        if layer == layers.BASE:
            kb.base.add(key)


# --------------------------------------------------------------------------- writing


def encode(text: str, *, bom: bool = False) -> bytes:
    return (BOM + text if bom else text).encode("utf-8")
