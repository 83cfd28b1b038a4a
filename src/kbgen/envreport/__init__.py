"""Environment reports pasted as text: collect_env, nvidia-smi, pip/conda lines, nvcc, lscpu,
torch's warnings, ``kbgen probe --json``, alone or inside a log, read into the probes' facts.

:func:`read_report` finds every fact the text states (see :mod:`.parse` and :mod:`.warnings` for
the rules), :func:`kbgen.judge.complete` adds what follows from them, and :func:`kbgen.judge.judge`
gives the verdicts. ``kbgen env``, triage, ``import`` and ``new-bug --from-log`` all go through
:func:`environment_of`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from kbgen.envreport import prose as _prose  # noqa: F401  (registers its rules)
from kbgen.envreport import warnings as _warnings  # noqa: F401  (registers its rules)
from kbgen.envreport.layout import plain
from kbgen.envreport.parse import HIGH, Found, scan
from kbgen.judge import Scalar, Verdict, complete, judge
from kbgen.redact import redact_text

#: a line longer than this is cut before the rules see it (a minified blob is not a report)
MAX_LINE = 4000
#: at most this many lines are read (the start and the end of a longer text)
MAX_LINES = 60000


@dataclass
class Environment:
    """The facts found in a text, those derived from them, and the verdicts on them."""

    facts: dict[str, Scalar] = field(default_factory=dict)
    derived: dict[str, str] = field(default_factory=dict)
    formats: list[str] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)

    @property
    def found(self) -> bool:
        return bool(self.facts)

    def as_dict(self) -> dict[str, Any]:
        return {
            "facts": dict(sorted(self.facts.items())),
            "derived": dict(sorted(self.derived.items())),
            "formats": self.formats,
            "verdicts": [v.as_dict() for v in self.verdicts],
        }


def read_report(text: str) -> Found:
    """The facts ``text`` states (nothing derived), with the formats they came from; each line is
    read as if pasted bare (see :func:`kbgen.envreport.layout.plain`)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if len(lines) > MAX_LINES:
        half = MAX_LINES // 2
        lines = lines[:half] + lines[-half:]
    found = scan([plain(line[:MAX_LINE]) for line in lines])
    _probe_json(text, found)
    return found


def environment_of(text: str) -> Environment:
    """Facts, derived facts and verdicts for the environment ``text`` shows (secrets redacted)."""
    found = read_report(text)
    stated = {k: _clean(v) for k, v in found.facts.items()}
    full, derived = complete(stated)
    return Environment(full, derived, list(found.formats), judge(stated) if stated else [])


def _clean(value: Scalar) -> Scalar:
    return redact_text(value) if isinstance(value, str) else value


def _probe_json(text: str, found: Found) -> None:
    """Facts of a ``kbgen probe --json`` report pasted whole in the text."""
    start = text.find('{"schema_version"')
    if start < 0:
        start = text.find("{")
        if start < 0 or '"results"' not in text[start : start + 200_000]:
            return
    try:
        data, _ = json.JSONDecoder().raw_decode(text[start : start + 2_000_000])
    except ValueError:
        return
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        return
    for result in data["results"]:
        if not isinstance(result, dict) or not isinstance(result.get("facts"), dict):
            continue
        probe = str(result.get("id") or "")
        for key, value in result["facts"].items():
            if isinstance(value, str | int | float | bool) and probe:
                name = f"{probe}.{key}"
                if probe == "compat" and key == "toolkit":
                    name = "toolkit.nvcc"
                found.put(name, value, HIGH + 2)
    found.saw("kbgen probe --json")
