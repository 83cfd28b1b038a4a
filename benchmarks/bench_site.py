"""Site speed, printed as figures and ratios against references measured in the same run.

1. Generation overhead: ``mkdocs build`` of a KB with 1,000 bugs through the kbgen plugin
   <= 1.10 x  ``mkdocs build`` of the same pages written out as plain Markdown files (the output
   of ``kbgen build-pages``) with the plugin switched off.
2. Edit one bug under ``kbgen serve`` (mkdocs serve, dirty reload): seconds from saving the file
   to the served page showing the change; goal <= 0.5 s at 1,000 bugs and <= 1 s at 10,000.
   ``--full-reload`` (every page rebuilt) is timed once beside it.
3. In-process figures: loading and checking the KB, rendering every page cold and from the cache,
   and kbgen's part of a serve rebuild after one bug is saved (files, checks and pages kept from
   the build before) beside a full rebuild.

Usage: python benchmarks/bench_site.py [--bugs 1000] [--repeat 2] [--edits 3] [--no-serve] [--no-build]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable
KINDS = 10
ENV = {**os.environ, "KBGEN_NOW": "2025-11-21T10:00:00+00:00", "NO_MKDOCS_2_WARNING": "1"}


def bug_text(n: int) -> str:
    i = n % KINDS
    day = dt.date(2025, 1, 1) + dt.timedelta(days=n // 9)
    steps = "\n".join(
        f"  - id: step-{k}\n    title: Diagnostic step {k}\n    probe: gpu\n"
        f"    state: {'passed' if k < 2 else 'pending'}\n    evidence: capability 8.6 is in the arch list"
        for k in range(4)
    )
    status = ["open", "investigating", "fixed", "confirmed"][n % 4]
    # a closed bug says why, as kbgen status --cause --fix records it
    closing = (
        f"confirmed_causes: [cause-{i}]\nfixes_tried:\n  - fix: fix-{i}\n    outcome: worked"
        if status == "fixed"
        else f"fixes_tried:\n  - fix: fix-{i}\n    outcome: failed\n    note: it came back one step later"
    )
    return f"""---
id: BUG-{day:%Y%m%d}-{n % 9 + 1:03d}
title: Illegal memory access in the loss, run {n}
created: {day}T09:00:00+00:00
updated: {day}T10:00:00+00:00
status: {status}
severity: {["low", "medium", "high", "critical"][n % 4]}
error: error-{i}
suspected_causes: [cause-{i}]
{closing}
message: |
  Traceback (most recent call last):
    File "ocr/models/loss/bce_loss.py", line 31, in forward
      positive_count = int(positive.sum().item())
  torch.AcceleratorError: CUDA error: an illegal memory access was encountered (run {n})
environments:
  - host: trainbox-{n % 5}
    python: 3.10.12
    collected_at: {day}T09:30:00+00:00
    facts:
      system.os: Ubuntu 22.04.5 LTS
      torch-build.version: 2.8.0+cu128
      gpu.name: NVIDIA GeForce RTX 3060
      gpu.capability: '8.6'
      gpu.driver: '581.57'
    findings:
      - probe: gpu
        status: {"pass" if n % 3 else "fail"}
        message: RTX 3060, sm_86
progress:
{steps}
tags: [loss, bench-{i}]
---
## What happened

Training stopped in the loss during epoch {n % 7}; the labels came from the new augmentation.

## Notes

