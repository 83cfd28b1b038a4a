"""The project's bugs a crash resembles, ranked, and what a person is told about them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from kbgen.fingerprint import FINGERPRINT_VERSION, Fingerprint, fingerprint_of
from kbgen.seen.compare import compare

if TYPE_CHECKING:
    from kbgen.models import Bug
    from kbgen.store import Kb
    from kbgen.triage import TriageReport

__all__ = [
    "KnownBug",
    "bug_fingerprint",
    "crash_fingerprint",
    "known_bugs",
    "known_for_report",
    "seen_line",
    "times_seen",
]

#: a bug is listed when it looks at least this much like the crash (or is claimed the same)
MIN_SCORE = 0.3
MAX_LISTED = 5


class KnownBug(BaseModel):
    """A bug of the project that a crash resembles; ``same`` is kbgen's claim it is that bug."""

    model_config = ConfigDict(extra="forbid")

    id: str
    status: str
    same: bool
    score: float
    why: str


def bug_fingerprint(bug: Bug) -> Fingerprint | None:
    """The bug's stored fingerprint, or one made from its message: for a bug kbgen migrate has
    not reached yet, and for one stored under older rules (another ``version``), so a crash is
    always compared by the rules that made its own fingerprint."""
    stored = bug.fingerprint
    if stored is not None and (stored.version == FINGERPRINT_VERSION or not bug.message):
        return stored
    return fingerprint_of(bug.message) if bug.message else None


def known_bugs(kb: Kb, crash: Fingerprint, error: str | None) -> list[KnownBug]:
    """The bugs ``crash`` resembles, the ones claimed the same first, then by score."""
    found: list[KnownBug] = []
    for bug_id, entry in kb.bugs.items():
        bug = entry.record
        if bug.duplicate_of:
            continue  # its original stands for it
        old = bug_fingerprint(bug)
        if old is None:
            continue
        like = compare(crash, old, same_type=error is not None and error == bug.error)
        if like.same or like.score >= MIN_SCORE:
            found.append(
                KnownBug(id=bug_id, status=bug.status.value, same=like.same, score=like.score, why=like.why)
            )
    found.sort(key=lambda k: (not k.same, -k.score, k.id))
    return found[:MAX_LISTED]


def times_seen(bug: Bug) -> int:
    """How often the bug's crash was seen: the first report and each occurrence since."""
    return 1 + len(bug.occurrences)


def machines(bug: Bug) -> int:
    hosts = {o.host for o in bug.occurrences if o.host}
    if bug.primary is not None:
        hosts.add(bug.primary.host)
    return max(1, len(hosts))


def seen_line(bug: Bug) -> str:
    """``Seen before: BUG-... (fixed 12 Oct: cause, fix; 3 occurrences on 2 machines)``."""
    parts: list[str] = []
    closed = next(
        (e for e in reversed(bug.history) if e.kind.value == "status" and e.new == bug.status.value), None
    )
    state = bug.status.value + (f" {closed.at.day} {closed.at:%b}" if closed is not None else "")
    why = list(bug.confirmed_causes[:1]) + [f.fix for f in bug.fixes_tried if f.outcome.value == "worked"][:1]
    parts.append(state + (": " + ", ".join(why) if why else ""))
    n, m = times_seen(bug), machines(bug)
    parts.append(f"{n} occurrence{'s' if n != 1 else ''} on {m} machine{'s' if m != 1 else ''}")
    return f"Seen before: {bug.id} ({'; '.join(parts)}) - {bug.title}"


def crash_fingerprint(report: TriageReport) -> Fingerprint:
    """The fingerprint of a triaged log, made from the same redacted excerpt ``new-bug
    --from-log`` stores as the bug's message, so a log and the bug filed from it agree."""
    from kbgen.redact import redact_text
    from kbgen.triage import readable_lines

    lines = readable_lines(report.matches[0].excerpt) if report.matches else readable_lines(report.tail)
    return fingerprint_of(redact_text("\n".join(lines)))


def known_for_report(kb: Kb, report: TriageReport) -> list[KnownBug]:
    """The project's bugs a triaged log resembles."""
    error = report.matches[0].error if report.matches else None
    return known_bugs(kb, crash_fingerprint(report), error)
