"""The key facts of a node, taken from its probe report, and the drift verdicts across a fleet.

Facts that should agree (driver, CUDA runtime, torch build, cuDNN, NCCL, kernel, container) are
compared with the majority of the nodes that report them. Health facts have a right value of
their own whatever the majority says: no uncorrected ECC errors, no serious Xid events, a GPU
present where the fleet has GPUs, a capability the torch build was compiled for, a CUDA torch.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable

from kbgen.fleet.model import Drift, NodeHead, NodeView
from kbgen.probes.report import ProbeReport, Scalar

Facts = dict[str, Scalar]

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
}
#: facts every node of one fleet should share; a node that differs from the majority drifts
AGREE = ("driver", "driver_cuda", "cuda_runtime", "torch", "cudnn", "nccl", "kernel", "container")


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
    return facts


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


CHECKS: tuple[Check, ...] = (*(_differs(k) for k in AGREE), _ecc, _xid, _missing_gpu, _arch, _cpu_only)


def node_views(records: list[NodeHead]) -> list[NodeView]:
    """Every node with its key facts and drift, sorted by host."""
    majority = majorities(r.facts for r in records if r.collected_at is not None)
    views = []
    for record in sorted(records, key=lambda r: r.node):
        attempt = record.last_attempt
        reported = record.collected_at is not None
        views.append(
            NodeView(
                host=record.node,
                collected_at=record.collected_at,
                status=attempt.status if attempt else ("ok" if reported else "unknown"),
                error=attempt.error if attempt else "",
                facts=record.facts,
                drift=[d for d in (check(record.facts, majority) for check in CHECKS) if d]
                if reported
                else [],
            )
        )
    return views
