"""Find probes and read their metadata without running them.

A probe file starts with a literal ``PROBE = {...}`` dict. kbgen reads it with ``ast.literal_eval``
and never executes the file itself: probe code runs only in a child process (see ``runner``).
Built-in probes ship in ``kbgen/probes/builtin/`` (file name: the id with ``_`` for ``-``);
a project's own probes live in ``kb/probes/<id>.py``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from kbgen import layers
from kbgen.errors import EntryError, Problem, UnknownIdError, closest, relpath
from kbgen.fieldwords import describe_error
from kbgen.models import ProbeMeta

if TYPE_CHECKING:
    from kbgen.store import Project

BUILTIN_DIR = Path(__file__).resolve().parent / "builtin"

#: the order built-ins are listed and run in: the machine, then torch, then the GPU
BUILTIN_ORDER = (
    "system",
    "cpu",
    "packages",
    "torch-build",
    "gpu",
    "compat",
    "cuda-smoke",
    "debug-env",
    "dist-env",
    "import-timing",
)

#: needs that place a probe in the worker that imports torch once for all of them
TORCH_NEEDS = frozenset({"torch", "torch?", "cuda"})


@dataclass(frozen=True)
class ProbeSpec:
    """A probe that can be run: its validated metadata and the file holding its code."""

    meta: ProbeMeta
    path: Path
    builtin: bool

    @property
    def id(self) -> str:
        return self.meta.id

    @property
    def uses_torch(self) -> bool:
        """True when the probe runs in the torch worker (it needs or may use torch)."""
        return any(need in TORCH_NEEDS for need in self.meta.needs)


def builtin_files() -> list[Path]:
    """The built-in probe files, in :data:`BUILTIN_ORDER` (any others after, by name)."""
    files = [p for p in BUILTIN_DIR.glob("*.py") if not p.name.startswith("_")]
    rank = {name.replace("-", "_"): n for n, name in enumerate(BUILTIN_ORDER)}
    return sorted(files, key=lambda p: (rank.get(p.stem, len(rank)), p.name))


class _Broken(Exception):
    """One problem that ends the reading of a probe file."""

    def __init__(self, line: int | None, field: str | None, message: str) -> None:
        super().__init__(message)
        self.line, self.field, self.message = line, field, message


def _parse(path: Path, rel: str) -> ast.Module:
    from kbgen.fileio import Unreadable, read_limited

    try:
        raw = read_limited(path)  # a regular file, and not without bound: a FIFO would hang here
    except Unreadable as exc:
        raise _Broken(None, None, exc.message) from None
    except OSError as exc:
        raise _Broken(None, None, f"cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise _Broken(line, None, f"not UTF-8: byte 0x{raw[exc.start]:02x}; save the file as UTF-8") from None
    try:
        return ast.parse(text, filename=rel)
    except SyntaxError as exc:
        raise _Broken(exc.lineno, None, f"Python syntax error: {exc.msg}") from None
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes; absurd nesting
        raise _Broken(None, None, f"cannot be parsed as Python: {exc}") from None


def _literal(tree: ast.Module) -> tuple[ast.Assign, dict[str, Any]]:
    node = _probe_assignment(tree)
    if node is None:
        hint = "a probe file needs a module-level PROBE = {'id': ..., 'title': ...} dict"
        raise _Broken(1, "PROBE", f"missing; {hint}")
    try:
        data = ast.literal_eval(node.value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        msg = "must be a literal dict (only strings, numbers, lists, True/False/None; no names or calls)"
        raise _Broken(node.lineno, "PROBE", msg) from None
    if not isinstance(data, dict):
        raise _Broken(node.lineno, "PROBE", f"must be a dict, not {type(data).__name__}")
    return node, data


#: what :func:`read_meta` found, by file and the file's identity, size and time of change: a
#: served site scans every probe on every rebuild, and parsing them is most of a scan
_READ: dict[tuple[str, str], tuple[tuple[int, ...], tuple[ProbeMeta | None, list[Problem]]]] = {}


def read_meta(path: Path, rel: str) -> tuple[ProbeMeta | None, list[Problem]]:
    """Read ``PROBE`` from ``path`` statically; return the metadata or the problems found."""
    try:
        info = path.stat()
    except OSError:
        return _read_meta(path, rel)  # the reader says what is wrong with it
    stamp = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    known = _READ.get((str(path), rel))
    if known is not None and known[0] == stamp:
        meta, problems = known[1]
        return (meta.model_copy() if meta is not None else None), list(problems)
    found = _read_meta(path, rel)
    if len(_READ) > 4096:
        _READ.clear()
    _READ[(str(path), rel)] = (stamp, found)
    return found[0].model_copy() if found[0] is not None else None, list(found[1])


def _read_meta(path: Path, rel: str) -> tuple[ProbeMeta | None, list[Problem]]:
    try:
        tree = _parse(path, rel)
        node, data = _literal(tree)
    except _Broken as broken:
        return None, [Problem(rel, broken.line, broken.field, broken.message, code="probe")]
    problems: list[Problem] = []
    meta: ProbeMeta | None = None
    try:
        meta = ProbeMeta.model_validate(data)
    except ValidationError as exc:
        problems.extend(_meta_problems(exc, node, rel))
    if not any(isinstance(n, ast.FunctionDef) and n.name == "run" and not n.args.args for n in tree.body):
        shape = "{'status': ..., 'message': ..., 'facts': {...}}"
        message = f"missing: define a module-level `def run():` returning {shape}"
        problems.append(Problem(rel, None, "run", message, code="probe"))
    return (meta if not problems else None), problems


def _probe_assignment(tree: ast.Module) -> ast.Assign | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "PROBE" for t in node.targets
        ):
            return node
    return None


def _meta_problems(exc: ValidationError, node: ast.Assign, rel: str) -> list[Problem]:
    lines = _key_lines(node.value)
    problems = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        key = str(loc[0]) if loc else None
        message = describe_error(err)
        if err["type"] == "extra_forbidden":
            message = f"unknown key; known keys are {', '.join(ProbeMeta.model_fields)}"
        elif err["type"] == "missing":
            message = "required key is missing"
        field = "PROBE." + ".".join(str(p) for p in loc) if loc else "PROBE"
        problems.append(Problem(rel, lines.get(key or "", node.lineno), field, message, code="probe"))
    return problems


def _key_lines(value: ast.expr) -> dict[str, int]:
    if not isinstance(value, ast.Dict):
        return {}
    return {k.value: k.lineno for k in value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}


def scan(project: Project | None) -> tuple[list[ProbeSpec], list[Problem]]:
    """Every valid probe (built-ins, the base layer's, then ``kb/probes/*.py``) and every problem.

    A project probe with the id of a base-layer probe replaces it; a built-in id is refused.
    """
    specs: list[ProbeSpec] = []
    problems: list[Problem] = []
    for path in builtin_files():
        meta, found = read_meta(path, f"<builtin>/{path.name}")
        problems.extend(found)
        if meta is not None:
            specs.append(ProbeSpec(meta, path, builtin=True))
    core = {s.id for s in specs}
    base = layers.base_dir()
    if base is not None:
        _scan_folder(base / "probes", lambda p: layers.base_rel(p) or p.name, specs, problems, core)
    if project is not None and project.probes.is_dir():
        _scan_folder(project.probes, lambda p: relpath(p, project.root), specs, problems, core)
    return specs, problems


def _scan_folder(
    folder: Path,
    rel_of: Callable[[Path], str],
    specs: list[ProbeSpec],
    problems: list[Problem],
    core: set[str],
) -> None:
    builtin = layers.base_rel(folder) is not None
    for path in sorted(folder.glob("*.py")):
        if path.name.startswith(("_", ".")) or path.is_dir():
            continue
        rel = rel_of(path)
        meta, found = read_meta(path, rel)
        problems.extend(found)
        if meta is None:
            continue
        if meta.id != path.stem:
            message = (
                f"'{meta.id}' does not match the file name '{path.name}'; "
                f"rename the file to {meta.id}.py or fix the id"
            )
            problems.append(Problem(rel, _id_line(path), "PROBE.id", message, code="probe"))
        elif meta.id in core:
            message = f"'{meta.id}' is a built-in probe id; choose another id (and file name)"
            problems.append(Problem(rel, _id_line(path), "PROBE.id", message, code="probe"))
        else:
            specs[:] = [s for s in specs if s.id != meta.id]  # a project probe overrides the base's
            specs.append(ProbeSpec(meta, path, builtin=builtin))


def _id_line(path: Path) -> int | None:
    try:
        node = _probe_assignment(ast.parse(path.read_text(encoding="utf-8")))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None
    return None if node is None else _key_lines(node.value).get("id", node.lineno)


def discover(project: Project | None, *, strict: bool = False) -> list[ProbeSpec]:
    """Built-in probes, then the project's ``kb/probes/*.py``.

    Files with broken metadata are left out (``discover_problems`` reports them); with
    ``strict`` they raise :class:`~kbgen.errors.EntryError` naming file:line instead.
    """
    specs, problems = scan(project)
    if strict and problems:
        raise EntryError(problems, hint="fix the PROBE = {...} block at the top of the file")
    return specs


def discover_problems(project: Project | None) -> list[Problem]:
    """Every problem in the project's probe files (and, should it happen, the built-ins)."""
    return scan(project)[1]


def builtin_ids() -> set[str]:
    """The ids of the probes that ship with kbgen."""
    return {s.id for s in scan(None)[0]}


def select(specs: list[ProbeSpec], ids: list[str], problems: list[Problem] | None = None) -> list[ProbeSpec]:
    """The probes named by ``ids`` (in that order), or the default set when ``ids`` is empty.

    An unknown id raises UnknownIdError listing the known ones (and any broken probe file).
    """
    if not ids:
        return [s for s in specs if s.meta.default]
    by_id = {s.id: s for s in specs}
    unknown = [i for i in ids if i not in by_id]
    if unknown:
        raise UnknownIdError(
            _unknown_message(unknown, sorted(by_id), problems or []),
            hint="`kbgen probe --list` shows every probe and what it checks",
        )
    seen: dict[str, ProbeSpec] = {}
    for probe_id in ids:
        seen.setdefault(probe_id, by_id[probe_id])
    return list(seen.values())


def _unknown_message(unknown: list[str], known: list[str], problems: list[Problem]) -> str:
    parts = []
    for probe_id in unknown:
        broken = [p for p in problems if Path(p.path).stem == probe_id]
        close = _close_ids(probe_id, known)
        text = f"unknown probe id '{probe_id}'"
        if broken:
            text += f" (its file is broken: {broken[0].format()})"
        elif close:
            text += f" (did you mean {' or '.join(repr(c) for c in close)}?)"
        parts.append(text)
    return "; ".join(parts) + f"; known probes: {', '.join(known)}"


def _close_ids(probe_id: str, known: list[str]) -> list[str]:
    """Ids that look alike, or that share the first word (``gpu-arch`` -> ``gpu``)."""
    close = closest(probe_id, known, n=2)
    head = probe_id.split("-")[0]
    close += [k for k in known if k.split("-")[0] == head and k not in close]
    return close[:3]
