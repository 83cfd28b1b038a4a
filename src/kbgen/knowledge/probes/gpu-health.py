"""GPU health beyond model and driver: compute mode, ECC counters, page retirement, Xid events."""

PROBE = {
    "id": "gpu-health",
    "title": "GPU health and compute mode",
    "description": "Asks nvidia-smi for each GPU's compute mode, uncorrected ECC count, pending page "
    "retirement and temperature, counts compute processes, and reads the kernel log for NVRM Xid "
    "events when the user may. Skipped when nvidia-smi is not installed.",
    "needs": [],
    "timeout": 40,
    "default": False,
}

import re
import shutil
import subprocess

FIELDS = (
    "index",
    "compute_mode",
    "ecc.errors.uncorrected.volatile.total",
    "retired_pages.pending",
    "temperature.gpu",
)
BASIC_FIELDS = ("index", "compute_mode", "temperature.gpu")
# Double-bit ECC, page retirement / row remapping, fallen off the bus, and the newer fatal memory codes.
SERIOUS_XIDS = {48, 63, 64, 74, 79, 92, 94, 95}
XID_RE = re.compile(r"NVRM: Xid \([^)]{0,40}\): (\d+)")


def _smi(smi, *args):
    try:
        done = subprocess.run([smi, *args], capture_output=True, text=True, timeout=15, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, str(exc)
    if done.returncode != 0:
        return None, (done.stdout + done.stderr).strip()[:200]
    return done.stdout, None


def _gpus(smi):
    """One dict per GPU; falls back to fewer fields on GPUs or drivers that refuse some of them."""
    for fields in (FIELDS, BASIC_FIELDS):
        out, error = _smi(smi, "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits")
        if out is not None:
            rows = [
                [cell.strip() for cell in line.split(",")]
                for line in out.strip().splitlines()
                if line.strip()
            ]
            return [dict(zip(fields, row, strict=False)) for row in rows], None
    return [], error


def _number(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def _xids():
    """Xid codes from the kernel log, or None when the log cannot be read (dmesg needs rights)."""
    for command in (["dmesg"], ["journalctl", "-k", "-q", "--no-pager", "-n", "5000"]):
        if shutil.which(command[0]) is None:
            continue
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=10, check=False)
        except (OSError, subprocess.SubprocessError):
            continue
        if done.returncode == 0:
            return [int(code) for code in XID_RE.findall(done.stdout)]
    return None


def _facts(gpus, processes, xids):
    facts = {"count": len(gpus), "processes": processes, "xid_readable": xids is not None}
    for position, gpu in enumerate(gpus):
        prefix = "" if position == 0 else f"{position}."
        facts[prefix + "compute_mode"] = gpu.get("compute_mode")
        facts[prefix + "ecc_uncorrected"] = _number(gpu.get("ecc.errors.uncorrected.volatile.total"))
        facts[prefix + "retired_pending"] = gpu.get("retired_pages.pending")
        facts[prefix + "temperature_c"] = _number(gpu.get("temperature.gpu"))
    if xids is not None:
        facts["xid_events"] = len(xids)
        facts["xid_last"] = xids[-1] if xids else None
    return facts


def _verdict(gpus, processes, xids):
    bad, warn = [], []
    for gpu in gpus:
        label = f"GPU {gpu.get('index')}"
        if (_number(gpu.get("ecc.errors.uncorrected.volatile.total")) or 0) > 0:
            bad.append(f"{label} has uncorrected ECC errors")
        if (gpu.get("retired_pages.pending") or "").lower() == "yes":
            warn.append(f"{label} has pages pending retirement (reset the GPU)")
        if "exclusive" in (gpu.get("compute_mode") or "").lower() and processes:
            warn.append(
                f"{label} is in {gpu['compute_mode']} mode and {processes} compute process(es) are running"
            )
    serious = sorted({code for code in (xids or []) if code in SERIOUS_XIDS})
    if serious:
        bad.append("kernel log has Xid " + ", ".join(str(code) for code in serious))
    return bad, warn


def run():
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return {"status": "skip", "message": "nvidia-smi is not installed or not on PATH", "facts": {}}
    gpus, error = _gpus(smi)
    if not gpus:
        return {
            "status": "error",
            "message": f"nvidia-smi did not list any GPU: {error}",
            "facts": {"count": 0},
        }
    apps, _ = _smi(smi, "--query-compute-apps=pid", "--format=csv,noheader")
    processes = len([line for line in (apps or "").splitlines() if line.strip()])
    xids = _xids()
    facts = _facts(gpus, processes, xids)
    bad, warn = _verdict(gpus, processes, xids)
    modes = ", ".join(f"GPU {g.get('index')}: {g.get('compute_mode')}" for g in gpus)
    log = "kernel log not readable" if xids is None else f"{len(xids)} Xid event(s) in the kernel log"
    if bad:
        return {"status": "fail", "message": "; ".join(bad + warn) + f" ({modes}; {log})", "facts": facts}
    if warn:
        return {"status": "warn", "message": "; ".join(warn) + f" ({modes}; {log})", "facts": facts}
    return {"status": "pass", "message": f"{modes}; no uncorrected ECC errors; {log}", "facts": facts}
