"""The key facts of a node, taken from its probe report, and the drift verdicts across a fleet.

Facts that should agree (driver, CUDA runtime, torch build, cuDNN, NCCL, kernel, container) are
compared with the majority of the nodes that report them. Health facts have a right value of
their own whatever the majority says: no uncorrected ECC errors, no serious Xid events, a GPU
present where the fleet has GPUs, a capability the torch build was compiled for, a CUDA torch.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import Callable, Iterable

from kbgen.fleet.model import Drift, NodeHead, NodeView
from kbgen.probes.report import ProbeReport, Scalar

Facts = dict[str, Scalar]
#: a machine or container id as the system probe reports it (a digest); anything else says nothing
_ID = re.compile(r"[0-9a-f]{6,64}")

#: key fact -> the probe fact it is read from ("<probe-id>.<fact>")
SOURCES: dict[str, str] = {
    "os": "system.os",
    "kernel": "system.kernel",
    "container": "system.container",
    "gpu": "gpu.name",
    "gpu_count": "gpu.count",
    "capability": "gpu.capability",
    "driver": "gpu.driver",
    "driver_cuda": "gpu.driver_cuda",
    "torch": "torch-build.version",
    "cuda_runtime": "torch-build.cuda",
    "cudnn": "torch-build.cudnn",
    "cpu_only": "torch-build.cpu_only",
    "arch_ok": "compat.arch_ok",
    "python": "system.python",
    "machine_id": "system.machine_id",
    "container_id": "system.container_id",
}
#: facts every node of one fleet should share; a node that differs from the majority drifts
AGREE = ("driver", "driver_cuda", "cuda_runtime", "torch", "cudnn", "nccl", "kernel", "container")
#: how importing torch went when the node has no working torch (see ProbeReport.torch_import)
NO_TORCH = {
    "missing": "no torch installed",
    "crash": "importing torch crashed",
    "timeout": "importing torch hung",
}


def key_facts(report: ProbeReport) -> Facts:
    """The facts the fleet compares, without the ones the node did not report."""
    flat = report.facts()
    facts: Facts = {key: flat[source] for key, source in SOURCES.items() if flat.get(source) is not None}
    if flat.get("system.container_image"):  # the image says more than "docker"
        facts["container"] = flat["system.container_image"]
    nccl = next((v for k, v in sorted(flat.items()) if k.startswith("packages.") and "nccl" in k), None)
    if nccl is not None:
        facts["nccl"] = nccl
    facts["ecc_uncorrected"] = _total(flat, "ecc_uncorrected")
    xid = flat.get("gpu-health.xid_events")
    if xid is not None:
        facts["xid_events"] = xid
    if report.torch_import is not None and report.torch_import.status in NO_TORCH:
        facts["torch_import"] = report.torch_import.status
    return facts


def machine_of(facts: Facts) -> str | None:
    """Which machine a report is from (its machine id, and container id inside a container);
    None when the report does not say (a kbgen older than these facts, a system without them)."""
    parts = [str(facts[k]) for k in ("machine_id", "container_id") if facts.get(k)]
    return "/".join(parts) if parts and all(_ID.fullmatch(p) for p in parts) else None


def _total(flat: Facts, suffix: str) -> int:
    return sum(int(v) for k, v in flat.items() if k.endswith(suffix) and isinstance(v, int | float))


def majorities(nodes: Iterable[Facts]) -> Facts:
    """For each fact that should agree: the value more than half of the reporting nodes share."""
    counts: dict[str, Counter[Scalar]] = {key: Counter() for key in (*AGREE, "gpu_count")}
    for facts in nodes:
        for key, counter in counts.items():
            if key in facts:
                counter[facts[key]] += 1
    result: Facts = {}
    for key, counter in counts.items():
        if counter:
            value, count = max(counter.items(), key=lambda item: (item[1], str(item[0])))
            if count * 2 > sum(counter.values()):
                result[key] = value
    return result


Check = Callable[[Facts, Facts], Drift | None]


def _differs(key: str) -> Check:
    def check(facts: Facts, majority: Facts) -> Drift | None:
        if key in facts and key in majority and facts[key] != majority[key]:
            return Drift(fact=key, value=facts[key], majority=majority[key], reason="differs from the fleet")
        return None

    return check


def _ecc(facts: Facts, majority: Facts) -> Drift | None:
    value = facts.get("ecc_uncorrected") or 0
    if isinstance(value, int | float) and value > 0:
        return Drift(fact="ecc_uncorrected", value=value, majority=0, reason="uncorrected ECC errors")
    return None


def _xid(facts: Facts, majority: Facts) -> Drift | None:
    value = facts.get("xid_events") or 0
    if isinstance(value, int | float) and value > 0:
        return Drift(fact="xid_events", value=value, majority=0, reason="Xid events in the kernel log")
    return None


def _missing_gpu(facts: Facts, majority: Facts) -> Drift | None:
    want, have = majority.get("gpu_count"), facts.get("gpu_count", 0)
    if isinstance(want, int) and isinstance(have, int) and have < want:
        return Drift(fact="gpu_count", value=have, majority=want, reason="fewer GPUs than the fleet")
    return None


def _arch(facts: Facts, majority: Facts) -> Drift | None:
    if facts.get("arch_ok") is False:
        reason = "the torch build has no kernels for this GPU's capability"
        return Drift(fact="capability", value=facts.get("capability"), majority=None, reason=reason)
    return None


def _cpu_only(facts: Facts, majority: Facts) -> Drift | None:
    if facts.get("cpu_only") is True and majority.get("gpu_count", 0):
        return Drift(fact="cpu_only", value=True, majority=False, reason="CPU-only torch on a GPU fleet")
    return None


def _no_torch(facts: Facts, majority: Facts) -> Drift | None:
    status = facts.get("torch_import")
    if "torch" not in facts and isinstance(status, str) and status in NO_TORCH and majority.get("gpu_count"):
        reason = f"{NO_TORCH[status]}: no torch on a GPU fleet"
        return Drift(fact="torch", value="none", majority=majority.get("torch"), reason=reason)
    return None


CHECKS: tuple[Check, ...] = (
    *(_differs(k) for k in AGREE),
    _ecc,
    _xid,
    _missing_gpu,
    _arch,
    _cpu_only,
    _no_torch,
)


def node_views(records: list[NodeHead]) -> list[NodeView]:
    """Every node with its key facts and drift, sorted by host; a host name several machines gave
    is one row per machine, the node's own report first, each saying which machine it is."""
    rows: list[tuple[NodeHead, str, Facts, dt.datetime | None, str]] = []
    for record in sorted(records, key=lambda r: r.node):
        rows.append((record, record.machine or "", record.facts, record.collected_at, _own(record)))
        for other in sorted(record.others, key=lambda o: o.collected_at, reverse=True):
            shared = (
                "another machine under this host name (a re-installed node, a second container); "
                f"the newest report is machine {record.machine}'s"
            )
            rows.append((record, other.machine, other.facts, other.collected_at, shared))
    majority = majorities(facts for _, _, facts, when, _ in rows if when is not None)
    views = []
    for record, machine, facts, when, shared in rows:
        attempt = record.last_attempt if not machine or machine == (record.machine or "") else None
        views.append(
            NodeView(
                host=record.node,
                machine=machine if record.others else "",
                other=bool(shared) and machine != (record.machine or ""),
                shared=shared,
                collected_at=when,
                status=attempt.status if attempt else ("ok" if when is not None else "unknown"),
                error=attempt.error if attempt else "",
                facts=facts,
                drift=[d for d in (check(facts, majority) for check in CHECKS) if d]
                if when is not None
                else [],
            )
        )
    return views


def _own(record: NodeHead) -> str:
    if not record.others:
        return ""
    return f"{len(record.others) + 1} machines under this host name; this one sent the newest report"
