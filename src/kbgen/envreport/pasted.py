"""A bug's environment filled from a pasted report, marked as pasted (not probed) with its source."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbgen.keyfacts import KEY_FACT_KEYS

if TYPE_CHECKING:
    from kbgen.models import Bug, Environment
    from kbgen.store import Entry, Project

#: the host of an environment read from text: nothing says which machine printed it
PASTED_HOST = "pasted"
_STATUS = {"fail": "fail", "warn": "warn", "pass": "pass"}


def pasted_environment(text: str, source: str) -> Environment | None:
    """The key facts and the verdicts of the environment ``text`` shows; None when it shows none."""
    from kbgen.envreport import environment_of
    from kbgen.models import Environment, Finding, ProbeStatus

    env = environment_of(text)
    facts = {
        k: v for k, v in env.facts.items() if k in KEY_FACT_KEYS and isinstance(v, str | int | float | bool)
    }
    if not facts:
        return None
    known = [v for v in env.verdicts if v.status in _STATUS]
    findings = []
    if known:
        worst = next(s for s in ("fail", "warn", "pass") if any(v.status == s for v in known))
        message = (
            "; ".join(f"{v.check}: {v.message}" for v in known if v.status != "pass") or "no check failed"
        )
        findings.append(Finding(probe="compat", status=ProbeStatus(worst), message=message[:4000]))
    return Environment(host=PASTED_HOST, facts=facts, findings=findings, pasted=source[:200])


def add_pasted(path: Path, project: Project, env: Environment) -> bool:
    """Add ``env`` to the bug at ``path`` (once per source); True when the file changed."""
    from kbgen.bugs.edit import save_bug
    from kbgen.kinds import BUG
    from kbgen.store import read_entry

    entry = read_entry(path, BUG, project)

    def change(fresh: Entry[Bug]) -> dict[str, Any]:
        envs = list(fresh.record.environments)
        if any(e.pasted == env.pasted and e.facts == env.facts for e in envs):
            return {}
        return {"environments": [*envs, env]}

    return save_bug(entry, change)
