"""The memory limits the out-of-memory killer acts on: the cgroup limit (v2 memory.max, v1
memory.limit_in_bytes) with its usage and recorded kills, the host's MemTotal and MemAvailable, and,
where the kernel log is readable without root, its latest OOM-kill lines. Reads are bounded and the
kernel-log command has a timeout."""

PROBE = {
    "id": "host-memory",
    "title": "Host memory and OOM kills",
    "description": "cgroup memory limit, usage and oom_kill count (v2 and v1), MemTotal and MemAvailable "
    "from /proc/meminfo, and the latest 'Out of memory: Killed process' lines of the kernel log when it "
    "is readable without root.",
    "needs": [],
    "timeout": 20,
    "default": False,
}

import os
import re
import subprocess

MAX_READ = 64 * 1024
MAX_LOG = 4 * 1024 * 1024
MAX_KILLS = 5
#: a limit at or above this is "no limit" (cgroup v1 writes a huge page-aligned number)
UNLIMITED = 1 << 60
LOW_AVAILABLE = 0.1
_KILL = re.compile(
    r"(?i)(?:out of memory: kill(?:ed)? process \d+[^\n]{0,120}|oom-kill:constraint=[^\n]{0,200})"
)


def _read(path, limit=MAX_READ):
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


def _number(text):
    text = (text or "").strip()
    return int(text) if text.isdigit() else None


def meminfo(text):
    """MemTotal and MemAvailable in MB from /proc/meminfo's text."""
    found = {}
    for line in (text or "").splitlines():
        name, _, rest = line.partition(":")
        if name in ("MemTotal", "MemAvailable", "SwapTotal") and rest.split():
            found[name] = int(rest.split()[0]) // 1024
    return found


def _own_cgroup_v2():
    """The folder of this process's cgroup v2 under /sys/fs/cgroup, or the root."""
    for line in (_read("/proc/self/cgroup") or "").splitlines():
        if line.startswith("0::"):
            path = os.path.join("/sys/fs/cgroup", line[3:].strip().lstrip("/"))
            if os.path.isfile(os.path.join(path, "memory.max")):
                return path
    return "/sys/fs/cgroup"


def cgroup():
    """(version, limit MB or None, usage MB, oom kills) of this process's memory cgroup."""
    base = _own_cgroup_v2()
    limit_text = _read(os.path.join(base, "memory.max"))
    if limit_text is not None:
        usage = _number(_read(os.path.join(base, "memory.current")))
        events = _read(os.path.join(base, "memory.events")) or ""
        kills = next((int(v) for k, v in re.findall(r"(\w+) (\d+)", events) if k == "oom_kill"), None)
        limit = _number(limit_text)
        return "v2", _mb(limit), _mb(usage), kills
    v1 = "/sys/fs/cgroup/memory"
    limit = _number(_read(os.path.join(v1, "memory.limit_in_bytes")))
    if limit is None:
        return None, None, None, None
    usage = _number(_read(os.path.join(v1, "memory.usage_in_bytes")))
    control = _read(os.path.join(v1, "memory.oom_control")) or ""
    kills = next((int(v) for k, v in re.findall(r"(\w+) (\d+)", control) if k == "oom_kill"), None)
    return "v1", _mb(limit), _mb(usage), kills


def _mb(value):
    return None if value is None or value >= UNLIMITED else value // (1024 * 1024)


def kernel_kills():
    """(readable, last kill lines) from dmesg, bounded in time and size; never asks for root."""
    try:
        done = subprocess.run(
            ["dmesg"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return False, []
    if done.returncode != 0:
        return False, []
    text = done.stdout[-MAX_LOG:].decode("utf-8", "replace")
    return True, [m.group(0).strip()[:300] for m in _KILL.finditer(text)][-MAX_KILLS:]


def run():
    memory = meminfo(_read("/proc/meminfo"))
    version, limit, usage, kills = cgroup()
    readable, lines = kernel_kills()
    total, available = memory.get("MemTotal"), memory.get("MemAvailable")
    facts = {
        "mem_total_mb": total,
        "mem_available_mb": available,
        "swap_total_mb": memory.get("SwapTotal"),
        "cgroup": version,
        "cgroup_limit_mb": limit,
        "cgroup_usage_mb": usage,
        "cgroup_oom_kills": kills,
        "kernel_log_readable": readable,
        "oom_kill_lines": len(lines),
        "last_oom_kill": lines[-1] if lines else None,
    }
    effective = min(x for x in (total, limit) if x is not None) if (total or limit) else None
    facts["effective_limit_mb"] = effective
    found = []
    if kills:
        found.append(f"the memory cgroup recorded {kills} OOM kill(s)")
    if lines:
        found.append(f"the kernel log has {len(lines)} OOM kill line(s), the last: {lines[-1][:160]}")
    if found:
        return {"status": "fail", "message": "; ".join(found), "facts": facts}
    shown = f"limit {effective} MB" if effective else "no memory figures readable"
    if limit is not None and total and limit < total:
        shown += f" (the cgroup's, below the host's {total} MB)"
    if available is not None and effective and available < LOW_AVAILABLE * effective:
        return {"status": "warn", "message": f"{shown}; only {available} MB available", "facts": facts}
    log = "" if readable else "; kernel log not readable without root"
    return {
        "status": "pass",
        "message": f"{shown}, {available} MB available, no OOM kill recorded{log}",
        "facts": facts,
    }
