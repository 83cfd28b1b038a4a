"""``kbgen import --github FILE.json``: GitHub issues filed through the gpu-failure form, as bugs.

The input is what ``gh issue list --json number,title,body,labels,createdAt,author,url`` prints
(read and checked in :mod:`kbgen.importer.issues`). The bug keeps the issue's facts: it was
``created`` when the issue was opened (so the site's weekly chart puts it in the issue's week),
its ``origin`` holds the issue's number, address, author and labels (a value that is not one of
those is left out, and the import says so), and its title loses the prefix the issue form puts
in front (``[Bug]: ``, ``[GPU] ``). An issue form renders each field as a ``### Label``
heading followed by the value, so the body is split on those headings and each label is mapped
back to the form field it came from (see :data:`kbgen.init.FORM_FIELDS`). The bug is then made
the way ``kbgen new-bug --from-log`` makes one, and a pasted ``kbgen probe --json`` report,
its secrets redacted, fills it the way ``probe --fill`` does.

An issue is imported once: its bug carries the tag ``github-<number>``, and an issue whose tag a
bug already has is reported and left alone. Thousands of issues import in one pass: the KB's
signatures and probes are read once, and the bugs are written in batches of :data:`BATCH`, each
under one hold of kb/bugs/' lock and one flush to disk (see :func:`kbgen.fileio.create_files`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from kbgen import clock, mdtext
from kbgen.errors import KbgenError
from kbgen.importer.claims import IdClaims
from kbgen.importer.issuefacts import IssueFacts, origin_of, strip_prefix
from kbgen.importer.issues import Issue, Listed
from kbgen.store import Kb

if TYPE_CHECKING:
    from kbgen.bugs.body import BodyTemplate
    from kbgen.bugs.create import BugDraft
    from kbgen.models import Bug
    from kbgen.probes.report import ProbeReport

#: what GitHub writes for a field left empty
NO_RESPONSE = "_No response_"
#: bugs written under one hold of kb/bugs/' lock and one flush to disk
BATCH = 500
MAX_TITLE = 300  # as the Bug model allows
MAX_MESSAGE = 8000
MAX_REPORT = 1024 * 1024  # characters of a pasted report; a real one is a few KB
_TRIES = 10
_ISSUE_TAG = re.compile(r"github-[0-9]+")


@dataclass
class Imported:
    """What became of one item: ``written``, ``would-write``, ``exists``, ``refused`` or ``repeat``."""

    name: str  # "#7", or "item 3" when the item has no usable number
    state: str
    bug_id: str | None = None
    path: Path | None = None
    filled: bool = False
    message: str = ""
    notes: list[str] = field(default_factory=list)  # values of the issue left out of the bug


@dataclass(eq=False)
class _Ready:
    """An issue drafted as a bug, waiting for its id."""

    name: str
    draft: BugDraft
    report: ProbeReport | None
    filled: bool  # from a pasted probe report or a pasted environment report
    notes: list[str]


def form_values(body: str) -> dict[str, str]:
    """``{field id: value}`` from an issue body rendered from the gpu-failure form: each field is
    a ``### Label`` heading (one inside a pasted code block is text) and the value under it."""
    from kbgen.init import FORM_FIELDS

    by_label = {label.lower(): field_id for field_id, label, *_ in FORM_FIELDS}
    doc = mdtext.read(body.replace("\r\n", "\n"))
    labels = [h for h in doc.headings if h.level == 3]
    values: dict[str, str] = {}
    for index, heading in enumerate(labels):
        end = labels[index + 1].line if index + 1 < len(labels) else len(doc.lines)
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


