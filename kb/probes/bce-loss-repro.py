"""The BCE loss step from BUG-20251109-002, cut down: count positives on the GPU and read them back."""

PROBE = {
    "id": "bce-loss-repro",
    "title": "BCE loss positive count on CUDA",
    "description": "Builds a probability map, a 0/1 ground truth and a mask on the GPU, counts positive "
    "and negative pixels with (gt * mask) > 0 and .sum().item() as the OCR loss does, runs a "
    "balanced BCE forward and backward, and compares everything with the same computation on the "
    "CPU. Fails with the CUDA error when the GPU path breaks; skipped without CUDA.",
    "needs": ["cuda"],
    "timeout": 60,
    "default": False,
}


def _loss(torch, pred_logits, gt, mask, negative_ratio=3.0):
    positive = (gt * mask) > 0
    negative = ((1 - gt) * mask) > 0
    positive_count = int(positive.sum().item())  # the line that raised in the report
    negative_count = min(int(negative.sum().item()), int(positive_count * negative_ratio))
    loss = torch.nn.functional.binary_cross_entropy_with_logits(pred_logits, gt, reduction="none")
    positive_loss = (loss * positive.float()).sum()
    negative_loss, _ = torch.topk((loss * negative.float()).view(-1), negative_count)
    total = (positive_loss + negative_loss.sum()) / (positive_count + negative_count + 1e-6)
    return total, positive_count, negative_count


def run():
    import torch

    if not torch.cuda.is_available():
        return {"status": "skip", "message": "CUDA is not available to torch", "facts": {}}
    generator = torch.Generator().manual_seed(2)
    shape = (4, 1, 160, 160)
    logits = torch.randn(shape, generator=generator)
    gt = (torch.rand(shape, generator=generator) > 0.9).float()
    mask = torch.ones(shape)
    cpu_loss, cpu_pos, cpu_neg = _loss(torch, logits.clone().requires_grad_(), gt, mask)
    try:
        device_logits = logits.cuda().requires_grad_()
        loss, pos, neg = _loss(torch, device_logits, gt.cuda(), mask.cuda())
        loss.backward()
        torch.cuda.synchronize()
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [""])[0]
        return {
            "status": "fail",
            "message": f"{type(exc).__name__}: {first}",
            "facts": {"cpu_positive": cpu_pos, "cpu_negative": cpu_neg},
        }
    facts = {"positive": pos, "negative": neg, "cpu_positive": cpu_pos, "loss_matches_cpu": False}
    if (pos, neg) != (cpu_pos, cpu_neg):
        return {
            "status": "fail",
            "message": f"GPU counted {pos}/{neg} positive/negative pixels, the CPU {cpu_pos}/{cpu_neg}",
            "facts": facts,
        }
    facts["loss_matches_cpu"] = abs(float(loss) - float(cpu_loss)) < 1e-4
    if not facts["loss_matches_cpu"]:
        return {
            "status": "fail",
            "message": f"GPU loss {float(loss):.6f} != CPU loss {float(cpu_loss):.6f}",
            "facts": facts,
        }
    return {
        "status": "pass",
        "message": f"{pos} positive, {neg} negative pixels counted on the GPU; loss "
        "and backward match the CPU",
        "facts": facts,
    }
