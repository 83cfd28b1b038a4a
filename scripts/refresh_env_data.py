#!/usr/bin/env python3
"""Refresh the base layer's environment data files from their sources, then validate them.

    python scripts/refresh_env_data.py gpus      # NVIDIA's CUDA GPUs list -> gpu-capabilities.json
    python scripts/refresh_env_data.py drivers   # toolkit release notes, Table 3 -> cuda-drivers.json
    python scripts/refresh_env_data.py torch     # build_cuda.sh of a torch release -> torch-builds.json
    python scripts/refresh_env_data.py check     # validate the files as they are

Each command reads its source page (or ``--from FILE``, a saved copy), merges what it finds into
the file (new rows added, changed values replaced, rows the page no longer lists kept), sets
``retrieved`` to today, prints what changed, and refuses to write a file that fails validation
(kbgen.envdata.data_problems). ``torch`` needs ``--torch 2.11`` (the release whose script is read).
Needs network access for the pages; review the diff before committing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import html.parser
import json
import re
import sys
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from kbgen import envdata

SOURCES = {
    "gpus": "https://developer.nvidia.com/cuda-gpus",
    "drivers": "https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html",
    "torch": "https://raw.githubusercontent.com/pytorch/pytorch/release/{torch}/.ci/manywheel/build_cuda.sh",
}


class _Cells(html.parser.HTMLParser):
    """Table rows of an HTML page, as lists of cell texts."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag == "tr":
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._row is not None and self._cell is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def rows(page: str) -> list[list[str]]:
    parser = _Cells()
    parser.feed(page)
    return parser.rows


def gpus(page: str) -> dict[str, str]:
    """``{model: capability}`` from the CUDA GPUs list (a cell of GPU names beside a capability)."""
    found: dict[str, str] = {}
    for row in rows(page):
        caps = [c for c in row if re.fullmatch(r"\d{1,2}\.\d", c)]
        names = [c for c in row if c not in caps]
        if len(caps) == 1:
            for cell in names:
                for name in re.split(r",\s*|\s{2,}", cell):
                    key = envdata.normalize_gpu(name)
                    if key and len(key) <= 40:
                        found[key] = caps[0]
    return found


def drivers(page: str) -> list[dict[str, str]]:
    """Table 3: ``[{cuda, linux, windows}]`` for each GA release, newest first."""
    out: dict[str, dict[str, str]] = {}
    for row in rows(page):
        if len(row) < 3 or "GA" not in row[0]:
            continue
        version = re.search(r"CUDA (\d+\.\d+)", row[0])
        linux, windows = (re.search(r"(\d{3}\.\d+(?:\.\d+)?)", c) for c in row[1:3])
        if version and linux and windows:
            out.setdefault(
                version.group(1),
                {"cuda": version.group(1), "linux": linux.group(1), "windows": windows.group(1)},
            )
    return sorted(out.values(), key=lambda r: envdata.major_minor(r["cuda"]) or (0, 0), reverse=True)


def torch_archs(script: str) -> dict[str, str]:
    """``{cuda: "sm_.. sm_.."}`` from the TORCH_CUDA_ARCH_LIST lines of build_cuda.sh."""
    out = {}
    for cuda, archs in re.findall(r"^\s*(\d+\.\d+)\)\s*TORCH_CUDA_ARCH_LIST=\"([^\"]+)\"", script, re.M):
        listed = archs.replace("${TORCH_CUDA_ARCH_LIST}", "").replace("+PTX", "").split(";")
        out[cuda] = " ".join(f"sm_{a.replace('.', '')}" for a in listed if re.fullmatch(r"\d+\.\d", a))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("what", choices=["gpus", "drivers", "torch", "check"])
    parser.add_argument("--from", dest="source", help="a saved copy of the source page")
    parser.add_argument("--torch", help="the torch release whose build script is read (torch only)")
    args = parser.parse_args()
    if args.what == "check":
        problems = envdata.data_problems()
        print("\n".join(problems) or "the environment data files are sound")
        return 1 if problems else 0
    url = SOURCES[args.what].format(torch=args.torch)
    page = (
        Path(args.source).read_text()
        if args.source
        else urllib.request.urlopen(url, timeout=60).read().decode()
    )
    name = {"gpus": "gpu-capabilities.json", "drivers": "cuda-drivers.json", "torch": "torch-builds.json"}[
        args.what
    ]
    path = envdata.DATA_DIR / name
    data = json.loads(path.read_text())
    if args.what == "gpus":
        fresh = gpus(page)
        changed = {k: v for k, v in fresh.items() if data["capabilities"].get(k) != v}
        data["capabilities"].update(changed)
    elif args.what == "drivers":
        known = {r["cuda"]: r for r in data["toolkit_minimum"]}
        fresh_rows = drivers(page)
        changed = {r["cuda"]: r for r in fresh_rows if known.get(r["cuda"]) != r}
        known.update(changed)
        data["toolkit_minimum"] = sorted(
            known.values(), key=lambda r: envdata.major_minor(r["cuda"]) or (0, 0), reverse=True
        )
    else:
        if not args.torch:
            parser.error("torch needs --torch X.Y")
        changed = torch_archs(page)
        print(f"torch {args.torch}: add or extend a builds[] row per CUDA variant by hand:")
    print(json.dumps(changed, indent=1))
    data["retrieved"] = dt.date.today().isoformat()
    path.write_text(json.dumps(data, indent=2) + "\n")
    problems = envdata.data_problems()
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
