"""Match a log against the KB's error signatures and rank the error types it shows.

``triage_log`` streams the log (see :mod:`kbgen.triage.scan`), scores each error type by the
weights of the signatures that matched, and puts the first cause ahead of the errors it causes:
an error type lists in ``secondary_to`` the types that usually cause it, and when one of those
appears earlier in the same log it is marked ``consequence_of`` (the earliest such cause) and
ranked below it. An error type whose causes happen on other ranks (``causes_anywhere``: NCCL
timeouts) takes a cause anywhere in the log, as ranks print in any order and a log gathered
from several ranks may show the consequence first. A device-side assert followed by CUBLAS
failures, an OOM on one rank and NCCL watchdog timeouts on the others, an ECC error and NCCL
errors: each ranks its cause first.

A signature marked ``consequence`` (an allocation of an impossible size) makes its error type a
consequence of whatever else the log shows. A signature marked ``supporting`` (a bare
``KeyboardInterrupt``, a thread-dump header, a hint PyTorch appends to every CUDA error) never
shows its type alone: it needs a non-supporting signature of the type, or a second supporting one
with which it weighs at least MIN_SUPPORTING. A signature marked ``at_end`` (a build step of a
C++/CUDA extension, "Using ... as PyTorch extensions root...") counts only when it matches the
log's last non-blank line: the run printed nothing after it, as when it waits on a stale lock.
"""

from __future__ import annotations

import io
import re
from collections import defaultdict
from dataclasses import dataclass

import re2
from pydantic import BaseModel, ConfigDict, Field

from kbgen.redact import cut_head, cut_tail, redact_text
from kbgen.store import Kb
from kbgen.triage.scan import MAX_LINE, ScanResult, SignatureHits, scan_log, scan_stream
from kbgen.triage.signatures import (
    CompiledSignature,
    Screen,
    SignatureError,
    compile_exact,
    compile_screen,
    signature_problems,
)

__all__ = [
    "Compiled",
    "LogDraft",
    "Match",
    "TriageReport",
    "compile_signatures",
    "draft_from_text",
    "signature_problems",
    "triage_log",
    "triage_text",
]

#: an extra matching line adds this share of a signature's weight, up to REPEAT_CAP lines
REPEAT_BONUS = 0.1
REPEAT_CAP = 5
#: a secondary error keeps this share of its primary's score, so it ranks below it
SECONDARY_SHARE = 0.5
#: supporting signatures alone show an error type when two or more weigh this much together
MIN_SUPPORTING = 3.0
MAX_EXCERPT_LINES = 60
MAX_EXCERPT_CHARS = 8000
MAX_TITLE = 120


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LineHit(_Model):
    number: int
    text: str


class Match(_Model):
    """One error type the log shows, with the lines that gave it away."""

    error: str
    title: str
    score: float
    first_line: int
    count: int
    lines: list[LineHit]
    #: the error type in the same log that usually causes this one
    consequence_of: str | None = None
    excerpt: list[str] = Field(default=[], exclude=True)


class Skipped(_Model):
    """A signature triage refused to run, and why."""

    error: str
    where: str
    regex: str
    reasons: list[str]


class TriageReport(_Model):
    source: str
    lines: int
    matches: list[Match]
    skipped: list[Skipped] = []
    tail: list[str] = Field(default=[], exclude=True)


class LogDraft(_Model):
    """What ``kbgen new-bug --from-log`` needs: a title, the error type, the redacted excerpt."""

    title: str
    error: str | None
    message: str


# --------------------------------------------------------------------------- signatures


