"""Fleet speed at 1,000 nodes, printed as figures and ratios against references from the same run.

1. ``kbgen fleet show`` (table and ``--json``) over 1,000 node reports: goal <= 1 s; the start of
   ``kbgen --version`` is printed beside it as the floor.
2. The site build grows by no more than the pages it adds: the extra time the kbgen plugin
   takes for the Fleet pages, against two references measured in the same run: the same pages
   written out as plain Markdown (``kbgen build-pages``) with the plugin off (goal: ratio <= 1.10;
   the plugin's nav also carries the error types, which every page renders), and the same number
   of bug pages added through the plugin (the cost of an ordinary page of the site).

Usage: python benchmarks/bench_fleet.py [--nodes 1000] [--bugs 50] [--repeat 3] [--no-build]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from bench_site import PY, make_project
from bench_site import run as timed

from fleet_fixtures import report


def write_nodes(root: Path, nodes: int) -> float:
    """``nodes`` reports, a few of them outliers, merged with ``kbgen fleet ingest``; returns seconds."""
    reports = root / "reports"
    reports.mkdir()
    for n in range(nodes):
        changes: dict[str, dict[str, object]] = {}
        if n % 37 == 0:
            changes["gpu"] = {"driver": "535.104.05", "driver_cuda": "12.2"}
        if n % 101 == 0:
            changes["torch_build"] = {"version": "2.5.1+cpu", "cuda": None, "cpu_only": True}
        if n % 250 == 0:
            changes.setdefault("gpu", {})["ecc_uncorrected"] = 4
        data = report(f"gpu{n:04d}", **changes)
        (reports / f"gpu{n:04d}.json").write_text(json.dumps(data))
    return run([PY, "-m", "kbgen", "fleet", "ingest", *sorted(map(str, reports.glob("*.json")))], root)


def run(cmd: list[str], cwd: Path) -> float:
    """Wall-clock seconds of ``cmd`` (bench_site's run gives wall-clock and CPU seconds)."""
    return timed(cmd, cwd)[0]


def median_of(cmd: list[str], root: Path, repeat: int) -> tuple[float, list[float]]:
    runs = [run(cmd, root) for _ in range(repeat)]
    return statistics.median(runs), runs


def bench_show(root: Path, repeat: int) -> None:
    floor, _ = median_of([PY, "-m", "kbgen", "--version"], root, repeat)
    table, runs = median_of([PY, "-m", "kbgen", "fleet", "show"], root, repeat)
    as_json, json_runs = median_of([PY, "-m", "kbgen", "fleet", "show", "--json"], root, repeat)
    print(f"kbgen --version (start-up floor): {floor:6.3f} s")
    print(f"kbgen fleet show:                 {table:6.3f} s  (runs: {', '.join(f'{x:.3f}' for x in runs)})")
    listed = ", ".join(f"{x:.3f}" for x in json_runs)
    print(f"kbgen fleet show --json:          {as_json:6.3f} s  (runs: {listed})")
    print(f"goal <= 1 s: {'met' if max(table, as_json) <= 1 else 'NOT met'}")


def build_pair(root: Path) -> tuple[float, float]:
    shutil.rmtree(root / "pages", ignore_errors=True)
    run([PY, "-m", "kbgen", "--kb", str(root), "build-pages", "pages"], root)
    plugin = run([PY, "-m", "mkdocs", "build", "-q", "--site-dir", "site-plugin"], root)
    plain = run([PY, "-m", "mkdocs", "build", "-q", "-f", "plain.yml", "--site-dir", "site-plain"], root)
    return plugin, plain


def bench_build(root: Path, repeat: int) -> float:
    fleet = root / "kb" / "fleet"
    parked = root / "fleet-parked"
    without, with_ = [], []
    for _ in range(repeat):  # interleaved, so drift in machine load hits both
        fleet.rename(parked)
        without.append(build_pair(root))
        parked.rename(fleet)
        with_.append(build_pair(root))
    plugin0, plain0 = (statistics.median(x) for x in zip(*without, strict=True))
    plugin1, plain1 = (statistics.median(x) for x in zip(*with_, strict=True))
    pages = sum(1 for _ in (root / "pages" / "fleet").glob("*.md"))
    print(f"mkdocs build without fleet: plugin {plugin0:6.2f} s, plain {plain0:6.2f} s")
    print(f"mkdocs build with {pages} fleet pages: plugin {plugin1:6.2f} s, plain {plain1:6.2f} s")
    grow_plugin, grow_plain = plugin1 - plugin0, plain1 - plain0
    print(f"growth: plugin +{grow_plugin:.2f} s, plain Markdown +{grow_plain:.2f} s for the same pages")
    print(f"growth ratio against plain Markdown: {grow_plugin / grow_plain:.3f}  (goal <= 1.10)")
    return grow_plugin / pages


def bench_bug_reference(bugs: int, added: int) -> float:
    """Seconds per bug page added through the plugin: the cost of an ordinary page of the site."""
    with tempfile.TemporaryDirectory(prefix="kbgen-bench-bugs-") as tmp:
        small, large = Path(tmp) / "small", Path(tmp) / "large"
        make_project(small, bugs)
        make_project(large, bugs + added)
        build = [PY, "-m", "mkdocs", "build", "-q", "--site-dir", "site"]
        a, b = run(build, small), run(build, large)
    print(f"mkdocs build with the plugin, {bugs} bugs: {a:6.2f} s; {bugs + added} bugs: {b:6.2f} s")
    return (b - a) / added


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--bugs", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-build", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kbgen-bench-fleet-") as tmp:
        root = Path(tmp)
        make_project(root, args.bugs)
        start = time.perf_counter()
        ingest = write_nodes(root, args.nodes)
        print(
            f"{args.nodes} node reports written and ingested in {time.perf_counter() - start:.2f} s "
            f"(ingest {ingest:.2f} s)"
        )
        bench_show(root, args.repeat)
        if not args.no_build:
            per_fleet_page = bench_build(root, max(1, args.repeat - 1))
            per_bug_page = bench_bug_reference(args.bugs, args.nodes)
            print(
                f"per page added: Fleet {per_fleet_page * 1000:.1f} ms, bug {per_bug_page * 1000:.1f} ms; "
                f"ratio {per_fleet_page / per_bug_page:.2f}  (<= 1: no dearer than a bug page)"
            )


if __name__ == "__main__":
    main()