Moving the sum to the CPU did not help.
"""


def make_project(root: Path, bugs: int) -> None:
    kb = root / "kb"
    for folder in ("errors", "causes", "fixes", "bugs", "probes"):
        (kb / folder).mkdir(parents=True)
    for i in range(KINDS):
        (kb / "fixes" / f"fix-{i}.md").write_text(
            f"---\nid: fix-{i}\ntitle: Fix number {i}\nsummary: Does the thing.\nsteps:\n  - title: Run it\n"
            f"    command: pip install torch==2.8.0\nrisk: low\nverify_probe: gpu\n"
            "last_verified: 2025-10-01\n---\n"
        )
        (kb / "causes" / f"cause-{i}.md").write_text(
            f"---\nid: cause-{i}\ntitle: Cause number {i}\nsummary: Something broke.\nfixes: [fix-{i}]\n---\n"
        )
        (kb / "errors" / f"error-{i}.md").write_text(
            f"---\nid: error-{i}\ntitle: Error number {i}\nsummary: It failed.\nsignatures:\n"
            f"  - regex: 'CUDA error: failure number {i}\\b'\ncauses:\n  - cause: cause-{i}\n"
            f"diagnostics:\n  - id: d{i}\n    title: check the GPU\n    probe: gpu\n---\n"
        )
    for n in range(bugs):
        text = bug_text(n)
        bug_id = text.split("\n", 2)[1].removeprefix("id: ")
        (kb / "bugs" / f"{bug_id}.md").write_text(text)
    shutil.copy(REPO / "mkdocs.yml", root / "mkdocs.yml")
    shutil.copytree(REPO / "docs", root / "docs")
    config = (root / "mkdocs.yml").read_text()
    plain = config.replace("  - kbgen:\n      stale_days: 180\n", "").replace(
        "docs_dir: docs", "docs_dir: pages"
    )

    (root / "plain.yml").write_text(plain)


def run(cmd: list[str], cwd: Path) -> tuple[float, float]:
    """Wall-clock and CPU seconds (user + system) of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=ENV, capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return took, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def bench_builds(root: Path, repeat: int) -> None:
    run([PY, "-m", "kbgen", "--kb", str(root), "build-pages", "pages"], root)
    plugin, plain = [], []
    for _ in range(repeat):  # interleaved, so drift in machine load hits both
        plugin.append(run([PY, "-m", "mkdocs", "build", "-q", "--site-dir", "site-plugin"], root))
        plain.append(
            run([PY, "-m", "mkdocs", "build", "-q", "-f", "plain.yml", "--site-dir", "site-plain"], root)
        )
    for label, runs in (("kbgen plugin:       ", plugin), ("plain Markdown files:", plain)):
        wall = statistics.median(r[0] for r in runs)
        listed = ", ".join(f"{r[0]:.2f}" for r in runs)
        least = min(r[1] for r in runs)
        print(f"mkdocs build, {label} {wall:6.2f} s  (runs: {listed}; CPU: {least:.2f} s at least)")
    a, b = statistics.median(r[0] for r in plugin), statistics.median(r[0] for r in plain)
    print(f"generation overhead ratio: {a / b:.3f}  (goal <= 1.10)")
    # On a shared machine wall time drifts with the load; the least CPU time of each drifts less.
    cpu = min(r[1] for r in plugin) / min(r[1] for r in plain)
    print(f"the same ratio in CPU time (least of the runs): {cpu:.3f}")


def bench_in_process(root: Path, edits: int) -> None:
    from kbgen import templating
    from kbgen.site import pages, rawhtml, render
    from kbgen.store import Project, load_kb

    project = Project(root)
    today = dt.date(2025, 11, 21)
    start = time.perf_counter()
    load_kb(project)
    loaded = time.perf_counter() - start
    start = time.perf_counter()
    site, _ = pages.load_site(project, today=today)
    checked = time.perf_counter() - start
    # with a nonce, as the site plugin renders: big tables are lifted HTML, their rows memoised
    env = render.make_environment(templating.template_dirs(root), html_nonce=rawhtml.new_nonce())
    cache = pages.PageCache()
    start = time.perf_counter()
    made = pages.generate(site, env, cache)
    cold = time.perf_counter() - start
    start = time.perf_counter()
    pages.generate(site, env, cache)
    warm = time.perf_counter() - start
    print(
        f"load_kb: {loaded:.2f} s; load and validate: {checked:.2f} s; render {len(made)} pages: "
        f"{cold:.2f} s cold, {warm:.3f} s from the cache"
    )
    bench_rebuild(project, env, today, edits, full=checked + cold)


