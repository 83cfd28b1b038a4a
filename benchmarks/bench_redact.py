"""How fast kbgen redacts a large log, against references measured in the same run.

    .venv/bin/python benchmarks/bench_redact.py           # 20 MB
    .venv/bin/python benchmarks/bench_redact.py --mb 5

The log is generated training chatter (URLs, paths, key=value settings, progress lines) with a
few secrets sprinkled in. References:

- lower: ``str.lower()`` over the same text (one pass in C, the floor for a case-blind scan);
- one-shape: a single token regex (Hugging Face tokens only) substituted over the whole text,
  what the cheapest useful redaction costs.
"""

from __future__ import annotations

import argparse
import random
import re
import time
from collections.abc import Callable

from kbgen.redact import redact_text

LINES = [
    "step {n} loss=0.{n:04d} lr=3e-4 grad_norm=1.{n:03d} tokens/s=12{n:03d}",
    "INFO downloading https://huggingface.co/org/model/resolve/main/shard-{n:05d}.safetensors",
    "WARNING /home/ann/venv/lib/python3.11/site-packages/torch/utils/data.py:{n}: UserWarning: x",
    "Epoch {n}: 100%|##########| 500/500 [01:{n:02d}<00:00, 4.1it/s, loss=0.31, max_tokens=4096]",
    '  File "/work/train.py", line {n}, in forward',
    "config: batch_size=32 num_workers=8 pin_memory=True password_file=/etc/db/{n}.txt",
]
SECRETS = ["HF_TOKEN=hf_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9", "Authorization: Bearer abc.def.ghi-{n}"]


def make_log(megabytes: float) -> str:
    rng = random.Random(7)
    out: list[str] = []
    size, n = 0, 0
    while size < megabytes * 1_000_000:
        line = rng.choice(SECRETS if rng.random() < 0.001 else LINES).format(n=n)
        out.append(line)
        size += len(line) + 1
        n += 1
    return "\n".join(out)


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, default=20)
    args = parser.parse_args()
    text = make_log(args.mb)
    one_shape = re.compile(r"\bhf_[A-Za-z0-9]{20,}\b")
    lower = timed(text.lower)
    shape = timed(lambda: one_shape.sub("<redacted>", text))
    full = timed(lambda: redact_text(text))
    mb = len(text) / 1e6
    print(f"log: {mb:.1f} MB")
    print(f"lower:      {lower:7.3f} s  {mb / lower:8.1f} MB/s")
    print(f"one-shape:  {shape:7.3f} s  {mb / shape:8.1f} MB/s")
    print(f"redact:     {full:7.3f} s  {mb / full:8.1f} MB/s  ({full / shape:.1f}x one-shape)")


if __name__ == "__main__":
    main()
