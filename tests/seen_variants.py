"""The robustness set: real logs with the surface changes a rerun of the same crash makes.

Each variant is derived from a log of tests/data/seen (or tests/data/logs) by one change: the
project moved to another folder, the code shifted by a few lines, another batch (sizes), another
rank prefix, another device id, timestamps, a patch release of the same torch/CUDA series.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

ROOTS = [Path(__file__).parent / "data" / "seen" / "logs", Path(__file__).parent / "data" / "logs"]


def _paths(text: str) -> str:
    return re.sub(r"/home/[\w.-]+|/root|/opt|/data|C:\\Users\\[\w.-]+", "/srv/ci-runner", text)


def _lines(text: str) -> str:
    return re.sub(r"line (\d+)", lambda m: f"line {int(m.group(1)) + 7}", text)


def _sizes(text: str) -> str:
    return re.sub(r"(\d+\.\d+) (GiB|MiB)", lambda m: f"{float(m.group(1)) * 1.37:.2f} {m.group(2)}", text)


def _ranks(text: str) -> str:
    return "\n".join(f"[rank3]: {line}" for line in text.splitlines())


def _devices(text: str) -> str:
    return re.sub(r"cuda:0|GPU 0", lambda m: m.group(0)[:-1] + "5", text)


def _times(text: str) -> str:
    return "\n".join(f"2031-02-03 04:05:{i % 60:02d},123 {line}" for i, line in enumerate(text.splitlines()))


def _versions(text: str) -> str:
    return re.sub(
        r"\b(1\d|2)\.(\d+)\.(\d+)\b", lambda m: f"{m.group(1)}.{m.group(2)}.{int(m.group(3)) + 1}", text
    )


CHANGES: dict[str, Callable[[str], str]] = {
    "paths": _paths,
    "line-numbers": _lines,
    "sizes": _sizes,
    "rank-prefix": _ranks,
    "device-ids": _devices,
    "timestamps": _times,
    "patch-versions": _versions,
}


def bases(limit: int = 60) -> list[Path]:
    """The real logs variants are made from: the seen-before logs and the triage test logs."""
    found = sorted(p for root in ROOTS if root.is_dir() for p in root.glob("*.log"))
    return found[:limit]


def variants(text: str) -> Iterator[tuple[str, str]]:
    """(change, changed text) for each change that alters ``text``."""
    for name, change in CHANGES.items():
        changed = change(text)
        if changed != text:
            yield name, changed
