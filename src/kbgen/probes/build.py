"""Turn a :class:`~kbgen.probes.record.ProbeRun` into a redacted :class:`ProbeReport`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kbgen import __version__, clock
from kbgen.models import ProbeStatus
from kbgen.probes.report import Interpreter, ProbeReport, ProbeResult, TorchImport
from kbgen.redact import REDACTED, is_secret_name, redact_text

if TYPE_CHECKING:
    import datetime as dt

    from kbgen.probes.discovery import ProbeSpec
    from kbgen.probes.record import ProbeRun, RawResult


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
    run: ProbeRun,
    specs: list[ProbeSpec],
    *,
    redact_paths: bool = False,
    now: dt.datetime | None = None,
    host: str | None = None,
) -> ProbeReport:
    """The report for ``specs``, in their order; probes that did not run get an error result.

    ``now`` and ``host`` default to :mod:`kbgen.clock`'s, which tests pin with ``KBGEN_NOW``.
    """
    scrub = Scrubber(redact_paths)
    ran = specs if run.interpreter_error is None else []
    results = [_result(spec, run.results.get(spec.id), scrub) for spec in ran]
    results = _judged(results)
    return ProbeReport(
        kbgen_version=__version__,
        collected_at=now or clock.now(),
        host=scrub.text(host or clock.hostname()) or "",
        python=Interpreter(executable=scrub.text(run.python) or "", version=run.python_version),
        interpreter_error=scrub.text(run.interpreter_error),
        torch_import=TorchImport(**_scrubbed(run.torch_import, scrub)) if run.torch_import else None,
        wall_s=round(run.wall, 3),
        results=results,
    )


def run_probes(
    specs: list[ProbeSpec],
    *,
    python: str | None = None,
    timeout: float | None = None,
    redact_paths: bool = False,
    now: dt.datetime | None = None,
    host: str | None = None,
) -> ProbeReport:
    """Run ``specs`` in ``python`` (default $KBGEN_PYTHON, else this interpreter); never raises for a probe.

    Raises ProbeError only when ``python`` does not exist or is not executable.
    """
    from kbgen.probes.runner import ProbeSession

    session = ProbeSession(python, torch=any(s.uses_torch for s in specs), timeout=timeout)
    run = session.run(specs)
    return build_report(run, specs, redact_paths=redact_paths, now=now, host=host)


def _result(spec: ProbeSpec, got: RawResult | None, scrub: Scrubber) -> ProbeResult:
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


def _judged(results: list[ProbeResult]) -> list[ProbeResult]:
    """The built-in compat probe's verdict comes from kbgen.judge, over the facts of every probe."""
    from kbgen.models import ProbeStatus as Status
    from kbgen.probes.judged import compat_outcome

    compat = next((r for r in results if r.id == "compat" and r.builtin and r.status == Status.pass_), None)
    if compat is None:
        return results
    facts = {f"{r.id}.{k}": v for r in results for k, v in r.facts.items()}
    status, message, own = compat_outcome(facts, dict(compat.facts))
    judged = compat.model_copy(update={"status": Status(status), "message": message, "facts": own})
    return [judged if r is compat else r for r in results]


def _scrubbed(data: dict[str, Any], scrub: Scrubber) -> dict[str, Any]:
    return {
        k: scrub.text(v) if isinstance(v, str) else v
        for k, v in data.items()
        if v is not None or k == "status"
    }
