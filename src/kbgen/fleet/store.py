"""``kb/fleet/<node>.json``: one file per node, the newest report wins, history is bounded.

Everything that reaches a node file goes through :func:`scrub` first, so a report from a node
whose kbgen is older (or from any engine) cannot bring a secret into the KB.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kbgen import fileio
from kbgen.errors import KbgenError, relpath
from kbgen.fleet.facts import key_facts
from kbgen.fleet.model import HISTORY_LIMIT, HistoryItem, NodeAttempt, NodeHead, NodeRecord
from kbgen.probes.report import ProbeReport
from kbgen.redact import REDACTED, is_secret_name, redact_text
from kbgen.store import Project, atomic_write

FOLDER = "fleet"
#: a node file larger than this is not a node file
MAX_BYTES = 4 * 1024 * 1024
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def fleet_dir(project: Project) -> Path:
    return project.kb / FOLDER


def file_name(node: str) -> str:
    """A file name for a node that no host name can turn into a path elsewhere."""
    safe = _UNSAFE.sub("_", node).lstrip(".")[:100]
    return f"{safe or '_'}.json"


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
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise KbgenError(f"{origin}:{exc.lineno}: not JSON: {exc.msg}") from None
    try:
        return ProbeReport.model_validate(scrub(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top)"
        raise KbgenError(
            f"{origin}: not a `kbgen probe --json` report: {where}: {first['msg']}",
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
    data = read_limited(path, MAX_BYTES, "a node file")
    try:
        return model.model_validate_json(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top)"
        raise KbgenError(
            f"{relpath(path)}: {where}: {first['msg']}", hint="delete it and probe again"
        ) from None


def load_nodes(project: Project) -> tuple[list[NodeHead], list[str]]:
    """The head of every node file, plus one message per file that could not be read."""
    records: list[NodeHead] = []
    problems: list[str] = []
    folder = fleet_dir(project)
    if not folder.is_dir():
        return [], []
    for path in sorted(folder.glob("*.json")):
        if not path.is_file():
            continue
        try:
            records.append(read_node(path, NodeHead))
        except KbgenError as exc:
            problems.append(str(exc))
    return records, problems


def merge(record: NodeRecord | None, attempt: NodeAttempt) -> NodeRecord:
    """The node's record after one more attempt: a newer report replaces the old one."""
    record = record or NodeRecord(node=attempt.node, engine=attempt.engine)
    report = attempt.report
    summary = attempt.model_copy(update={"report": None})
    if report is None:
        return record.model_copy(update={"last_attempt": summary})
    item = HistoryItem(collected_at=report.collected_at, engine=attempt.engine, facts=key_facts(report))
    history = [h for h in record.history if h.collected_at != item.collected_at]
    history = sorted([*history, item], key=lambda h: h.collected_at)[-HISTORY_LIMIT:]
    newest = record.report is None or report.collected_at >= record.report.collected_at
    update: dict[str, Any] = {"history": history, "last_attempt": summary}
    if newest:
        update |= {
            "report": report,
            "engine": attempt.engine,
            "collected_at": report.collected_at,
            "facts": item.facts,
        }
    return record.model_copy(update=update)


def save_attempts(project: Project, attempts: list[NodeAttempt]) -> list[Path]:
    """Merge each attempt into its node's file; nodes not attempted are left as they are."""
    folder = fleet_dir(project)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for attempt in attempts:
        path = folder / file_name(attempt.node)
        old = read_node(path) if path.is_file() else None
        record = merge(old if isinstance(old, NodeRecord) else None, attempt)
        atomic_write(path, (record.model_dump_json(indent=1, exclude_none=True) + "\n").encode())
        written.append(path)
    return written


def node_report(project: Project, node: str) -> ProbeReport:
    """The newest report of one node, for ``probe --fill BUG --from-fleet NODE``."""
    path = fleet_dir(project) / file_name(node)
    if not path.is_file():
        known = (
            sorted(p.stem for p in fleet_dir(project).glob("*.json")) if fleet_dir(project).is_dir() else []
        )
        hint = (
            f"known nodes: {', '.join(known[:20])}" if known else "run `kbgen fleet probe` or `fleet ingest`"
        )
        raise KbgenError(f"no fleet report for node '{node}'", hint=hint)
    record = read_node(path)
    if not isinstance(record, NodeRecord) or record.report is None:
        raise KbgenError(f"node '{node}' has no successful report yet", hint="probe it again")
    return record.report
