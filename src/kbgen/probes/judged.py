"""The compat probe's verdicts, given by :mod:`kbgen.judge` from the facts of the whole run.

The probe itself runs on the machine under test with the standard library only; it collects the
facts (torch's CUDA runtime and arch list, the GPUs' capabilities, the driver's CUDA, nvcc) and
kbgen judges them here, for a local run and a shipped one alike, with the judge ``kbgen env``
uses on pasted reports.
"""

from __future__ import annotations

from typing import Any

from kbgen.judge import Scalar, Verdict, judge

#: compat's own fact -> the probes' name for it, used where the other probes did not say
ALIASES = {
    "toolkit": "toolkit.nvcc",
    "runtime": "torch-build.cuda",
    "arch_list": "torch-build.arch_list",
    "capability": "gpu.capability",
    "driver_cuda": "gpu.driver_cuda",
    "hip": "torch-build.hip",
}
_STATUS = {"pass": "pass", "warn": "warn", "fail": "fail"}


def judge_facts(facts: dict[str, Scalar]) -> dict[str, Scalar]:
    """The run's flat facts (``<probe>.<fact>``) under the names the judge reads."""
    out: dict[str, Scalar] = {k: v for k, v in facts.items() if v is not None}
    for own, name in ALIASES.items():
        value = facts.get(f"compat.{own}")
        if value not in (None, "") and out.get(name) in (None, ""):
            out[name] = value
    if (
        out.get("torch-build.cuda") is None
        and "torch-build.cpu_only" not in out
        and "compat.runtime" in facts
    ):
        out["torch-build.cpu_only"] = not (facts.get("compat.runtime") or facts.get("compat.hip"))
    return out


def compat_outcome(facts: dict[str, Scalar], own: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """(status, message, facts) of the compat probe, judged from every fact of the run."""
    verdicts = judge(judge_facts(facts))
    known = [v for v in verdicts if v.status != "unknown"]
    new = dict(own)
    for verdict in known:
        key = {"gpu-arch": "arch_ok", "driver-runtime": "driver_ok", "toolkit-runtime": "toolkit_ok"}.get(
            verdict.check
        )
        if key:
            new[key] = verdict.status != "fail" if key != "toolkit_ok" else verdict.status == "pass"
    if not known:
        return "skip", "nothing to compare (no GPU, driver or toolkit facts)", new
    return _worst(known), "; ".join(f"{v.check}: {v.message}" for v in known), new


def _worst(verdicts: list[Verdict]) -> str:
    order = ("fail", "warn", "pass")
    return next(s for s in order if any(v.status == s for v in verdicts))
