"""Which pairs of visible GPUs can read each other's memory directly (CUDA peer-to-peer)."""

PROBE = {
    "id": "peer-access",
    "title": "GPU peer-to-peer access",
    "description": "For every ordered pair of visible GPUs, whether torch.cuda.can_device_access_peer "
    "allows direct access; the number of IOMMU groups and the iommu settings on the kernel command "
    "line (an IOMMU often blocks peer traffic), and NCCL_P2P_DISABLE / NCCL_P2P_LEVEL. Skipped with "
    "fewer than two visible GPUs.",
    "needs": ["torch"],
    "timeout": 60,
    "default": False,
}

import os

#: a bounded read: the kernel command line is a few hundred bytes
MAX_CMDLINE = 4096
#: at most this many IOMMU groups are counted (a large server has a few hundred)
MAX_GROUPS = 4096
#: a pair listing stops here; 16 GPUs make 240 ordered pairs
MAX_SHOWN = 8


def _iommu():
    facts = {}
    try:
        with open("/proc/cmdline", "rb") as handle:
            cmdline = handle.read(MAX_CMDLINE).decode("utf-8", "replace")
        words = [w for w in cmdline.split() if "iommu" in w.lower()]
        facts["iommu_cmdline"] = " ".join(words) if words else ""
    except OSError:
        facts["iommu_cmdline"] = None
    groups = "/sys/kernel/iommu_groups"
    if os.path.isdir(groups) and not os.path.islink(groups):
        count = 0
        with os.scandir(groups) as entries:
            for _ in entries:
                count += 1
                if count >= MAX_GROUPS:
                    break
        facts["iommu_groups"] = count
    else:
        facts["iommu_groups"] = 0
    return facts


def run():
    import torch

    facts = _iommu()
    for name in ("NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL"):
        facts[name] = os.environ.get(name)
    if not torch.cuda.is_available():
        facts["gpus"] = 0
        build = f"CUDA {torch.version.cuda} build" if torch.version.cuda else "CPU-only build"
        return {
            "status": "skip",
            "message": f"CUDA is not available to torch {torch.__version__} ({build})",
            "facts": facts,
        }
    count = torch.cuda.device_count()
    facts["gpus"] = count
    if count < 2:
        return {"status": "skip", "message": f"{count} visible GPU: no pair to check", "facts": facts}
    refused = [
        (a, b)
        for a in range(count)
        for b in range(count)
        if a != b and not torch.cuda.can_device_access_peer(a, b)
    ]
    facts["pairs"] = count * (count - 1)
    facts["pairs_without_peer"] = len(refused)
    if not refused:
        return {
            "status": "pass",
            "message": f"all {facts['pairs']} GPU pairs allow peer access",
            "facts": facts,
        }
    shown = ", ".join(f"{a}->{b}" for a, b in refused[:MAX_SHOWN])
    more = f" and {len(refused) - MAX_SHOWN} more" if len(refused) > MAX_SHOWN else ""
    return {
        "status": "fail",
        "message": f"{len(refused)} of {facts['pairs']} GPU pairs refuse peer access: {shown}{more}",
        "facts": facts,
    }