def compile_signatures(kb: Kb) -> tuple[list[CompiledSignature], list[Skipped]]:
    """Every signature RE2 can run, of every error type; the others are returned as skipped."""
    compiled: list[CompiledSignature] = []
    skipped: list[Skipped] = []
    for error_id, entry in sorted(kb.errors.items()):
        for index, signature in enumerate(entry.record.signatures):
            try:
                exact = compile_exact(signature.regex)
            except SignatureError as exc:
                line = entry.source.parsed.line_of(("signatures", index, "regex"))
                rel = kb.project.rel(entry.path)
                where = f"{rel}:{line}" if line else rel
                skipped.append(
                    Skipped(error=error_id, where=where, regex=signature.regex, reasons=[str(exc)])
                )
                continue
            screen = compile_screen(signature.regex)
            compiled.append(
                CompiledSignature(
                    error_id,
                    index,
                    exact,
                    screen,
                    signature.weight,
                    supporting=signature.supporting,
                    consequence=signature.consequence,
                    at_end=signature.at_end,
                )
            )
    return compiled, skipped


@dataclass(frozen=True)
class Compiled:
    """The KB's signatures and their screen, built once for many small texts in a row."""

    signatures: list[CompiledSignature]
    skipped: list[Skipped]
    screen: Screen

    @classmethod
    def of(cls, kb: Kb) -> Compiled:
        signatures, skipped = compile_signatures(kb)
        return cls(signatures, skipped, Screen(signatures))


# --------------------------------------------------------------------------- ranking


def triage_log(source: str, kb: Kb) -> TriageReport:
    """Scan ``source`` (a path, or ``-`` for stdin) and rank the error types it matches."""
    signatures, skipped = compile_signatures(kb)
    scan = scan_log(source, signatures)
    matches = rank(scan, kb)
    name = "<stdin>" if source == "-" else source
    return TriageReport(source=name, lines=scan.lines, matches=matches, skipped=skipped, tail=scan.tail)


def triage_text(text: str, kb: Kb, name: str = "<text>", compiled: Compiled | None = None) -> TriageReport:
    """Rank the error types a piece of text (an error message, a pasted traceback) shows;
    ``compiled``: the KB's signatures, built once when many texts are triaged in a row."""
    compiled = compiled or Compiled.of(kb)
    stream = io.BytesIO(text.encode("utf-8", errors="replace"))
    scan = scan_stream(stream, name, compiled.signatures, compiled.screen)
    matches = rank(scan, kb)
    return TriageReport(
        source=name, lines=scan.lines, matches=matches, skipped=compiled.skipped, tail=scan.tail
    )


def rank(scan: ScanResult, kb: Kb) -> list[Match]:
    """Matches best first: by score, with secondary errors placed below their cause."""
    by_error: dict[str, list[SignatureHits]] = defaultdict(list)
    last = _last_line(scan.tail)
    for hits in scan.hits.values():
        if hits.count and (not hits.signature.at_end or hits.signature.exact.search(last)):
            by_error[hits.signature.error].append(hits)
    shown = {error: found for error, found in by_error.items() if _enough_evidence(found)}
    matches = {error: _match(error, found, kb) for error, found in shown.items()}
    raw = {error: match.score for error, match in matches.items()}
    results = {error for error, found in shown.items() if _only_a_result(found)}
    causes = {error: _cause(match, matches, results, kb) for error, match in matches.items()}
    for error, match in matches.items():
        cause = causes[error]
        if cause is None:
            continue
        root, seen = cause, {error}
        while (above := causes.get(root)) is not None and root not in seen:
            seen.add(root)
            root = above
        match.consequence_of = cause
        match.score = round(min(raw[error], raw[root]) * SECONDARY_SHARE, 2)
    return sorted(matches.values(), key=lambda m: (-m.score, m.first_line, m.error))


def _last_line(tail: list[str]) -> str:
    """The log's last non-blank line, where an ``at_end`` signature must match."""
    return next((line for line in reversed(tail) if line.strip()), "")


def _enough_evidence(found: list[SignatureHits]) -> bool:
    """A non-supporting signature matched, or two different supporting ones that weigh enough
    together (a Ctrl-C and a frame in CUDA start-up; not the two hints every CUDA error carries)."""
    if any(not h.signature.supporting for h in found):
        return True
    return len(found) >= 2 and sum(h.signature.weight for h in found) >= MIN_SUPPORTING


def _only_a_result(found: list[SignatureHits]) -> bool:
    """Every line the error type matched on is one a ``consequence`` signature matched."""
    result_lines = {hit.number for h in found if h.signature.consequence for hit in h.lines}
    return bool(result_lines) and all(hit.number in result_lines for h in found for hit in h.lines)


