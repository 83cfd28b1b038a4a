"""What the site shows about a loaded KB: where each page lives and which records point where.

Records link forward by id (a bug names its error type, a cause names its fixes); pages also
show the links backwards ("bugs with this error"). :class:`SiteData` computes both directions
once per build so every page function is a lookup.
"""

from __future__ import annotations

import datetime as dt
import posixpath
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kbgen import links
from kbgen.keyfacts import KEY_FACT_KEYS, KEY_FACTS
from kbgen.kinds import BUG, CAUSE, ERROR, FIX, KINDS
from kbgen.links import Link
from kbgen.models import (
    CLOSED_STATUSES,
    Bug,
    ErrorType,
    Fix,
    ProbeStatus,
    RootCause,
    Severity,
    Status,
)
from kbgen.store import Kb

HOME = "index.md"
BUGS = "bugs/index.md"
ERRORS = "errors/index.md"
CAUSES = "causes/index.md"
FIXES = "fixes/index.md"
PROBES = "probes.md"
TAGS = "tags.md"

#: A fix last verified longer ago than this many days is listed as stale (the plugin's
#: ``stale_days`` option in mkdocs.yml changes it).
STALE_DAYS = 180

#: Probe outcomes that mean "this check did not pass".
FAILED = frozenset({ProbeStatus.fail, ProbeStatus.error, ProbeStatus.crash, ProbeStatus.timeout})
SEVERITY_ORDER = [Severity.critical, Severity.high, Severity.medium, Severity.low]
OPEN_STATUSES = [s for s in Status if s not in CLOSED_STATUSES]
CLOSED_VALUES = frozenset(s.value for s in CLOSED_STATUSES)

#: Environment facts shown first on a bug page: label, fact key ("<probe>.<fact>").


def page_uri(kind: str, record_id: str) -> str:
    """The docs-relative path of the page of a record of ``kind``."""
    return f"{KINDS[kind].folder}/{record_id}.md"  # the site mirrors kb/'s folders


def relative(target: str, here: str) -> str:
    """A link from the page at ``here`` to the page (or ``page#anchor``) ``target``."""
    path, _, anchor = target.partition("#")
    folder = posixpath.dirname(here)
    if not path or posixpath.dirname(path) == folder:
        rel = posixpath.basename(path)
    else:  # called for every link of every page: plain string work, no os.path.relpath
        rel = "../" * (folder.count("/") + 1 if folder else 0) + path
    return f"{rel}#{anchor}" if anchor else rel


@dataclass(frozen=True)
class ProbeInfo:
    """A probe as the catalogue shows it."""

    id: str
    title: str
    description: str
    needs: list[str]
    timeout: float
    default: bool
    builtin: bool
    source: str  # where its code lives, for people


