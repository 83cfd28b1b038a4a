"""Do the GPU indices a job asks for exist in this process?"""

PROBE = {
    "id": "visible-devices",
    "title": "Visible GPU indices",
    "description": "Compares CUDA_VISIBLE_DEVICES, LOCAL_RANK and LOCAL_WORLD_SIZE with the number of "
    "devices torch can see, the usual source of 'invalid device ordinal'. Skipped when CUDA is not "
    "available and no variable hides the GPUs.",
    "needs": ["torch"],
    "timeout": 30,
    "default": False,
}

import os


def _int(name):
    value = os.environ.get(name)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _visible_entries(raw):
    return [item.strip() for item in raw.split(",") if item.strip()] if raw is not None else None


def _problems(entries, count, local_rank, local_world):
    problems = []
    if entries is not None and len(set(entries)) != len(entries):
        problems.append("CUDA_VISIBLE_DEVICES lists a device twice")
    if local_rank is not None and local_rank >= count:
        problems.append(f"LOCAL_RANK={local_rank} but only {count} device(s) are visible")
    if local_world is not None and local_world > count:
        problems.append(f"LOCAL_WORLD_SIZE={local_world} processes share {count} visible device(s)")
    return problems


def run():
    import torch

    raw = os.environ.get("CUDA_VISIBLE_DEVICES")
    entries = _visible_entries(raw)
    local_rank, local_world = _int("LOCAL_RANK"), _int("LOCAL_WORLD_SIZE")
    facts = {"visible_devices": raw, "local_rank": local_rank, "local_world_size": local_world}
    if entries is not None and (not entries or entries[0] == "-1"):
        facts["torch_count"] = 0
        return {
            "status": "fail",
            "message": f"CUDA_VISIBLE_DEVICES={raw!r} hides every GPU from this process",
            "facts": facts,
        }
    if not torch.cuda.is_available():
        return {
            "status": "skip",
            "message": "CUDA is not available to torch; no indices to check",
            "facts": facts,
        }
    count = torch.cuda.device_count()
    facts["torch_count"] = count
    problems = _problems(entries, count, local_rank, local_world)
    seen = f"{count} visible device(s)" + (f" from CUDA_VISIBLE_DEVICES={raw}" if raw is not None else "")
    if problems:
        return {"status": "fail", "message": "; ".join(problems) + f" ({seen})", "facts": facts}
    return {"status": "pass", "message": f"{seen}; valid indices are 0..{count - 1}", "facts": facts}
