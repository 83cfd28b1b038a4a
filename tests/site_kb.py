"""A small but complete KB for the site tests, written into a temporary project.

It has every kind of record, reverse links in every direction, a bug filled by probes, a stale
fix, and one bug whose text tries every way of escaping into HTML or Jinja.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import write_tree

REPO = Path(__file__).resolve().parent.parent
TODAY = "2025-11-21T10:00:00+00:00"

ERROR = """\
---
id: cuda-illegal-memory-access
title: 'CUDA error: an illegal memory access was encountered'
summary: A kernel touched memory it does not own; the CUDA context is unusable from then on.
signatures:
  - regex: 'CUDA error: an illegal memory access was encountered'
    weight: 8
    note: the exception PyTorch raises
  - regex: 'cudaErrorIllegalAddress'
    weight: 6
symptoms:
  - The failing line moves when `CUDA_LAUNCH_BLOCKING` changes.
  - Later CUDA calls fail with the same error.
causes:
  - cause: corrupted-memory
    likelihood: medium
  - cause: out-of-range-index
    likelihood: high
    note: release builds skip the bounds check
diagnostics:
  - id: fresh-process
    title: A fresh process can run CUDA work
    decided_by: 'cuda-smoke: status == "pass"'
    fails_if: 'cuda-smoke: status == "fail"'
    expect: a small matmul passes
  - id: index-ranges
    title: Label ranges checked on the CPU
    decided_by: manual
related: [cuda-device-side-assert]
tags: [cuda, memory]
sources:
  - https://docs.nvidia.com/compute-sanitizer/ComputeSanitizer
---
# Illegal memory access

Reported late and **sticky**: see BUG-20251109-002.

## Narrowing it down

Rerun with `CUDA_LAUNCH_BLOCKING=1`.
"""

ERROR_ASSERT = """\
---
id: cuda-device-side-assert
title: CUDA device-side assert triggered
summary: A kernel assertion failed, usually an index out of range.
signatures:
  - 'device-side assert triggered'
causes:
  - cause: out-of-range-index
    likelihood: high
related: [cuda-illegal-memory-access]
---
"""

CAUSE_INDEX = """\
---
id: out-of-range-index
title: Index or label out of range
summary: A gather, embedding or loss kernel got an index past the end of a tensor.
evidence:
  - On the CPU the same batch raises `IndexError`.
fixes: [clamp-labels, reinstall-wheel]
tags: [data]
---
"""

CAUSE_CORRUPT = """\
---
id: corrupted-memory
title: Memory corrupted by an earlier kernel
summary: The error surfaces at a later synchronising call, not where the bad kernel ran.
fixes: [reinstall-wheel]
---
"""

FIX_CLAMP = """\
---
id: clamp-labels
title: Check labels before the loss
summary: Assert every label is in range on the CPU before it reaches the GPU.
steps:
  - title: Print the label range of the failing batch
    command: python -c "import torch; t = torch.load('batch.pt'); print(t.min(), t.max())"
  - title: Add an assert in the dataset
    note: Keep it; it costs microseconds.
risk: low
verify_probe: cuda-smoke
last_verified: 2025-11-01
---
"""

FIX_WHEEL = """\
---
id: reinstall-wheel
title: Reinstall the matching torch wheel
summary: Replace the torch build with one compiled for this GPU and driver.
steps:
  - title: Remove the current build
    command: pip uninstall -y torch
  - title: Install the build for CUDA 12.8
    command: |
      pip install torch --index-url https://download.pytorch.org/whl/cu128
      python -c "import torch; print(torch.cuda.is_available())"
risk: medium
verify_probe: gpu
last_verified: 2024-01-10
---
Pin the version in the lock file afterwards.
"""

BUG_FILLED = """\
---
id: BUG-20251109-002
title: Illegal memory access in BCE loss
created: 2025-11-09T23:04:00+09:00
updated: 2025-11-12T08:30:00+09:00
status: investigating
severity: high
error: cuda-illegal-memory-access
suspected_causes: [out-of-range-index, corrupted-memory]
confirmed_causes: [out-of-range-index]
fixes_tried:
  - fix: clamp-labels
    outcome: partial
    note: the assert fires on batch 4127
    date: 2025-11-11