def _cause(match: Match, matches: dict[str, Match], results: set[str], kb: Kb) -> str | None:
    """The error type that caused ``match``, if the log shows one; a result is never a cause."""
    others = [m for e, m in matches.items() if e != match.error and e not in results]
    if match.error in results:
        best = max(others, key=lambda m: (m.score, -m.first_line), default=None)
        return best.error if best else None
    record = kb.errors[match.error].record
    causes = [
        m
        for m in others
        if m.error in record.secondary_to and (record.causes_anywhere or m.first_line <= match.first_line)
    ]
    return min(causes, key=lambda m: (m.first_line, m.error)).error if causes else None


def _match(error: str, found: list[SignatureHits], kb: Kb) -> Match:
    score = sum(h.signature.weight * (1 + REPEAT_BONUS * min(h.count - 1, REPEAT_CAP)) for h in found)
    lines: dict[int, str] = {}
    for hits in found:
        for hit in hits.lines:
            lines.setdefault(hit.number, hit.text)
    first = min(found, key=lambda h: h.lines[0].number)
    excerpt = [*_excerpt_start(first.before), first.lines[0].text, *_excerpt_end(first.after)]
    # What triage shows or hands on (text, --json, a bug draft) never carries a secret.
    lines = {n: redact_text(t) for n, t in sorted(lines.items())[:8]}
    excerpt = redact_text("\n".join(excerpt)).split("\n")
    return Match(
        error=error,
        title=kb.errors[error].record.title,
        score=round(score, 2),
        first_line=first.lines[0].number,
        count=max(h.count for h in found),
        lines=[LineHit(number=n, text=t) for n, t in lines.items()],
        excerpt=excerpt,
    )


#: a traceback's frame, source or caret line (indented, or IPython's "File"), maybe after "[rank0]: "
_FRAME_LINE = re2.compile(r"^(?:\[[^\]]{0,60}\]:?)?(?:\s|File )")
_CHAIN = re2.compile(r"During handling of the above exception|The above exception was the direct cause")


def _excerpt_start(before: list[str]) -> list[str]:
    """The lines before an error worth keeping: back to the traceback (chain) that leads to it."""
    tracebacks = [i for i, line in enumerate(before) if "Traceback (most recent call last)" in line]
    if not tracebacks:  # a traceback deeper than the lines kept: keep its frames that are there
        frames = len(before)
        while frames > 0 and _FRAME_LINE.search(before[frames - 1]):
            frames -= 1
        return before[min(frames, max(0, len(before) - 5)) :]
    start = tracebacks[-1]
    # a chained exception's first traceback is where the trouble began
    for earlier in reversed(tracebacks[:-1]):
        if not any(_CHAIN.search(line) for line in before[earlier:start]):
            break
        start = earlier
    return before[start:]


def _excerpt_end(after: list[str]) -> list[str]:
    """The lines after an error up to the first blank one."""
    end = next((i for i, line in enumerate(after) if not line.strip()), len(after))
    return after[:end]


# --------------------------------------------------------------------------- drafts

_EXCEPTION_LINE = re2.compile(r"(?i)\b[\w.]*(?:Error|Exception|Fault)\b:?|\berror\b")
# "[rank0]: ", "(RayWorker pid=12) ", glog's "E1109 23:04:01.123 4242 file.cc:12] "
_LINE_PREFIX = re2.compile(
    r"^(?:\[[^\]]{0,60}\]:?\s*|\(\w+ pid=\d+[^)]*\)\s*|[EWI]\d{4} [\d:.]+ +\d+ \S+\] )+"
)


def draft_from_text(text: str, kb: Kb, name: str, compiled: Compiled | None = None) -> LogDraft:
    """A bug draft from a log held in memory: the primary error type, a title naming where it
    failed, and a redacted error excerpt (progress bars left out). Text is redacted before it is
    cut. ``compiled``: signatures compiled once (``kbgen import --github`` drafts thousands)."""
    return _draft(triage_text(text, kb, name, compiled))


