"""Rank an error type's causes by the verdicts on the environment that came with the log.

A cause a failing check indicts goes first, then one a warning indicts, then the others in the
error type's own order of likelihood, and last the causes a passing check rules out. A cause a
failing check indicts that the error type does not list is still named first: the environment
speaks for it even when the log's error line is a consequence. One that only a warning indicts
comes after the causes the error type lists: a warning is weaker than the log's own error.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO

from kbgen.judge import Verdict, cleared, indicted

if TYPE_CHECKING:
    from kbgen.envreport import Environment
    from kbgen.store import Kb
    from kbgen.triage import TriageReport

_LIKELIHOOD = {"high": 0, "medium": 1, "low": 2}
#: the environment is read from at most this much of a log: its start and its end
HEAD = TAIL = 8 * 1024 * 1024


def rank_causes(error_id: str | None, kb: Kb, verdicts: list[Verdict]) -> list[dict[str, Any]]:
    """``[{cause, likelihood, verdict, reason}]`` best first, for the error type ``error_id``."""
    bad = dict(indicted(verdicts))
    good = cleared(verdicts)
    reasons = {v.cause: v.message for v in verdicts if v.cause and v.status in ("fail", "warn")}
    refs = list(kb.errors[error_id].record.causes) if error_id in kb.errors else []
    rows: list[dict[str, Any]] = [
        {"cause": r.cause, "likelihood": r.likelihood.value, "verdict": None, "reason": None} for r in refs
    ]
    listed = {r["cause"] for r in rows}
    rows += [
        {"cause": c, "likelihood": None, "verdict": None, "reason": None} for c in bad if c not in listed
    ]
    passed = {v.cause: v.message for v in verdicts if v.cause and v.status == "pass"}
    for row in rows:
        cause = row["cause"]
        if cause in bad:
            row["verdict"], row["reason"] = bad[cause], reasons.get(cause)
        elif cause in good:
            row["verdict"], row["reason"] = "pass", passed.get(cause)
        row["why"] = _why(row, error_id)

    def key(item: tuple[int, dict[str, Any]]) -> tuple[int, int, int]:
        index, row = item
        order = {"fail": 0, "warn": 1, None: 2, "pass": 3}[row["verdict"]]
        if order == 1 and row["likelihood"] is None:
            order = 2  # a warning alone does not outrank the causes the error type lists
        return order, _LIKELIHOOD.get(row["likelihood"] or "", 3), index

    return [row for _, row in sorted(enumerate(rows), key=key)]


def _why(row: dict[str, Any], error_id: str | None) -> str:
    """The evidence that put a cause where it stands, in a phrase."""
    verdict, reason, likelihood = row["verdict"], row["reason"], row["likelihood"]
    if verdict in ("fail", "warn"):
        return f"the environment indicts it ({verdict}): {reason}" if reason else f"a check {verdict}s on it"
    if verdict == "pass":
        return "a passing check makes it unlikely" + (f": {reason}" if reason else "")
    return f"{error_id} lists it as {likelihood} likelihood" if likelihood else "named by the environment"


def first_cause(report: TriageReport, kb: Kb, verdicts: list[Verdict]) -> str | None:
    """The cause ranked first for the log: its top match's, else the worst the environment indicts."""
    if report.matches:
        ranked = rank_causes(report.matches[0].error, kb, verdicts)
        return ranked[0]["cause"] if ranked else None
    bad = indicted(verdicts)
    return bad[0][0] if bad else None


@dataclass
class Triaged:
    report: TriageReport
    environment: Environment
    #: the log's text as read for the environment: its start and its end (see HEAD and TAIL)
    text: str = ""


def triage_with_environment(source: str, kb: Kb) -> Triaged:
    """Triage ``source`` (a path or ``-``) and read the environment the same text shows."""
    import sys

    from kbgen.envreport import environment_of
    from kbgen.triage import TriageReport as Report
    from kbgen.triage import compile_signatures, rank
    from kbgen.triage.scan import open_log, scan_stream

    stream, name = open_log(source)
    try:
        head = stream.read(HEAD)
        more = stream.read(1)
        tail = b""
        rest: BinaryIO = io.BytesIO(head + more)
        if more:
            tail = _tail(stream, more)
            if stream is sys.stdin.buffer:
                rest = io.BufferedReader(_Chain(head + more, stream))
            else:
                stream.seek(0)
                rest = stream
        signatures, skipped = compile_signatures(kb)
        scan = scan_stream(rest, name, signatures)
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    text = (head + (b"\n" + tail if tail else b"")).decode("utf-8", errors="replace")
    report = Report(source=name, lines=scan.lines, matches=rank(scan, kb), skipped=skipped, tail=scan.tail)
    return Triaged(report, environment_of(text), text)


def _tail(stream: BinaryIO, more: bytes) -> bytes:
    if not stream.seekable():
        return b""
    end = stream.seek(0, 2)
    stream.seek(max(HEAD, end - TAIL))
    return stream.read(TAIL)


class _Chain(io.RawIOBase):
    """The bytes already read from stdin, then the rest of it (stdin cannot be read twice)."""

    def __init__(self, first: bytes, rest: BinaryIO) -> None:
        super().__init__()
        self._first, self._rest = first, rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        size = len(buffer)
        if self._first:
            chunk, self._first = self._first[:size], self._first[size:]
        else:
            chunk = self._rest.read(size)
        buffer[: len(chunk)] = chunk
        return len(chunk)


def source_text(source: str, *, refuse_binary: bool = True) -> tuple[str, str]:
    """``(text, name)`` of a file or ``-``: all of it, or its first and last 8 MiB.
    ``refuse_binary=False``: the caller's scan refuses a binary file (the triage, for a log)."""
    import sys

    from kbgen.errors import KbgenError
    from kbgen.triage.scan import open_log

    stream, name = open_log(source)
    try:
        head = stream.read(HEAD)
        more = stream.read(1)
        tail = _tail(stream, more) if more else b""
    except OSError as exc:
        raise KbgenError(f"{name}: cannot read: {exc.strerror or exc}") from None
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    if refuse_binary and b"\x00" in head[:8192]:
        raise KbgenError(f"{name}: looks like a binary file, not a text report")
    return (head + (b"\n" + tail if tail else b"")).decode("utf-8", errors="replace"), name
