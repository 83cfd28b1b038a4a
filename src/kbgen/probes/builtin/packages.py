"""Versions of the packages a CUDA/PyTorch failure depends on, read from installed metadata."""

PROBE = {
    "id": "packages",
    "title": "Installed packages",
    "description": "Versions of torch, torchvision, torchaudio, numpy, lightning, triton, wandb, every "
    "nvidia-* / cuda-* wheel and whatever torch.utils.collect_env would list, read with "
    "importlib.metadata (no pip, no imports); flags a package installed twice in one environment.",
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

# what torch.utils.collect_env looks for in `pip list`, matched anywhere in the name
KEYWORDS = (
    "torch",
    "numpy",
    "cudatoolkit",
    "mkl",
    "magma",
    "triton",
    "optree",
    "nccl",
    "mypy",
    "flake8",
    "onnx",
)


def _normal(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def run():
    try:
        from importlib import metadata
    except ImportError:  # Python 3.7 and older
        return {"status": "skip", "message": "importlib.metadata needs Python 3.8 or newer", "facts": {}}

    found = {}
    places = {}
    for dist in metadata.distributions():
        # the name from the folder (cheap); the METADATA file is parsed only for the packages we keep
        name = _normal(getattr(dist, "_normalized_name", None) or dist.metadata["Name"] or "")
        if name in WATCHED or name.startswith(("nvidia-", "cuda-")) or any(k in name for k in KEYWORDS):
            version = dist.version
            found.setdefault(name, version)
            places.setdefault(name, set()).add(version)
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
