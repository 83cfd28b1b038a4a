"""``kb/fleet/<node>.json``: one file per node, the newest report wins, history is bounded.

Everything that reaches a node file goes through :func:`scrub` first, so a report from a node
whose kbgen is older (or from any engine) cannot bring a secret into the KB. Reports and node
files are read as strict JSON: finite numbers only, nested at most :data:`MAX_DEPTH` levels.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kbgen import fileio
from kbgen.errors import KbgenError, relpath
from kbgen.fieldwords import describe_error
from kbgen.fleet.facts import key_facts, machine_of
from kbgen.fleet.model import (
    HISTORY_LIMIT,
    OTHERS_LIMIT,
    HistoryItem,
    NodeAttempt,
    NodeHead,
    NodeRecord,
    OtherMachine,
)
from kbgen.probes.report import ProbeReport
from kbgen.redact import REDACTED, is_secret_name, redact_text
from kbgen.store import Project, atomic_write

FOLDER = "fleet"
#: a node file larger than this is not a node file
MAX_BYTES = 4 * 1024 * 1024
#: a probe report nests about five levels (report, results, result, facts, value)
MAX_DEPTH = 32
#: node names that are their own file name: lower case (no two differ only in case, which some
#: file systems do not tell apart), no leading dot, no "--" (which marks the names below)
_PLAIN = re.compile(r"[a-z0-9](?:[a-z0-9._]|-(?!-)){0,99}")
_UNSAFE = re.compile(r"[^a-z0-9._-]+")
#: the Fleet page's own name (fleet/index.md)
_TAKEN = {"index"}


def fleet_dir(project: Project) -> Path:
    return project.kb / FOLDER


def file_name(node: str) -> str:
    """The node's file name: one per exact host name, and never a path elsewhere.

    A plain name (``gpu01``) is its own file name; any other becomes a readable slug, ``--``, and
    a hash of the exact name (``gpu_01--3f0c...``), so ``gpu/01`` and ``gpu_01``, ``.`` and ``..``,
    or two long names that share their first hundred characters each get a file of their own.
    """
    if _PLAIN.fullmatch(node) and node not in _TAKEN:
        return f"{node}.json"
    slug = _UNSAFE.sub("_", node.lower()).strip("._-")[:40] or "node"
    digest = hashlib.sha256(node.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{slug}--{digest}.json"


def _legacy_name(node: str) -> str:
    """The file name kbgen gave a node before :func:`file_name` (read once, then moved)."""
    return f"{re.sub(r'[^A-Za-z0-9._-]', '_', node).lstrip('.')[:100] or '_'}.json"


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is not a finite number")
    return value


def _refuse_constant(text: str) -> float:
    raise ValueError(f"{text} is not a number JSON allows")


def _too_deep(value: Any) -> bool:
    """Whether ``value`` nests deeper than MAX_DEPTH (walked with a stack, not recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                return True
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


def load_json(text: str | bytes, origin: str) -> Any:
    """Strict JSON (finite numbers, at most MAX_DEPTH levels), or a KbgenError naming ``origin``."""
    try:
        data = json.loads(text, parse_float=_finite, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise KbgenError(f"{origin}:{exc.lineno}: not JSON: {exc.msg}") from None
    except RecursionError:
        raise KbgenError(f"{origin}: not JSON kbgen reads: nested more than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # NaN, Infinity, 1e999, an integer of thousands of digits
        raise KbgenError(f"{origin}: not JSON kbgen reads: {exc}") from None
    if _too_deep(data):
        raise KbgenError(f"{origin}: not JSON kbgen reads: nested more than {MAX_DEPTH} levels")
    return data


def scrub(value: Any, key: str = "") -> Any:
    """Redact secrets in every string of a JSON value; values under secret-looking keys go whole."""
    if isinstance(value, dict):
        return {k: scrub(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v, key) for v in value]
    if isinstance(value, str):
        return REDACTED if key and is_secret_name(key) and value else redact_text(value, paths=False)
    return value


def parse_report(text: str, origin: str) -> ProbeReport:
    """A ``kbgen probe --json`` report, redacted; a KbgenError naming ``origin`` if it is not one."""
    data = load_json(text, origin)
    try:
        return ProbeReport.model_validate(scrub(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top)"
        raise KbgenError(
            f"{origin}: not a `kbgen probe --json` report: {where}: {describe_error(first)}",
            hint="make the file with `kbgen probe --json > NODE.json` on the node",
        ) from None


def read_limited(path: Path, limit: int, what: str) -> bytes:
    """A regular file's bytes (never a FIFO or device, never more than ``limit``), or a KbgenError."""
    try:
        return fileio.read_limited(path, limit, what)
    except fileio.Unreadable as exc:
        raise KbgenError(f"{relpath(path)}: {exc.message}") from None
    except OSError as exc:
        raise KbgenError(f"{relpath(path)}: cannot read: {exc.strerror}") from None


def read_node(path: Path, model: type[NodeHead] = NodeRecord) -> NodeHead:
    """A node file as ``model``: the whole record, or only its head (facts, last attempt)."""
    data = load_json(read_limited(path, MAX_BYTES, "a node file"), relpath(path))
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top)"
        raise KbgenError(
            f"{relpath(path)}: {where}: {describe_error(first)}", hint="delete it and probe again"
        ) from None


def load_nodes(project: Project) -> tuple[list[NodeHead], list[str]]:
    """The head of every node file, plus one message per file that could not be read.

    Two files that hold one node (a copy, or a file named the way an older kbgen named it) give
    one node: the file at the node's own name (:func:`file_name`) wins, else the first by name."""
    found: dict[str, tuple[Path, NodeHead]] = {}
    problems: list[str] = []
    folder = fleet_dir(project)
    if not folder.is_dir():
        return [], []
    for path in sorted(folder.glob("*.json")):
        if not path.is_file():
            continue
        try:
            head = read_node(path, NodeHead)
        except KbgenError as exc:
            problems.append(str(exc))
            continue
        kept = found.get(head.node)
        if kept is None or (path.name == file_name(head.node) and kept[0].name != path.name):
            found[head.node] = (path, head)
        if kept is not None:
            other = path if found[head.node][0] is kept[0] else kept[0]
            problems.append(
                f"{relpath(other)}: holds node {head.node!r} too; "
                f"kept {relpath(found[head.node][0])} (delete the other)"
            )
    return [head for _, head in found.values()], problems


def merge(record: NodeRecord | None, attempt: NodeAttempt) -> NodeRecord:
    """The node's record after one more attempt: a newer report replaces the old one.

    A report from another machine under the same host name (its machine id or container id
    differ: a re-installed node, a second container on one host) does not replace the node's
    report silently: the newer of the two is the node's, the other is kept in ``others``."""
    record = record or NodeRecord(node=attempt.node, engine=attempt.engine)
    report = attempt.report
    summary = attempt.model_copy(update={"report": None})
    if report is None:
        return record.model_copy(update={"last_attempt": summary})
    item = HistoryItem(collected_at=report.collected_at, engine=attempt.engine, facts=key_facts(report))
    machine = machine_of(item.facts)
    stored = record.machine or (machine_of(key_facts(record.report)) if record.report else None)
    newest = record.report is None or report.collected_at >= record.report.collected_at
    update: dict[str, Any] = {"last_attempt": summary}
    if record.report is not None and machine and stored and machine != stored:
        mine = OtherMachine(
            machine=machine, collected_at=item.collected_at, engine=attempt.engine, facts=item.facts
        )
        if not newest:
            return record.model_copy(update={**update, "others": _keep_other(record.others, mine)})
        assert record.collected_at is not None
        old = OtherMachine(
            machine=stored, collected_at=record.collected_at, engine=record.engine, facts=record.facts
        )
        update["others"] = _keep_other([o for o in record.others if o.machine != machine], old)
    history = [h for h in record.history if h.collected_at != item.collected_at]
    history = sorted([*history, item], key=lambda h: h.collected_at)[-HISTORY_LIMIT:]
    update["history"] = history
    if newest:
        update |= {
            "report": report,
            "engine": attempt.engine,
            "collected_at": report.collected_at,
            "facts": item.facts,
            "machine": machine,
        }
    return record.model_copy(update=update)


def _keep_other(others: list[OtherMachine], one: OtherMachine) -> list[OtherMachine]:
    """``others`` with ``one`` in place of an older report of its machine, the newest few kept."""
    same = next((o for o in others if o.machine == one.machine), None)
    if same is not None and same.collected_at > one.collected_at:
        return others
    kept = [o for o in others if o.machine != one.machine] + [one]
    return sorted(kept, key=lambda o: o.collected_at)[-OTHERS_LIMIT:]


def node_path(project: Project, node: str) -> Path:
    """Where ``node``'s file is: at :func:`file_name`, or where an older kbgen put it."""
    path = fleet_dir(project) / file_name(node)
    legacy = fleet_dir(project) / _legacy_name(node)
    if path.is_file() or legacy == path or not legacy.is_file():
        return path
    try:
        return legacy if read_node(legacy, NodeHead).node == node else path
    except KbgenError:
        return path


def _move_other_node(path: Path, node: str) -> None:
    """If ``path`` holds another node (an older kbgen's name for it), move it to its own name."""
    if not path.is_file():
        return
    other = read_node(path, NodeHead).node
    if other == node:
        return
    target = path.with_name(file_name(other))
    if target.exists():
        raise KbgenError(
            f"{relpath(path)} holds node {other!r}, which has {relpath(target)} too",
            hint=f"delete the older of the two, then run this again to store node {node!r}",
        )
    path.rename(target)


def save_attempts(project: Project, attempts: list[NodeAttempt]) -> list[NodeRecord]:
    """Merge each attempt into its node's file; nodes not attempted are left as they are.

    Returns each node's record after its attempt. Of two reports for one node, the one
    collected later is the node's report; of two collected at the same time, the later attempt."""
    folder = fleet_dir(project)
    folder.mkdir(parents=True, exist_ok=True)
    records = []
    for attempt in attempts:
        path = folder / file_name(attempt.node)
        _move_other_node(path, attempt.node)
        found = node_path(project, attempt.node)
        old = read_node(found) if found.is_file() else None
        record = merge(old if isinstance(old, NodeRecord) else None, attempt)
        atomic_write(path, (record.model_dump_json(indent=1, exclude_none=True) + "\n").encode())
        if found != path:
            found.unlink(missing_ok=True)  # moved to the node's own name
        records.append(record)
    return records


def node_report(project: Project, node: str) -> ProbeReport:
    """The newest report of one node, for ``probe --fill BUG --from-fleet NODE``."""
    path = node_path(project, node)
    if not path.is_file():
        known = ", ".join(map(repr, sorted(head.node for head in load_nodes(project)[0])[:20]))
        hint = f"known nodes: {known}" if known else "run `kbgen fleet probe` or `fleet ingest`"
        raise KbgenError(f"no fleet report for node '{node}'", hint=hint)
    record = read_node(path)
    if not isinstance(record, NodeRecord) or record.report is None:
        raise KbgenError(f"node '{node}' has no successful report yet", hint="probe it again")
    return record.report
