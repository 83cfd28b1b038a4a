"""Versions of the packages a CUDA/PyTorch failure depends on, read from installed metadata."""

PROBE = {
    "id": "packages",
    "title": "Installed packages",
    "description": "Versions of torch, torchvision, torchaudio, numpy, lightning, triton, wandb and every "
    "nvidia-* / cuda-* wheel, read with importlib.metadata (no pip, no imports); flags a package "
    "installed twice in the same environment.",
    "needs": [],
    "timeout": 20,
    "default": True,
}

import re
import sys

WATCHED = (
    "torch",
    "torchvision",
    "torchaudio",
    "numpy",
    "lightning",
    "pytorch-lightning",
    "triton",
    "pytorch-triton",
    "xformers",
    "flash-attn",
    "transformers",
    "accelerate",
    "deepspeed",
    "wandb",
    "onnxruntime",
    "onnxruntime-gpu",
    "opencv-python",
    "pillow",
    "jax",
    "jaxlib",
)


def _normal(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def run():
    from importlib import metadata

    found = {}
    places = {}
    for dist in metadata.distributions():
        name = _normal(dist.metadata["Name"] or "")
        if not name:
            continue
        if name in WATCHED or name.startswith(("nvidia-", "cuda-")):
            found.setdefault(name, dist.version)
            places.setdefault(name, set()).add(dist.version)
    facts = {name: found[name] for name in sorted(found)}
    facts["count_nvidia"] = sum(1 for n in found if n.startswith("nvidia-"))
    twice = sorted(n for n, v in places.items() if len(v) > 1)
    shown = ", ".join(f"{n} {found[n]}" for n in ("torch", "numpy", "triton", "lightning") if n in found)
    if not found.get("torch"):
        shown = "no torch installed" + (f"; {shown}" if shown else "")
    if twice:
        versions = "; ".join(f"{n}: {', '.join(sorted(places[n]))}" for n in twice)
        return {
            "status": "warn",
            "message": f"installed more than once on sys.path ({versions}): the first "
            f"one found wins, which may not be the one you expect ({sys.prefix})",
            "facts": facts,
        }
    return {"status": "pass", "message": shown or "none of the watched packages is installed", "facts": facts}
