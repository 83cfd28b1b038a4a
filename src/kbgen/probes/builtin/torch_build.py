"""How the installed torch was built: version, CUDA/ROCm it was compiled with, cuDNN, GPU archs."""

PROBE = {
    "id": "torch-build",
    "title": "PyTorch build",
    "description": "torch version and location, debug build, the CUDA (or ROCm) version it was built with, "
    "cuDNN version, the GPU architectures compiled in (arch list), CPU-only or not, XNNPACK/MKL/oneDNN, "
    "whether CUDA is available to it, and CUDA_MODULE_LOADING.",
    "needs": ["torch"],
    "timeout": 30,
    "default": True,
}

import os


def _safe(call, default=None):
    try:
        return call()
    except Exception:
        return default


def run():
    import torch

    cuda = torch.version.cuda
    hip = getattr(torch.version, "hip", None)
    cudnn = _safe(torch.backends.cudnn.version) if (cuda or hip) else None
    arch_list = _safe(torch.cuda.get_arch_list, []) if (cuda or hip) else []
    facts = {
        "version": torch.__version__,
        "path": os.path.dirname(torch.__file__),
        "debug": bool(torch.version.debug),
        "git": getattr(torch.version, "git_version", None),
        "cuda": cuda,
        "hip": hip,
        "cudnn": cudnn,
        "arch_list": " ".join(arch_list),
        "cpu_only": not (cuda or hip),
        "cuda_available": _safe(torch.cuda.is_available, False),
        "xpu_available": _safe(lambda: torch.xpu.is_available(), False),
        "xnnpack": _safe(lambda: bool(torch._C._is_xnnpack_enabled())),
        "mkl": _safe(torch.backends.mkl.is_available),
        "mkldnn": _safe(torch.backends.mkldnn.is_available),
        "openmp": _safe(torch.backends.openmp.is_available),
        "threads": _safe(torch.get_num_threads),
        "cuda_module_loading": os.environ.get("CUDA_MODULE_LOADING"),
    }
    if cuda:
        built = f"CUDA {cuda}, cuDNN {cudnn}, archs {facts['arch_list'] or 'none'}"
    elif hip:
        built = f"ROCm/HIP {hip}"
    else:
        built = "CPU-only build (no CUDA)"
    message = f"torch {torch.__version__}: {built}"
    if facts["debug"]:
        return {"status": "warn", "message": message + "; a debug build (slow)", "facts": facts}
    return {"status": "pass", "message": message, "facts": facts}
