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
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from kbgen import layers
from kbgen.errors import EntryError, KbgenError, KbNotFoundError, Problem, UnknownIdError, relpath
from kbgen.fileio import MAX_ENTRY_BYTES, Unreadable, atomic_write, read_limited
from kbgen.models import BUG_ID_RE, FOLDERS, KINDS, SLUG_RE, Bug, ErrorType, Fix, RootCause
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

    def folder(self, kind: str) -> Path:
        return self.kb / FOLDERS[kind]

    @property
    def probes(self) -> Path:
        return self.kb / "probes"

    def rel(self, path: Path) -> str:
        return layers.base_rel(path) or relpath(path, self.root)

    @property
    def template_dirs(self) -> list[Path]:
        """Where templates are looked up, first match wins: the project's own templates/, then
        the copy shipped in the wheel, then the source checkout's (editable installs)."""
        package = Path(__file__).resolve().parent
        candidates = [self.root / "templates", package / "templates", package.parents[1] / "templates"]
        seen: list[Path] = []
        for folder in candidates:
            if folder.is_dir() and folder not in seen:
                seen.append(folder)
        return seen


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


@dataclass
class Entry:
    record: Any  # ErrorType | RootCause | Fix | Bug
    source: Source

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


def build_record(source: Source, model: type[BaseModel], rel: str) -> Any:
    try:
        return model.model_validate(source.parsed.data)
    except ValidationError as exc:
        raise EntryError(validation_problems(exc, source.parsed, rel, model)) from None


def read_entry(path: Path, kind: str, project: Project) -> Entry:
    """Read and validate one record of ``kind``; raise EntryError listing every problem."""
    return _read_as(path, kind, project.rel(path))


def reread(entry: Entry) -> Entry:
    """The record of ``entry`` as it is on disk now (a writer calls this holding the file's lock)."""
    return _read_as(entry.path, type(entry.record).KIND, entry.source.rel)


def _read_as(path: Path, kind: str, rel: str) -> Entry:
    source = read_source(path, rel)
    record = build_record(source, KINDS[kind], rel)
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
    return Entry(record, source)


@dataclass
class Kb:
    """Every loaded record by kind and id, plus the problems found while loading."""

    project: Project
    errors: dict[str, Entry] = field(default_factory=dict)
    causes: dict[str, Entry] = field(default_factory=dict)
    fixes: dict[str, Entry] = field(default_factory=dict)
    bugs: dict[str, Entry] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    #: bug id -> every file that claims it (more than one after two branches merge)
    claims: dict[str, list[Path]] = field(default_factory=dict)
    #: old id -> (old copy, renumbered bug) left by a `kbgen renumber` that was interrupted
    leftovers: dict[str, list[tuple[Entry, Entry]]] = field(default_factory=dict)
    #: (kind, id) of every record read from the base layer (kbgen/knowledge) and still in use
    base: set[tuple[str, str]] = field(default_factory=set)
    #: (kind, id) -> the base file a project record of the same id overrides
    overrides: dict[tuple[str, str], Path] = field(default_factory=dict)

    def of(self, kind: str) -> dict[str, Entry]:
        return {"error": self.errors, "cause": self.causes, "fix": self.fixes, "bug": self.bugs}[kind]

    def resolve_bug(self, bug_id: str) -> Entry:
        """The bug with this id or alias; UnknownIdError names close ids when there is none."""
        check_id(bug_id, "bug")
        if bug_id in self.bugs:
            return self.bugs[bug_id]
        for entry in self.bugs.values():
            if bug_id in entry.record.aliases:
                return entry
        raise UnknownIdError(
            f"no bug {bug_id} in {self.project.rel(self.project.folder('bug'))}",
            hint="`kbgen list` shows the bugs there are",
        )

    @property
    def error_types(self) -> dict[str, ErrorType]:
        return {k: e.record for k, e in self.errors.items()}

    @property
    def root_causes(self) -> dict[str, RootCause]:
        return {k: e.record for k, e in self.causes.items()}

    @property
    def fix_records(self) -> dict[str, Fix]:
        return {k: e.record for k, e in self.fixes.items()}

    @property
    def bug_records(self) -> dict[str, Bug]:
        return {k: e.record for k, e in self.bugs.items()}


