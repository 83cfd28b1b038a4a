"""A few real CUDA operations, in order, stopping at the first that fails."""

PROBE = {
    "id": "cuda-smoke",
    "title": "CUDA smoke test",
    "description": "Allocates on the GPU, adds, synchronizes, runs a matmul and a conv2d forward and "
    "backward (cuDNN), then reads torch.cuda.mem_get_info; the first step that raises is the verdict. "
    "Skipped when CUDA is not available.",
    "needs": ["cuda"],
    "timeout": 60,
    "default": True,
}


def _steps(torch):
    device = torch.device("cuda")
    state = {}

    def allocate():
        state["x"] = torch.ones(1024, device=device)

    def add():
        state["y"] = state["x"] + state["x"]

    def synchronize():
        torch.cuda.synchronize()
        if float(state["y"].sum().item()) != 2048.0:
            raise RuntimeError("1 + 1 summed over 1024 elements did not give 2048 on the GPU")

    def matmul():
        a = torch.randn(256, 256, device=device)
        torch.cuda.synchronize()
        if not torch.allclose((a @ torch.eye(256, device=device)).cpu(), a.cpu()):
            raise RuntimeError("a @ I != a on the GPU")

    def conv2d():
        conv = torch.nn.Conv2d(3, 8, 3, padding=1).to(device)
        out = conv(torch.randn(2, 3, 32, 32, device=device, requires_grad=True))
        out.sum().backward()
        torch.cuda.synchronize()

    def memory():
        _free, total = torch.cuda.mem_get_info()
        state["total_mb"] = total // (1024 * 1024)

    return state, [
        ("allocate", allocate),
        ("add", add),
        ("synchronize", synchronize),
        ("matmul", matmul),
        ("conv2d forward+backward", conv2d),
        ("mem_get_info", memory),
    ]


def run():
    import torch

    if not torch.cuda.is_available():
        build = f"CUDA {torch.version.cuda} build" if torch.version.cuda else "CPU-only build"
        return {
            "status": "skip",
            "message": f"CUDA is not available to torch {torch.__version__} ({build})",
            "facts": {},
        }
    state, steps = _steps(torch)
    facts = {"device": torch.cuda.get_device_name(0), "cudnn_enabled": bool(torch.backends.cudnn.enabled)}
    for done, (name, step) in enumerate(steps):
        try:
            step()
        except Exception as exc:
            facts["failed_step"] = name
            facts["steps_passed"] = done
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            return {
                "status": "fail",
                "message": f"{name} failed: {type(exc).__name__}: {first}",
                "facts": facts,
            }
    facts["steps_passed"] = len(steps)
    facts["memory_total_mb"] = state.get("total_mb")
    return {"status": "pass", "message": f"{len(steps)} steps passed on {facts['device']}", "facts": facts}
