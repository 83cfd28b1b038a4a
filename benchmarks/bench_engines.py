"""The same KB built by both engines, side by side: Material for MkDocs and Zensical.

For each size, ``kbgen build-pages`` writes the pages once; then ``mkdocs build`` (with the kbgen
plugin, as ``kbgen serve`` and CI build today), ``mkdocs build`` of the written pages without the
plugin, and ``zensical build`` of the same written pages are each timed (wall and CPU seconds).
Prints figures only; an engine that is not installed, or that fails, is reported and skipped.
Zensical runs from $ZENSICAL, or from PATH (`pip install zensical==0.0.73` into a venv of its own).

Usage: python benchmarks/bench_engines.py [--bugs 1000 10000] [--no-plugin]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from pathlib import Path

from bench_site import PY, make_project, run


def zensical() -> str | None:
    return os.environ.get("ZENSICAL") or shutil.which("zensical")


def timed(label: str, cmd: list[str], root: Path) -> None:
    try:
        wall, cpu = run(cmd, root)
    except SystemExit as failed:
        print(f"  {label:34} failed: {str(failed).splitlines()[-1][:200]}")
        return
    pages = sum(1 for _ in (root / "site-out").rglob("index.html"))
    print(f"  {label:34} {wall:8.1f} s wall  {cpu:8.1f} s CPU  ({pages} pages)")
    shutil.rmtree(root / "site-out", ignore_errors=True)


def bench(bugs: int, plugin: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="kbgen-bench-engines-") as tmp:
        root = Path(tmp)
        make_project(root, bugs)
        # the plain config reads pages/; Zensical takes the same file, with site_dir set
        plain = (root / "plain.yml").read_text() + "\nsite_dir: site-out\n"
        plain += "extra_css: [assets/kbgen.css]\nextra_javascript: [assets/kbgen.js]\n"
        (root / "plain.yml").write_text(plain)
        print(f"KB of {bugs} bugs")
        wall, cpu = run([PY, "-m", "kbgen", "--kb", str(root), "build-pages", "pages"], root)
        print(f"  {'kbgen build-pages':34} {wall:8.1f} s wall  {cpu:8.1f} s CPU")
        if plugin:
            cmd = [PY, "-m", "mkdocs", "build", "-q", "--site-dir", "site-out"]
            timed("mkdocs build, kbgen plugin", cmd, root)
        timed(
            "mkdocs build, build-pages output", [PY, "-m", "mkdocs", "build", "-q", "-f", "plain.yml"], root
        )
        engine = zensical()
        if engine is None:
            print("  zensical build: not installed (set $ZENSICAL or put zensical on PATH)")
        else:
            timed("zensical build, build-pages output", [engine, "build", "-f", "plain.yml"], root)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bugs", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--no-plugin", action="store_true", help="skip the build with the kbgen plugin")
    args = parser.parse_args()
    for bugs in args.bugs:
        bench(bugs, not args.no_plugin)


if __name__ == "__main__":
    main()
