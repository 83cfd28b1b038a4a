"""The same KB built by both engines, side by side: Material for MkDocs and Zensical.

For each size, ``kbgen build-pages`` writes the pages once; then ``mkdocs build`` (with the kbgen
plugin, as ``kbgen serve`` and CI build today), ``mkdocs build`` of the written pages without the
plugin, and ``zensical build`` of the same written pages (with an empty cache, as a first build
in CI) are each timed: wall seconds, CPU seconds and the build's peak memory. A table at the end
puts the engines side by side, with CPU milliseconds per bug: flat from one size to the next
when a build grows in proportion to the KB.
Prints figures only; an engine that is not installed, or that fails, is reported and skipped.
Zensical runs from $ZENSICAL, or from PATH (`pip install zensical==0.0.73` into a venv of its own).

Usage: python benchmarks/bench_engines.py [--bugs 1000 10000] [--no-plugin]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from bench_site import ENV, PY, make_project, run

#: (bugs, engine) -> (wall s, CPU s, peak MB), or None when it failed
Figures = dict[tuple[int, str], "tuple[float, float, float] | None"]
PLUGIN, PLAIN, ZENSICAL = "mkdocs, kbgen plugin", "mkdocs, written pages", "zensical, written pages"


def zensical() -> str | None:
    return os.environ.get("ZENSICAL") or shutil.which("zensical")


def measure(cmd: list[str], root: Path) -> tuple[float, float, float]:
    """Wall and CPU seconds and peak resident memory (MB) of the process ``cmd`` starts."""
    with tempfile.TemporaryFile("w+") as log:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=root, env=ENV, stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own figures, not all children's
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            log.seek(0)
            raise SystemExit(f"{' '.join(cmd)} failed:\n{log.read()[-3000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def timed(figures: Figures, bugs: int, label: str, cmd: list[str], root: Path) -> None:
    shutil.rmtree(root / ".cache", ignore_errors=True)  # Zensical's cache: every build starts cold
    try:
        wall, cpu, peak = measure(cmd, root)
    except SystemExit as failed:
        print(f"  {label:26} failed: {str(failed).splitlines()[-1][:200]}", flush=True)
        figures[(bugs, label)] = None
        return
    pages = sum(1 for _ in (root / "site-out").rglob("index.html"))
    print(
        f"  {label:26} {wall:8.1f} s wall {cpu:8.1f} s CPU {peak:8.0f} MB peak  ({pages} pages)", flush=True
    )
    figures[(bugs, label)] = (wall, cpu, peak)
    shutil.rmtree(root / "site-out", ignore_errors=True)


def bench(figures: Figures, bugs: int, plugin: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="kbgen-bench-engines-") as tmp:
        root = Path(tmp)
        make_project(root, bugs)
        # the plain config reads pages/; Zensical takes the same file, with site_dir set
        plain = (root / "plain.yml").read_text() + "\nsite_dir: site-out\n"
        plain += "extra_css: [assets/kbgen.css]\nextra_javascript: [assets/kbgen.js]\n"
        (root / "plain.yml").write_text(plain)
        print(f"KB of {bugs} bugs", flush=True)
        wall, cpu = run([PY, "-m", "kbgen", "--kb", str(root), "build-pages", "pages"], root)
        print(f"  {'kbgen build-pages':26} {wall:8.1f} s wall {cpu:8.1f} s CPU", flush=True)
        if plugin:
            cmd = [PY, "-m", "mkdocs", "build", "-q", "--site-dir", "site-out"]
            timed(figures, bugs, PLUGIN, cmd, root)
        timed(figures, bugs, PLAIN, [PY, "-m", "mkdocs", "build", "-q", "-f", "plain.yml"], root)
        engine = zensical()
        if engine is None:
            print("  zensical build: not installed (set $ZENSICAL or put zensical on PATH)")
        else:
            timed(figures, bugs, ZENSICAL, [engine, "build", "-f", "plain.yml"], root)


def table(figures: Figures, sizes: list[int], engines: list[str]) -> None:
    """The engines side by side: wall s / CPU s / peak MB, then CPU ms per bug."""
    print("\nSide by side (wall s / CPU s / peak MB; CPU ms per bug)")
    print(f"  {'bugs':>6}  " + "  ".join(f"{e:>36}" for e in engines))
    for bugs in sizes:
        cells = []
        for engine in engines:
            got = figures.get((bugs, engine))
            if got is None:
                cells.append(f"{'-':>36}")
                continue
            wall, cpu, peak = got
            cells.append(f"{f'{wall:.1f} / {cpu:.1f} / {peak:.0f}; {1000 * cpu / bugs:.1f}':>36}")
        print(f"  {bugs:>6}  " + "  ".join(cells))
    for bugs in sizes:
        plain, zens = figures.get((bugs, PLAIN)), figures.get((bugs, ZENSICAL))
        if plain and zens:
            print(
                f"  {bugs} bugs: Zensical / mkdocs on the same pages: {zens[0] / plain[0]:.2f} x wall, "
                f"{zens[1] / plain[1]:.2f} x CPU, {zens[2] / plain[2]:.1f} x peak memory"
            )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bugs", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--no-plugin", action="store_true", help="skip the build with the kbgen plugin")
    args = parser.parse_args()
    figures: Figures = {}
    for bugs in args.bugs:
        bench(figures, bugs, not args.no_plugin)
    engines = ([] if args.no_plugin else [PLUGIN]) + [PLAIN] + ([ZENSICAL] if zensical() else [])
    table(figures, args.bugs, engines)


if __name__ == "__main__":
    main()