class GithubImport:
    """One run of ``kbgen import --github`` over a checked issue list."""

    def __init__(self, kb: Kb, template: BodyTemplate) -> None:
        from kbgen.probes.discovery import scan
        from kbgen.triage import Compiled

        self.kb = kb
        self.template = template
        self.compiled = Compiled.of(kb)
        self.specs = scan(kb.project)[0]
        self.probes = {spec.id for spec in self.specs}
        self.claims = IdClaims(kb.project)
        self.now = clock.now()
        self.by = clock.user()
        # how an earlier import is recognised: the issue's tag on a bug
        self.done = {tag: e for e in kb.bugs.values() for tag in e.record.tags if tag.startswith("github-")}

    def run(self, items: list[Listed], *, dry_run: bool) -> Iterator[Imported]:
        """What became of each item, in the list's order, as each batch is written."""
        waiting: list[Imported | _Ready] = []
        ready = 0
        for item in items:
            step = self._prepare(item, dry_run)
            waiting.append(step)
            ready += isinstance(step, _Ready)
            if ready >= BATCH:
                yield from self._write(waiting)
                waiting, ready = [], 0
        yield from self._write(waiting)

    def _prepare(self, item: Listed, dry_run: bool) -> Imported | _Ready:
        if item.issue is None:
            return Imported(item.name, "repeat" if item.repeat else "refused", message=item.problem)
        if (entry := self.done.get(tag_of(item.issue.number))) is not None:
            return Imported(item.name, "exists", entry.record.id, entry.path)
        notes: list[str] = []
        try:
            draft, report, filled = self._draft(item.issue, notes)
        except KbgenError as exc:
            return Imported(item.name, "refused", message=str(exc))
        if dry_run:
            return Imported(item.name, "would-write", notes=notes)
        return _Ready(item.name, draft, report, filled, notes)

    def _draft(self, issue: Issue, notes: list[str]) -> tuple[BugDraft, ProbeReport | None, bool]:
        from kbgen.bugs.create import NewBug, draft_bug, draft_new_bug
        from kbgen.models import Severity
        from kbgen.redact import cut_head, redact_text

        values = form_values(issue.body or "")
        text = "\n".join(v for v in (values.get("message"), values.get("log")) if v).replace("\x00", "")
        name = f"issue #{issue.number}"
        log = draft_new_bug(self.kb, text, name=name, compiled=self.compiled) if text.strip() else None
        error = values.get("error", "").strip() or None
        if error not in self.kb.errors:
            error = log.error if log else None
        labels = [redact_text(label, user="").lower() for label in issue.label_names()]
        tags = [t for t in (re.sub(r"[^a-z0-9-]+", "-", label).strip("-")[:60] for label in labels) if t]
        tags = [t for t in tags if not _ISSUE_TAG.fullmatch(t)]  # a label must not mark another issue
        severity = values.get("severity", "").strip().lower()
        title = redact_text(strip_prefix(issue.title or ""), user="") or (log.title if log else "")
        message = log.message if log and log.message else redact_text(values.get("message", ""), user="")
        repro = values.get("repro", "").strip()
        new = NewBug(
            title=cut_head(title, MAX_TITLE).strip() or f"GitHub issue #{issue.number}",
            severity=next((s for s in Severity if s.value == severity), Severity.medium),
            error=error,
            tags=list(dict.fromkeys([*tags, tag_of(issue.number)])),
            message=cut_head(message, MAX_MESSAGE) or None,
            repro=repro if repro in self.probes else None,
            date=issue.created_at.date() if issue.created_at else self.now.date(),
        )
        report = pasted_report(values.get("environment"))
        adjust: Any = None if report is None else _Fill(self, report)
        if report is None:  # not a probe report: a pasted collect_env, nvidia-smi, ... instead
            adjust = _pasted(values, issue.number)
        facts = IssueFacts(issue, origin_of(issue, notes), self.now, self.by, adjust)
        return draft_bug(self.kb, new, template=self.template, adjust=facts), report, adjust is not None

    def _write(self, waiting: list[Imported | _Ready]) -> Iterator[Imported]:
        ready = [step for step in waiting if isinstance(step, _Ready)]
        done = self._create(ready) if ready else {}
        for step in waiting:
            yield done[id(step)] if isinstance(step, _Ready) else step

    def _create(self, ready: list[_Ready]) -> dict[int, Imported]:
        """Write the drafts under fresh ids; a name that appeared meanwhile gets the next id."""
        from kbgen.fileio import check_size, create_files

        done: dict[int, Imported] = {}
        for _ in range(_TRIES):
            if not ready:
                break
            with self.claims.batch() as claims:
                staged = []
                for step in ready:
                    bug_id = claims.next_id(step.draft.day)
                    name = f"{bug_id}-{step.draft.slug}.md" if step.draft.slug else f"{bug_id}.md"
                    try:
                        data = step.draft.render(bug_id).encode("utf-8")
                        check_size(claims.folder / name, data)
                    except KbgenError as exc:
                        claims.release(bug_id)
                        done[id(step)] = Imported(step.name, "refused", message=str(exc))
                        continue
                    staged.append((step, bug_id, claims.folder / name, data))
                taken = set(create_files([(path, data) for _, _, path, data in staged]))
                ready = [step for step, _, path, _ in staged if path in taken]
                written = [(step, bug_id, path) for step, bug_id, path, _ in staged if path not in taken]
                for step, bug_id, path in written:
                    claims.written(path)
                    done[id(step)] = Imported(
                        step.name, "written", bug_id, path, step.filled, notes=step.notes
                    )
                self._write_reports(claims.folder, [(s.report, i) for s, i, _ in written if s.report])
        for step in ready:
            done[id(step)] = Imported(step.name, "refused", message="no free bug id found; try again")
        return done

    def _write_reports(self, folder: Path, reports: list[tuple[ProbeReport, str]]) -> None:
        """Each pasted report beside its bug, as ``probe --fill`` keeps the report it fills from."""
        from kbgen.bugs.fill import python_label, report_name
        from kbgen.fileio import create_files

        files = []
        for report, bug_id in reports:
            path = folder / report_name(bug_id, report.host, python_label(report))
            path.parent.mkdir(exist_ok=True)
            if path.parent.is_symlink():  # not made by kbgen: never written through
                continue
            files.append((path, (report.model_dump_json(indent=2) + "\n").encode("utf-8")))
        create_files(files)