@dataclass
class SiteData:
    """A loaded KB plus the reverse links, counts and dates its pages need."""

    kb: Kb
    today: dt.date
    probes: dict[str, ProbeInfo] = field(default_factory=dict)
    stale_days: int = STALE_DAYS
    bugs_by_error: dict[str, list[Bug]] = field(default_factory=dict)
    bugs_by_cause: dict[str, list[tuple[Bug, str]]] = field(default_factory=dict)
    bugs_by_fix: dict[str, list[tuple[Bug, Any]]] = field(default_factory=dict)
    errors_by_cause: dict[str, list[tuple[ErrorType, Any]]] = field(default_factory=dict)
    causes_by_fix: dict[str, list[RootCause]] = field(default_factory=dict)
    related_bugs: dict[str, list[str]] = field(default_factory=dict)
    probe_users: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    #: (kind, id) -> (record, link, holder) for every link naming that record (probes: see
    #: probe_users)
    backlinks: dict[tuple[str, str], list[tuple[Any, Link, Any]]] = field(default_factory=dict)
    #: the ids each record names (a running server keeps one between builds)
    refs: links.RefMemo = field(default_factory=links.RefMemo)
    #: id of a record -> (the record, its tags' (anchor, name), its tags-page entry); a running
    #: server keeps one between builds, as an unchanged file keeps its record
    tag_memo: dict[int, tuple[Any, list[tuple[str, str]], tuple[str, tuple[str, str, str]]]] = field(
        default_factory=dict
    )

    def __post_init__(self) -> None:
        # Plain dicts, made once: templates look records up thousands of times per build.
        self.errors: dict[str, ErrorType] = self.kb.records(ERROR)
        self.causes: dict[str, RootCause] = self.kb.records(CAUSE)
        self.fixes: dict[str, Fix] = self.kb.records(FIX)
        self.bugs: dict[str, Bug] = self.kb.records(BUG)
        self.open_bugs: list[Bug] = [b for b in self.bugs.values() if b.status not in CLOSED_STATUSES]
        self._digests = {
            name: {rid: entry.source.digest for rid, entry in self.kb.entries(kind).items()}
            for name, kind in KINDS.items()
        }
        self._link_back()
        self.refs.forget_unseen()
        self._tag_index: list[TagSection] | None = None

    # ------------------------------------------------------------------ records

    def source_of(self, kind: str, record_id: str) -> str:
        """The project-relative path of the file a record was read from."""
        entry = self.kb.entries(KINDS[kind])[record_id]
        return entry.source.rel or self.kb.project.rel(entry.path)

    def digest(self, kind: str, record_id: str) -> str:
        """The content digest of a record's file ('-' when there is no such record)."""
        return self._digests[kind].get(record_id, "-")

    def body(self, kind: str, record_id: str) -> str:
        return self.kb.entries(KINDS[kind])[record_id].source.body

    # ------------------------------------------------------------------ reverse links

    def _link_back(self) -> None:
        """Walk every link of every record once (records in id order, links in the order
        :data:`~kbgen.links.LINKS` declares them) and file it under the record it names."""
        by_link: dict[str, dict[str, list[tuple[Any, Any]]]] = {}
        backlinks, refs_of = self.backlinks, self.refs.of
        loaded: dict[str, dict[str, Any]] = {
            "error": self.errors,
            "cause": self.causes,
            "fix": self.fixes,
            "bug": self.bugs,
        }
        for name in KINDS:
            records = loaded[name]
            for record_id in sorted(records):
                record = records[record_id]
                for link, ref, holder in refs_of(name, record):
                    if link.target == links.PROBE:  # the probes page lists the knowledge using each
                        if name != "bug":
                            self._use_probe(ref, name, record, holder)
                        continue
                    backlinks.setdefault((link.target, ref), []).append((record, link, holder))
                    by_link.setdefault(link.name, {}).setdefault(ref, []).append((record, holder))
        self.bugs_by_error = {k: [bug for bug, _ in v] for k, v in by_link.get("bug.error", {}).items()}
        self.errors_by_cause = by_link.get("error.causes", {})
        self.causes_by_fix = {k: [c for c, _ in v] for k, v in by_link.get("cause.fixes", {}).items()}
        self.bugs_by_fix = by_link.get("bug.fixes_tried", {})
        for (target, cause_id), found in self.backlinks.items():
            for bug, link, _ in found if target == "cause" else []:
                # a cause's page lists a bug once per naming, as confirmed where it is confirmed
                if link.source == "bug" and (
                    link.role == "confirmed" or cause_id not in bug.confirmed_causes
                ):
                    self.bugs_by_cause.setdefault(cause_id, []).append((bug, link.role))
        for other, pairs in by_link.get("bug.related", {}).items():
            for bug, _ in pairs:
                self._relate(bug.id, other)
                self._relate(other, bug.id)

    def _use_probe(self, probe_id: str, kind: str, record: Any, step: Any) -> None:
        # The catalogue lists knowledge pages; bugs inherit their error type's steps.
        why = step.title if step is not None else f"verifies this {kind}"
        self.probe_users.setdefault(probe_id, []).append((page_uri(kind, record.id), record.title, why))

    def linking_to(self, kind: str, record_id: str) -> list[tuple[str, str]]:
        """(kind, id) of every record that names the record ``record_id`` of ``kind``."""
        return [(link.source, r.id) for r, link, _ in self.backlinks.get((kind, record_id), ())]

    def fixes_of(self, cause_ids: Iterable[str]) -> list[str]:
        """The known fixes of the known causes among ``cause_ids``, each once, in the causes' order."""
        found: list[str] = []
        for cause_id in cause_ids:
            cause = self.causes.get(cause_id)
            for fix_id in cause.fixes if cause else []:
                if fix_id in self.fixes and fix_id not in found:
                    found.append(fix_id)
        return found

    def _relate(self, one: str, other: str) -> None:
        mates = self.related_bugs.setdefault(one, [])
        if other != one and other not in mates:
            mates.append(other)
            mates.sort()

    # ------------------------------------------------------------------ questions pages ask

    def is_open(self, bug: Bug) -> bool:
        return bug.status not in CLOSED_STATUSES

    def open_count(self, bugs: list[Bug]) -> int:
        return sum(1 for b in bugs if b.status not in CLOSED_STATUSES)  # is_open, for every bug

    def failed_findings(self, bug: Bug) -> list[Any]:
        return [f for f in bug.findings if f.status in FAILED]

    def fix_age(self, fix: Fix) -> int | None:
        """Days since the fix was last verified; None when it never was."""
        return None if fix.last_verified is None else (self.today - fix.last_verified).days

    def is_stale(self, fix: Fix) -> bool:
        """Verified once, but longer ago than ``stale_days``."""
        age = self.fix_age(fix)
        return age is not None and age > self.stale_days

    def last_run(self, bug: Bug) -> dt.datetime | None:
        """When the probes last reported on ``bug``: its newest finding, else its environment."""
        times = [f.when for f in bug.findings if f.when is not None]
        return max(times) if times else (bug.primary.collected_at if bug.primary else None)

    def seen(self, bug: Bug) -> tuple[int, int]:
        """(times, machines): the first crash plus every occurrence `kbgen run` recorded, and on
        how many distinct machines (the failing machine and the occurrences' hosts)."""
        hosts = {o.host for o in bug.occurrences if o.host}
        if bug.primary is not None:
            hosts.add(bug.primary.host)
        return 1 + len(bug.occurrences), len(hosts)

    def most_seen(self, limit: int = 10) -> list[Bug]:
        """Bugs whose crash came back, most occurrences first (then the latest occurrence)."""
        again = [b for b in self.bugs.values() if b.occurrences]
        again.sort(key=lambda b: (len(b.occurrences), max(o.at for o in b.occurrences)), reverse=True)
        return again[:limit]

    def open_matrix(self) -> list[tuple[Status, list[int], int]]:
        """Open bugs counted by status (rows) and severity (columns, most severe first)."""
        counts = Counter((b.status, b.severity) for b in self.open_bugs)
        rows = []
        for status in OPEN_STATUSES:
            cells = [counts[(status, sev)] for sev in SEVERITY_ORDER]
            if sum(cells):
                rows.append((status, cells, sum(cells)))
        return rows

    def closed_on(self, bug: Bug) -> dt.date | None:
        """When ``bug`` was closed: its last status change to a closed status, else its update."""
        if self.is_open(bug):
            return None
        closing = [e.at for e in bug.history if e.kind.value == "status" and e.new in CLOSED_VALUES]
        return (max(closing) if closing else bug.updated).date()

    def weekly(self, weeks: int = 12) -> list[tuple[dt.date, int, int]]:
        """Bugs opened and closed per week (weeks start on Monday), the last ``weeks`` weeks."""
        start = self.today - dt.timedelta(days=self.today.weekday() + 7 * (weeks - 1))
        opened: Counter[int] = Counter()
        closed: Counter[int] = Counter()
        for bug in self.bugs.values():
            for counter, day in ((opened, bug.created.date()), (closed, self.closed_on(bug))):
                if day is not None and day >= start:
                    counter[(day - start).days // 7] += 1
        return [(start + dt.timedelta(weeks=i), opened[i], closed[i]) for i in range(weeks)]

    def open_by_error(self) -> list[tuple[str, int]]:
        """Error type ids with their open bugs, most first ("" for bugs not classified yet)."""
        counts = Counter(b.error or "" for b in self.open_bugs)
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))

    def open_by_severity(self) -> list[tuple[Severity, int]]:
        counts = Counter(b.severity for b in self.open_bugs)
        return [(sev, counts[sev]) for sev in SEVERITY_ORDER]

    def key_facts(self, bug: Bug, env: Any = None) -> list[tuple[str, Any]]:
        """(label, value) of the key facts of ``env`` (default: the failing machine) that it has."""
        env = env or bug.primary
        values = env.facts if env else {}
        known = [(label, values[key]) for label, key in KEY_FACTS if values.get(key) not in (None, "")]
        return known + [(key, v) for key, v in values.items() if key not in KEY_FACT_KEYS]

    def bug_summary(self, bug: Bug) -> str:
        """One paragraph a reader can take in at a glance: where it stands and what is known."""
        error = self.errors.get(bug.error) if bug.error else None
        parts = [f"{bug.status.value.capitalize()}, {bug.severity.value} severity"]
        parts[0] += f": {error.title}" if error else ""
        env = bug.primary
        if env and (gpu := env.facts.get("gpu.name")):
            torch = env.facts.get("torch-build.version")
            parts[0] += f" on {gpu}" + (f" with torch {torch}" if torch else "")
        steps = Counter(s.state.value for s in bug.progress)
        if bug.progress:
            done = steps["passed"] + steps["failed"]
            parts.append(
                f"{done} of {len(bug.progress)} checklist steps decided "
                f"({steps['passed']} passed, {steps['failed']} failed)"
            )
        causes = bug.confirmed_causes or bug.suspected_causes
        if causes:
            kind = "confirmed" if bug.confirmed_causes else "suspected"
            names = ", ".join(self.causes[c].title if c in self.causes else c for c in causes)
            parts.append(f"cause {kind}: {names}")
        if bug.fixes_tried:
            outcomes = Counter(a.outcome.value for a in bug.fixes_tried)
            count = len(bug.fixes_tried)
            how = ", ".join(f"{n} {o}" for o, n in outcomes.items())
            parts.append(f"{count} fix{'es' if count > 1 else ''} tried ({how})")
        if bug.repro and len(bug.environments) > 1:
            parts.extend(self._repro_on(bug))
        return "; ".join(parts) + "."

    def _repro_on(self, bug: Bug) -> list[str]:
        out = []
        for env in bug.environments:
            finding = env.finding(bug.repro or "")
            if finding is not None and finding.status in FAILED:
                out.append(f"reproduced on {env.host}")
            elif finding is not None and finding.status == ProbeStatus.pass_:
                out.append(f"does not reproduce on {env.host}")
        return out

    def fact(self, bug: Bug, key: str) -> Any:
        value = bug.primary.facts.get(key) if bug.primary else None
        return "" if value is None else value

    def tags_of(self, record: Any) -> list[str]:
        """A record's tags as the tags plugin may show them (the theme prints tag names raw)."""
        return list(dict.fromkeys(t for t in (clean_tag(tag) for tag in record.tags) if t))

    def tag_index(self) -> list[TagSection]:
        """The tags page: one section per anchor, by anchor; in each, the tagged records by
        label (a bug's is its id and title, the page title a bug page has)."""
        if self._tag_index is None:
            found: dict[str, TagSection] = {}
            entries: dict[str, list[tuple[str, tuple[str, str, str]]]] = {}
            kept, seen = self.tag_memo, {}
            for kind in (BUG, ERROR, CAUSE, FIX):
                for record in self.kb.records(kind).values():
                    mine = kept.get(id(record))
                    if mine is None or mine[0] is not record:
                        label = f"{record.id}: {record.title}" if kind is BUG else record.title
                        tags = [(tag_anchor(name), name) for name in self.tags_of(record)]
                        mine = (record, tags, (label.casefold(), (label, kind.name, record.id)))
                    seen[id(record)] = mine
                    for anchor, name in mine[1]:
                        section = found.get(anchor) or found.setdefault(anchor, TagSection(anchor))
                        if name not in section.names:
                            section.names.append(name)
                        entries.setdefault(anchor, []).append(mine[2])
            kept.clear()
            kept.update(seen)
            for anchor, section in found.items():
                section.names.sort()
                section.records = [entry for _, entry in sorted(entries[anchor])]  # by label, any case
            self._tag_index = [found[anchor] for anchor in sorted(found)]
        return self._tag_index


@dataclass
class TagSection:
    """One section of the tags page: its anchor, the tag names that share it (one, unless two
    differ only in case or punctuation) and the tagged records as (label, kind, id)."""

    anchor: str
    names: list[str] = field(default_factory=list)
    records: list[tuple[str, str, str]] = field(default_factory=list)

    def rows(self) -> list[tuple[tuple[str, str, str], tuple[str, str, str]]]:
        """Each entry under what it shows (its label carries the title), for the page's memo."""
        return [(record, record) for record in self.records]


_NOT_IN_SLUG = re.compile(r"[^\w\- ]")


def tag_anchor(name: str) -> str:
    """The anchor of a tag's section of the tags page, as Material's tags plugin names it
    (``tag:`` and pymdownx's lower-case slug), so links made for the theme's listing still land."""
    slug = _NOT_IN_SLUG.sub("", unicodedata.normalize("NFC", name).strip().lower())
    return "tag:" + slug.replace(" ", "-")


def clean_tag(tag: str) -> str:
    """``tag`` reduced to letters, digits, spaces and ``.+-_/``; the theme shows tags unescaped."""
    kept = "".join(ch for ch in str(tag) if ch.isalnum() or ch in " .+-_/")
    return " ".join(kept.split())[:60]
