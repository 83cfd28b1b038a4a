"""Plain-text views of probes and reports for the terminal (no click, no rich: just strings)."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kbgen.probes.discovery import ProbeSpec
    from kbgen.probes.report import ProbeReport

Style = Callable[[str, str], str]  # (text, status) -> text, e.g. coloured
TAIL_LINES = 8


def _plain(text: str, status: str) -> str:
    return text


def format_header(report: ProbeReport) -> str:
    """One line: the interpreter probed and how importing torch went."""
    line = f"Python {report.python.version or '?'} at {report.python.executable}"
    torch = report.torch_import
    if torch is not None and torch.status == "ok":
        line += f"; torch {torch.version} imported in {torch.seconds or 0:.2f} s"
    elif torch is not None:
        line += f"; torch: {torch.status}" + (f" ({torch.message})" if torch.message else "")
    return line


def format_table(report: ProbeReport, style: Style = _plain) -> str:
    """A row per probe (id, status, message); the end of its output under a probe that died."""
    width = max([len("PROBE"), *(len(r.id) for r in report.results)])
    lines = [format_header(report), "", f"{'PROBE':<{width}}  {'STATUS':<7}  RESULT"]
    for result in report.results:
        status = result.status.value
        lines.append(f"{result.id:<{width}}  {style(f'{status:<7}', status)}  {result.message}")
        if result.status.value in ("crash", "timeout", "error") and result.stderr_tail:
            lines.extend(f"{'':<{width}}  | {text}" for text in last_words(result.stderr_tail))
    lines.append("")
    lines.append(format_summary(report))
    return "\n".join(lines)


def last_words(output: str) -> list[str]:
    """The lines that say what happened: a fatal-error dump from its top (innermost frame first), else
    the end (a Python traceback ends with the exception)."""
    lines = output.rstrip().splitlines()
    for index, line in enumerate(lines):
        if line.startswith(("Fatal Python error", "Current thread", "Thread 0x")):
            return lines[index : index + TAIL_LINES]
    return lines[-TAIL_LINES:]


def format_summary(report: ProbeReport) -> str:
    order = ["pass", "warn", "fail", "error", "crash", "timeout", "skip"]
    counts = report.counts()
    parts = ", ".join(f"{counts[s]} {s}" for s in order if s in counts)
    noun = "probe" if len(report.results) == 1 else "probes"
    return f"{len(report.results)} {noun} in {report.wall_s:.2f} s: {parts or 'none ran'}"


def format_list(specs: list[ProbeSpec], root_label: Callable[[ProbeSpec], str]) -> str:
    """Every probe: id, whether it is in the default set, what it needs, its time limit and title."""
    width = max([len("ID"), *(len(s.id) for s in specs)])
    lines = [f"{'ID':<{width}}  DEFAULT  {'NEEDS':<14}  TIMEOUT  TITLE"]
    for spec in specs:
        meta = spec.meta
        needs = ", ".join(meta.needs) or "-"
        default = "yes" if meta.default else "no"
        lines.append(f"{spec.id:<{width}}  {default:<7}  {needs:<14}  {meta.timeout:>5g} s  {meta.title}")
        body = f"{meta.description} [{root_label(spec)}]" if meta.description else f"[{root_label(spec)}]"
        lines.extend(
            textwrap.wrap(
                body,
                100,
                break_on_hyphens=False,
                initial_indent=" " * (width + 2),
                subsequent_indent=" " * (width + 2),
            )
        )
    lines.append("")
    lines.append(
        "needs: torch = runs only where torch imports; torch? = uses torch when it can; cuda = needs a"
    )
    lines.append("CUDA device (else skipped); command:NAME = needs NAME on PATH.")
    return "\n".join(lines)