def entry_files(folder: Path) -> Iterator[Path]:
    """The ``*.md`` files directly in ``folder``, sorted; sub-folders and links to folders skipped."""
    try:
        names = sorted(os.listdir(folder))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise KbgenError(f"{folder}: cannot list: {exc.strerror}") from None
    for name in names:
        if name.endswith(".md") and not name.startswith("."):
            path = folder / name
            if not path.is_dir():
                yield path


def load_kb(project: Project, read: Callable[[Path, str, Project], Entry] | None = None) -> Kb:
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


def _load_into(kb: Kb, read: Callable[[Path, str, Project], Entry]) -> None:
    project = kb.project
    claimed: list[Entry] = []
    for kind in ("error", "cause", "fix", "bug"):
        # bugs belong to a project; the base layer ships knowledge only
        found = layers.folders(project.kb, FOLDERS[kind]) if kind != "bug" else []
        for layer, folder in found or [(layers.PROJECT, project.folder(kind))]:
            for path in entry_files(folder):
                try:
                    entry = read(path, kind, project)
                except EntryError as exc:
                    kb.problems.extend(exc.problems)
                    continue
                if kind == "bug":
                    claimed.append(entry)
                _add(kb, kind, layer, entry)

    _set_aside_leftovers(kb, claimed)


def renumbered_copy(kb: Kb, old: Entry) -> Entry | None:
    """The bug that `kbgen renumber` made of ``old`` (same creation time, a renumber event from
    its id, the id kept as an alias), when one is loaded under another id."""
    bug: Bug = old.record
    for entry in kb.bugs.values():
        new: Bug = entry.record
        if entry is old or bug.id not in new.aliases or new.created != bug.created:
            continue
        if any(e.kind.value == "renumber" and e.old == bug.id for e in new.history):
            return entry
    return None


def is_unchanged_copy(old: Entry, new: Entry) -> bool:
    """``old`` holds nothing ``new`` lacks: the same body and values, save what renumber changed
    (id, aliases, updated, one more history event)."""
    moved = {"id", "aliases", "updated", "history"}
    history = old.record.history
    return (
        new.record.history[: len(history)] == history
        and old.record.model_dump(exclude=moved) == new.record.model_dump(exclude=moved)
        and old.source.body == new.source.body
    )


def _set_aside_leftovers(kb: Kb, claimed: list[Entry]) -> None:
    """An interrupted renumber leaves the bug twice: the old file and the new one, whose alias is
    the old id. The old copy is reported and left out, so no command shows the bug twice."""
    aliases = {a for e in kb.bugs.values() for a in e.record.aliases}
    for old in [e for e in claimed if e.record.id in aliases]:
        new = renumbered_copy(kb, old)
        if new is None:
            continue
        bug_id = old.record.id
        kb.leftovers.setdefault(bug_id, []).append((old, new))
        kb.claims[bug_id].remove(old.path)
        if not kb.claims[bug_id]:
            del kb.claims[bug_id]
        if kb.bugs.get(bug_id) is old:
            del kb.bugs[bug_id]
            if bug_id in kb.claims:  # a second file claims the id (the merge renumber was for)
                kb.bugs[bug_id] = next(e for e in claimed if e.path == kb.claims[bug_id][0])
        if is_unchanged_copy(old, new):
            message = (
                f"an interrupted `kbgen renumber` left this old copy of {new.record.id} "
                f"({new.source.rel}); run `kbgen renumber {bug_id}` to finish it"
            )
        else:
            message = (
                f"an old copy of {new.record.id} ({new.source.rel}) left by an interrupted "
                "`kbgen renumber`, edited since: copy those edits into that file, then delete this one"
            )
        line = old.source.parsed.line_of(("id",))
        kb.problems.append(Problem(old.source.rel, line, "id", message, code="renumber-leftover"))


def _add(kb: Kb, kind: str, layer: str, entry: Entry) -> None:
    """Keep the first record of an id in a layer; a project record replaces a base one."""
    key = (kind, entry.record.id)
    if kind == "bug":
        kb.claims.setdefault(entry.record.id, []).append(entry.path)
    if layer == layers.PROJECT and key in kb.base:
        kb.overrides[key] = kb.of(kind)[entry.record.id].path
        kb.base.discard(key)
        kb.of(kind)[entry.record.id] = entry
        return
    if entry.record.id not in kb.of(kind):
        kb.of(kind)[entry.record.id] = entry
        if layer == layers.BASE:
            kb.base.add(key)


# --------------------------------------------------------------------------- writing


def encode(text: str, *, bom: bool = False) -> bytes:
    return (BOM + text if bom else text).encode("utf-8")
