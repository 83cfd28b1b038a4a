"""``kbgen import --github FILE.json``: GitHub issues filed through the gpu-failure form, as bugs.

The input is what ``gh issue list --json number,title,body,labels,createdAt`` prints. An issue
form renders each field as a ``### Label`` heading followed by the value, so the body is split
on those headings and each label is mapped back to the form field it came from (see
:data:`kbgen.init.FORM_FIELDS`). The bug is then written the way ``kbgen new-bug --from-log``
writes one, and a pasted ``kbgen probe --json`` report fills it the way ``probe --fill`` does.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbgen import mdtext
from kbgen.errors import KbgenError
from kbgen.store import Kb

#: what GitHub writes for a field left empty
NO_RESPONSE = "_No response_"


@dataclass
class Imported:
    number: int
    state: str  # "written", "would-write", "exists"
    bug_id: str | None = None
    path: Path | None = None
    filled: bool = False


def read_issues(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise KbgenError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise KbgenError(
            f"{path}: not JSON ({exc})",
            hint="gh issue list --json number,title,body,labels,createdAt > issues.json",
        ) from None
    if not isinstance(data, list) or not all(isinstance(i, dict) and "number" in i for i in data):
        raise KbgenError(f"{path}: expected the list of issues `gh issue list --json ...` prints")
    return data


def form_values(body: str) -> dict[str, str]:
    """``{field id: value}`` from an issue body rendered from the gpu-failure form: each field is
    a ``### Label`` heading (one inside a pasted code block is text) and the value under it."""
    from kbgen.init import FORM_FIELDS

    by_label = {label.lower(): field_id for field_id, label, *_ in FORM_FIELDS}
    doc = mdtext.read((body or "").replace("\r\n", "\n"))
    labels = [h for h in doc.headings if h.level == 3]
    ends = [h.line for h in labels[1:]] + [len(doc.lines)]
    values: dict[str, str] = {}
    for heading, end in zip(labels, ends, strict=True):
        field_id = by_label.get(heading.title.lower())
        value = "\n".join(doc.lines[heading.line + 1 : end]).strip()
        if field_id is None or not value or value == NO_RESPONSE:
            continue
        values[field_id] = _unfenced(value)
    return values


def _unfenced(value: str) -> str:
    """The code of a value that is one fenced block (GitHub fences a field rendered as code)."""
    doc = mdtext.read(value)
    if len(doc.code) == 1 and doc.code[0].start == 0 and doc.code[0].end == len(doc.lines):
        return "\n".join(doc.code[0].content(doc.lines))
    return value


def tag_of(number: int) -> str:
    return f"github-{number}"


def import_issue(issue: dict[str, Any], kb: Kb, template: Any, *, dry_run: bool) -> Imported:
    number = int(issue["number"])
    tag = tag_of(number)
    for entry in kb.bugs.values():
        if tag in entry.record.tags:
            return Imported(number, "exists", entry.record.id, entry.path)
    if dry_run:
        return Imported(number, "would-write")
    values = form_values(str(issue.get("body") or ""))
    bug_id, path = _create(issue, values, kb, template, tag)
    filled = _fill(kb, path, values.get("environment"))
    if not filled:  # not a probe report: read a pasted collect_env, nvidia-smi, ... instead
        filled = _fill_pasted(kb, path, values, number)
    return Imported(number, "written", bug_id, path, filled)


def _fill_pasted(kb: Kb, path: Path, values: dict[str, str], number: int) -> bool:
    from kbgen.envreport.pasted import add_pasted, pasted_environment

    text = "\n".join(values.get(k) or "" for k in ("environment", "message", "log"))
    env = pasted_environment(text, f"pasted in GitHub issue #{number}")
    return env is not None and add_pasted(path, kb.project, env)


def _create(
    issue: dict[str, Any], values: dict[str, str], kb: Kb, template: Any, tag: str
) -> tuple[str, Path]:
    from kbgen.bugs import NewBug, create_bug, parse_date
    from kbgen.models import Severity
    from kbgen.triage import draft_from_log

    text = "\n".join(v for v in (values.get("message"), values.get("log")) if v)
    with tempfile.TemporaryDirectory(prefix="kbgen-import-") as folder:
        log = Path(folder) / f"issue-{issue['number']}.log"
        log.write_text(text, encoding="utf-8")
        draft = draft_from_log(str(log), kb)
    error = values.get("error", "").strip() or None
    if error not in kb.errors:
        error = draft.error
    labels = [str(label.get("name", "")) for label in issue.get("labels") or [] if isinstance(label, dict)]
    tags = [t for t in (re.sub(r"[^a-z0-9-]+", "-", lab.lower()).strip("-") for lab in labels) if t]
    severity = values.get("severity", "medium")
    created = str(issue.get("createdAt") or "")[:10]
    new = NewBug(
        title=str(issue.get("title") or draft.title).strip() or draft.title,
        severity=Severity(severity) if severity in Severity._value2member_map_ else Severity.medium,
        error=error,
        tags=list(dict.fromkeys([*tags, tag])),
        message=draft.message or values.get("message"),
        repro=_probe_or_none(kb, values.get("repro")),
        date=parse_date(created) if created else dt.date.today(),
    )
    return create_bug(kb, new, template=template)


def _probe_or_none(kb: Kb, probe_id: str | None) -> str | None:
    from kbgen.probes.discovery import scan

    probe_id = (probe_id or "").strip()
    return probe_id if probe_id in {spec.id for spec in scan(kb.project)[0]} else None


def _fill(kb: Kb, path: Path, environment: str | None) -> bool:
    """Fill the new bug from a pasted ``kbgen probe --json`` report; False when there is none."""
    from pydantic import ValidationError

    from kbgen import clock
    from kbgen.fill import fill_bug, plan_fill
    from kbgen.kinds import BUG
    from kbgen.probes.discovery import scan
    from kbgen.probes.report import ProbeReport
    from kbgen.store import read_entry

    if not environment:
        return False
    try:
        report = ProbeReport.model_validate_json(environment)
    except ValidationError:
        return False
    entry = read_entry(path, BUG, kb.project)
    plan = plan_fill(kb, entry.record, scan(kb.project)[0])
    return fill_bug(entry, plan, report, now=clock.now(), by=clock.user()).written