message: |
  Traceback (most recent call last):
    File "ocr/models/loss/bce_loss.py", line 31, in forward
      positive_count = int(positive.sum().item())
  torch.AcceleratorError: CUDA error: an illegal memory access was encountered
environments:
  - host: wsl-rtx3060
    python: 3.10.12 (/home/mina/ocr/.venv/bin/python)
    collected_at: 2025-11-10T09:15:00+09:00
    report: BUG-20251109-002/env-wsl-rtx3060-1a2b3c.json
    facts:
      system.os: Ubuntu 22.04.5 LTS
      system.wsl: WSL2
      system.kernel: 6.6.87.2-microsoft-standard-WSL2
      gpu.name: NVIDIA GeForce RTX 3060
      gpu.capability: '8.6'
      gpu.driver: '581.15'
      gpu.driver_cuda: '13.0'
      torch-build.version: 2.8.0+cu128
      torch-build.cuda: '12.8'
      cpu.model: AMD Ryzen 7 5800X
      cpu.verdict: pass
    findings:
      - probe: gpu
        status: pass
        message: RTX 3060, sm_86, driver 581.15
        when: 2025-11-10T09:15:00+09:00
      - probe: compat
        status: warn
        message: the driver supports CUDA 13.0; the wheel uses 12.8 (fine)
        when: 2025-11-10T09:15:00+09:00
      - probe: cuda-smoke
        status: fail
        message: matmul raised an illegal memory access
        when: 2025-11-10T09:15:00+09:00
  - host: mina-laptop
    python: 3.11.9 (/usr/bin/python3)
    collected_at: 2025-11-11T08:00:00+09:00
    facts:
      system.os: Ubuntu 24.04.1 LTS
      system.wsl: 'no'
      torch-build.version: 2.8.0+cpu
      cpu.model: Intel(R) Core(TM) i7-1260P
      cpu.verdict: pass
    findings:
      - probe: cuda-smoke
        status: skip
        message: no CUDA device
        when: 2025-11-11T08:00:00+09:00
progress:
  - id: fresh-process
    title: A fresh process can run CUDA work
    decided_by: 'cuda-smoke: status == "pass"'
    fails_if: 'cuda-smoke: status == "fail"'
    state: failed
    evidence: 'on wsl-rtx3060: fail: matmul raised an illegal memory access'
    host: wsl-rtx3060
    when: 2025-11-10T09:15:00+09:00
  - id: index-ranges
    title: Label ranges checked on the CPU
    state: passed
    evidence: labels of batch 4127 go up to 7 with 5 classes
    by: mina
    when: 2025-11-11T10:00:00+09:00
related: [BUG-20251112-014]
tags: [loss, wsl2]
assignee: mina
history:
  - at: 2025-11-09T23:04:00+09:00
    kind: created
    by: mina
  - at: 2025-11-10T09:15:00+09:00
    kind: status
    by: mina
    from: open
    to: investigating
---
## What happened

Training on the OCR model died in the loss after about 4,000 steps.

```python
positive_count = int(positive.sum().item())  # <-- here
```

<!-- guidance a person never filled in -->
## Notes

Moving the sum to the CPU did not help.
"""

BUG_HOSTILE = """\
---
id: BUG-20251112-014
title: <script>alert(1)</script> {{ 7 * 7 }} | pipes *and* `ticks`
created: 2025-11-12T10:00:00+09:00
updated: 2025-11-12T10:00:00+09:00
status: open
severity: critical
error: cuda-illegal-memory-access
message: |
  {% raw %} {{ config }} {% endraw %} <img src=x onerror=alert(2)>
  ```` four backticks inside