class _Fill:
    """Fill a new bug from a pasted report, as ``kbgen probe --fill`` fills one on disk."""

    def __init__(self, run: GithubImport, report: ProbeReport) -> None:
        self.run = run
        self.report = report

    def __call__(self, bug: Bug) -> Bug:
        from kbgen.bugs.fill import compute_changes, plan_fill

        plan = plan_fill(self.run.kb, bug, self.run.specs)
        changes = compute_changes(bug, plan, self.report, now=self.run.now, by=self.run.by)
        return bug.model_copy(update=changes)


def _pasted(values: dict[str, str], number: int) -> Any:
    """An adjust hook that adds the environment the issue's text shows (a pasted collect_env,
    nvidia-smi, pip list ...), marked as pasted with its source; None when it shows none."""
    from kbgen.envreport.pasted import pasted_environment

    text = "\n".join(values.get(k) or "" for k in ("environment", "message", "log"))
    env = pasted_environment(text, f"pasted in GitHub issue #{number}")
    if env is None:
        return None
    return lambda bug: bug.model_copy(update={"environments": [*bug.environments, env]})


def pasted_report(text: str | None) -> ProbeReport | None:
    """The ``kbgen probe --json`` report pasted as the environment, its secrets redacted as the
    fleet's reports are; None when the text is not one, or is one of a run where no probe ran."""
    from kbgen.fleet.store import scrub
    from kbgen.probes.report import ProbeReport

    if not text or not text.lstrip().startswith("{") or len(text) > MAX_REPORT:
        return None
    try:
        data: Any = scrub(json.loads(text))
        report = ProbeReport.model_validate(data)
    except (ValueError, RecursionError, ValidationError):
        return None
    return None if report.interpreter_error else report
