"""Turn a session's raw outcomes into a redacted :class:`ProbeReport`."""

from __future__ import annotations

import datetime as dt
import socket
from typing import TYPE_CHECKING, Any

from kbgen import __version__
from kbgen.models import ProbeStatus
from kbgen.probes.report import Interpreter, ProbeReport, ProbeResult, TorchImport
from kbgen.redact import REDACTED, is_secret_name, redact_text

if TYPE_CHECKING:
    from kbgen.probes.discovery import ProbeSpec
    from kbgen.probes.runner import Outcome, ProbeSession


class Scrubber:
    """Secrets out of every string; with ``paths``, the home folder and user name too."""

    def __init__(self, paths: bool) -> None:
        self.paths = paths

    def text(self, value: str | None) -> str | None:
        return None if value is None else redact_text(value, paths=self.paths)

    def facts(self, facts: dict[str, Any]) -> dict[str, Any]:
        clean: dict[str, Any] = {}
        for key, value in facts.items():
            # a fact named like a credential (a probe reporting env vars) loses its value entirely
            if is_secret_name(key.rsplit(".", 1)[-1]) and value not in (None, ""):
                clean[key] = REDACTED
            elif isinstance(value, str):
                clean[key] = redact_text(value, paths=self.paths)
            else:
                clean[key] = value
        return clean


def build_report(
    session: ProbeSession,
    specs: list[ProbeSpec],
    interpreter_error: str | None,
    wall: float,
    *,
    redact_paths: bool = False,
    now: dt.datetime | None = None,
    host: str | None = None,
) -> ProbeReport:
    """The report for ``specs``, in their order; probes that did not run get an error result."""
    scrub = Scrubber(redact_paths)
    outcomes = session.outcomes()
    ran = specs if interpreter_error is None else []
    results = [_result(spec, outcomes.get(spec.id), scrub) for spec in ran]
    hello = session.hello or {}
    torch_lane = session.lanes["torch"].torch_import
    return ProbeReport(
        kbgen_version=__version__,
        collected_at=now or dt.datetime.now(dt.timezone.utc).astimezone().replace(microsecond=0),
        host=scrub.text(host or socket.gethostname()) or "",
        python=Interpreter(executable=scrub.text(session.python) or "", version=hello.get("python")),
        interpreter_error=scrub.text(interpreter_error),
        torch_import=TorchImport(**_scrubbed(torch_lane, scrub)) if torch_lane else None,
        wall_s=round(wall, 3),
        results=results,
    )


def _result(spec: ProbeSpec, got: Outcome | None, scrub: Scrubber) -> ProbeResult:
    base = {"id": spec.id, "title": spec.meta.title, "builtin": spec.builtin}
    if got is None:
        return ProbeResult(**base, status=ProbeStatus.error, message="not run (interrupted)")
    return ProbeResult(
        **base,
        status=ProbeStatus(got.status),
        message=scrub.text(got.message) or "",
        facts=scrub.facts(got.facts),
        duration_s=round(got.seconds, 3),
        signal=got.signal,
        exit_code=got.exit_code,
        stderr_tail=scrub.text(got.output),
    )


def _scrubbed(data: dict[str, Any], scrub: Scrubber) -> dict[str, Any]:
    return {
        k: scrub.text(v) if isinstance(v, str) else v
        for k, v in data.items()
        if v is not None or k == "status"
    }