def _draft(report: TriageReport) -> LogDraft:
    if report.matches:
        top = report.matches[0]
        excerpt, title_line, error = readable_lines(top.excerpt), top.lines[0].text, top.error
        for line in top.lines:
            if line.number == top.first_line:
                title_line = line.text
    else:
        excerpt, error = redact_text("\n".join(readable_lines(report.tail)[-20:])).split("\n"), None
        candidates = [line for line in excerpt if _EXCEPTION_LINE.search(line)]
        title_line = candidates[-1] if candidates else next((x for x in reversed(excerpt) if x.strip()), "")
    site = failure_site(excerpt)
    name = error_name(error) if error else ""
    if name and site:
        title = f"{name} in {site}"
    else:
        title = _title(title_line) + (f" in {site}" if site and _title(title_line) else "")
    title = _bounded_title(redact_text(title)) or f"Error in {report.source}"
    return LogDraft(title=title, error=error, message=_bounded(excerpt))


_PROGRESS = re.compile(r"\d+%\|.*\||\d+(?:\.\d+)?\s*(?:it|s)/(?:s|it)\b|\r")
_WHAT = re.compile(r"^\s*what\(\):\s*")
_FRAME = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>[^\s]+))?')
_AT_SOURCE = re.compile(
    r"(?P<path>[\w./\\:-]+\.(?:py|cu|cuh|cpp|cc|c|h))(?::(?P<line>\d+)|, (?P<line2>\d+)\])"
)
_LIBRARY = re.compile(
    r"site-packages|dist-packages|[/\\]lib[/\\]python\d|[/\\]torch[/\\]|runpy\.py|debugpy|<frozen", re.I
)
_ACRONYMS = {"cuda": "CUDA", "cpu": "CPU", "gpu": "GPU", "nccl": "NCCL", "ecc": "ECC", "cublas": "cuBLAS"}
_ACRONYMS |= {"cudnn": "cuDNN", "oom": "OOM"}


def readable_lines(lines: list[str]) -> list[str]:
    """Log lines without progress bars, and C++ ``what():`` prefixes dropped."""
    return [_WHAT.sub("", line) for line in lines if not _PROGRESS.search(line)]


def error_name(error_id: str) -> str:
    """``cuda-illegal-memory-access`` -> ``CUDA illegal memory access``."""
    words = [_ACRONYMS.get(w, w) for w in error_id.split("-")]
    if words and words[0] == error_id.split("-")[0]:
        words[0] = words[0].capitalize()
    return " ".join(words)


def failure_site(lines: list[str]) -> str | None:
    """Where a log says it failed: the innermost traceback frame in the user's own code
    (``bce_loss.py:31 (forward)``), else the source file a message names (``trainer.py:101``)."""
    frames = [m for line in lines if (m := _FRAME.search(line))]
    if frames:
        own = [m for m in frames if not _LIBRARY.search(m.group("path"))]
        if not own:
            return None  # only library frames (a launcher, torch itself): they do not say where
        frame = own[-1]
        name = re.split(r"[/\\]", frame.group("path"))[-1]
        func = frame.group("func")
        return f"{name}:{frame.group('line')}" + (f" ({func})" if func and func != "<module>" else "")
    for line in lines:
        if match := _AT_SOURCE.search(line):
            name = re.split(r"[/\\]", match.group("path"))[-1]
            return f"{name}:{match.group('line') or match.group('line2')}"
    return None


def _title(line: str) -> str:
    title: str = _LINE_PREFIX.sub("", _WHAT.sub("", line.strip()))
    return title.strip()


def _bounded_title(text: str) -> str:
    return cut_head(text, MAX_TITLE)


def _bounded(lines: list[str]) -> str:
    """The end of an excerpt whose secrets are already redacted, cut to size."""
    kept = [cut_head(line, MAX_LINE) for line in lines[-MAX_EXCERPT_LINES:]]
    return cut_tail("\n".join(kept).strip("\n"), MAX_EXCERPT_CHARS)