def bench_rebuild(project: Any, env: Any, today: dt.date, edits: int, full: float) -> None:
    """What `kbgen serve` does in kbgen itself after one bug is saved (mkdocs' own work aside):
    load with the files, checks and pages kept from the build before, render what changed."""
    from kbgen.site import pages

    entries, cache = pages.EntryCache(), pages.PageCache()

    def rebuild() -> float:
        start = time.perf_counter()
        site, _ = pages.load_site(project, today=today, cache=entries)
        pages.generate(site, env, cache)
        return time.perf_counter() - start

    first = rebuild()
    bugs = sorted((project.root / "kb/bugs").glob("*.md"))
    times = []
    for k in range(max(edits, 1)):
        bug = bugs[(k + 1) * len(bugs) // (edits + 2)]
        text = bug.read_text()
        title = next(line for line in text.splitlines() if line.startswith("title: "))
        bug.write_text(text.replace(title, f"{title}, edited {k}"))
        times.append(rebuild())
    print(
        f"serve rebuild in kbgen after editing one bug: {statistics.median(times):.2f} s median "
        f"(runs: {', '.join(f'{x:.2f}' for x in times)}; goal <= 0.5 s at 1,000 bugs, <= 1 s at 10,000); "
        f"first build {first:.2f} s, full rebuild (load, check, render all) {full:.2f} s"
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def fetch(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return str(response.read().decode("utf-8", "replace"))
    except OSError:
        return ""


def wait_for(url: str, text: str, limit: float) -> float:
    start = time.perf_counter()
    while time.perf_counter() - start < limit:
        if text in fetch(url):
            return time.perf_counter() - start
        time.sleep(0.05)
    raise SystemExit(f"{url} did not show {text!r} within {limit:.0f} s")


def bench_serve(root: Path, edits: int, full: bool) -> list[float]:
    port = free_port()
    cmd = [PY, "-m", "kbgen", "--kb", str(root), "serve", "--dev-addr", f"127.0.0.1:{port}"]
    server = subprocess.Popen(
        [*cmd, *(["--full-reload"] if full else [])],
        cwd=root,
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        bug = sorted((root / "kb/bugs").glob("*.md"))[len(list((root / "kb/bugs").glob("*.md"))) // 2]
        url = f"http://127.0.0.1:{port}/bugs/{bug.stem}/"
        first = wait_for(url, bug.stem, 600)
        print(f"{'full' if full else 'dirty'} reload: first build served after {first:.1f} s")
        times = []
        for k in range(edits):
            time.sleep(1.0)  # let the watcher settle between edits
            marker = f"edited {k} {time.time():.0f}"
            text = bug.read_text()
            title = next(line for line in text.splitlines() if line.startswith("title: "))
            bug.write_text(text.replace(title, f"title: Illegal memory access, {marker}"))
            times.append(wait_for(url, marker, 300))
        return times
    finally:
        server.send_signal(signal.SIGTERM)  # kbgen serve then shuts down as on Ctrl+C
        server.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bugs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--edits", type=int, default=3)
    parser.add_argument("--no-serve", action="store_true")
    parser.add_argument("--no-build", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kbgen-bench-site-") as tmp:
        root = Path(tmp)
        make_project(root, args.bugs)
        print(f"KB: {args.bugs} bugs, {KINDS} error types, {KINDS} causes, {KINDS} fixes")
        bench_in_process(root, args.edits)
        if not args.no_build:
            bench_builds(root, args.repeat)
        if not args.no_serve:
            dirty = bench_serve(root, args.edits, full=False)
            goal = 0.5 if args.bugs <= 1000 else 1.0
            median = statistics.median(dirty)
            print(
                f"edit one bug, dirty reload: page served after {median:.2f} s median "
                f"(runs: {', '.join(f'{x:.2f}' for x in dirty)}; goal <= {goal} s at {args.bugs} bugs)"
            )
            full = bench_serve(root, 1, full=True)
            print(
                f"edit one bug, full reload:  page served after {full[0]:.2f} s "
                f"(dirty reload / full reload = {median / full[0]:.2f})"
            )


if __name__ == "__main__":
    main()