related: [BUG-20251109-002]
tags: [<b>bold</b>, wsl2]
---
Body with <b>raw HTML</b>, a {{ jinja }} and {% if x %} tags, and a
[link](javascript:alert(3)).
"""

BUG_FIXED = """\
---
id: BUG-20251020-001
title: Device-side assert in the embedding
created: 2025-10-20T09:00:00+00:00
updated: 2025-10-22T09:00:00+00:00
status: fixed
severity: medium
error: cuda-device-side-assert
confirmed_causes: [out-of-range-index]
fixes_tried:
  - fix: clamp-labels
    outcome: worked
---
"""

PROBE = """\
PROBE = {
    "id": "label-range",
    "title": "Label range of a saved batch",
    "description": "Loads batch.pt and checks labels.",
}


def run():
    return {"status": "pass", "message": "ok", "facts": {}}
"""


REPORT = '{"schema_version": 1, "host": "wsl-rtx3060"}\n'


def site_kb_files() -> dict[str, str]:
    """The fixture KB as ``{relative path: text}``."""
    return {
        "kb/errors/cuda-illegal-memory-access.md": ERROR,
        "kb/errors/cuda-device-side-assert.md": ERROR_ASSERT,
        "kb/causes/out-of-range-index.md": CAUSE_INDEX,
        "kb/causes/corrupted-memory.md": CAUSE_CORRUPT,
        "kb/fixes/clamp-labels.md": FIX_CLAMP,
        "kb/fixes/reinstall-wheel.md": FIX_WHEEL,
        "kb/bugs/BUG-20251109-002.md": BUG_FILLED,
        "kb/bugs/BUG-20251112-014.md": BUG_HOSTILE,
        "kb/bugs/BUG-20251020-001.md": BUG_FIXED,
        "kb/bugs/BUG-20251109-002/env-wsl-rtx3060-1a2b3c.json": REPORT,
        "kb/probes/label-range.py": PROBE,
    }


def make_site_project(root: Path, files: dict[str, str] | None = None, *, site_config: bool = True) -> Path:
    """A project in ``root``: the fixture KB (or ``files``), plus the repository's mkdocs.yml and docs/.

    Templates are not copied: kbgen falls back to the ones it ships with.
    """
    write_tree(root, site_kb_files() if files is None else files)
    if site_config:
        shutil.copy(REPO / "mkdocs.yml", root / "mkdocs.yml")
        shutil.copytree(REPO / "docs", root / "docs", dirs_exist_ok=True)
    return root


def mkdocs_build(project: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` in ``project`` with the clock pinned, as CI runs it."""
    env = {**os.environ, "KBGEN_NOW": TODAY, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", *(() if "--no-strict" in extra else ("--strict",)), *extra],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def build_plain_site(project: Path, work: Path) -> Path:
    """``kbgen build-pages`` into ``work/pages``, then ``mkdocs build`` of those pages with the
    project's mkdocs.yml less the kbgen plugin, as an engine without it builds them; returns the
    built site's folder (``work/site``)."""
    from conftest import invoke

    pages = work / "pages"
    result = invoke("--kb", str(project), "build-pages", str(pages), KBGEN_NOW=TODAY)
    assert result.exit_code == 0, result.output
    config = (project / "mkdocs.yml").read_text(encoding="utf-8")
    plain = config.replace("  - kbgen:\n      stale_days: 180\n", "").replace(
        "docs_dir: docs", f"docs_dir: {pages}"
    )
    assert plain != config and "kbgen" not in plain.split("plugins:")[1].split("nav:")[0]
    (work / "plain.yml").write_text(plain, encoding="utf-8")
    # not strict: the hostile records' links point nowhere, which mkdocs rightly warns about
    result = mkdocs_build(
        project, "-f", str(work / "plain.yml"), "--site-dir", str(work / "site"), "--no-strict"
    )
    assert result.returncode == 0, result.stderr
    return work / "site"
