"""The dated, sourced facts kbgen needs to judge an environment from text alone.

Three files in the base layer (``kbgen/knowledge/data/``), each naming its sources and the day
they were read, refreshed by ``scripts/refresh_env_data.py``:

- ``gpu-capabilities.json``: compute capability per GPU model (NVIDIA's CUDA GPUs list);
- ``torch-builds.json``: the arch list of each official torch build (version x CUDA variant), and
  the CUDA variant a plain ``pip install torch`` gets on Linux;
- ``cuda-drivers.json``: the minimum driver per CUDA toolkit (Linux and Windows), the
  minor-version compatibility floor per CUDA major, and the rules for PTX JIT and cubins.

:func:`data_problems` is the validate check: shapes, dates, sources, and orderings that must hold.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kbgen.errors import Problem

DATA_DIR = Path(__file__).resolve().parent / "knowledge" / "data"
FILES = ("gpu-capabilities.json", "torch-builds.json", "cuda-drivers.json")
_CAP = re.compile(r"\d{1,2}\.\d")
_VERSION = re.compile(r"\d+(?:\.\d+)*")


def version_tuple(text: str | None) -> tuple[int, ...] | None:
    """``"550.54.14"`` -> (550, 54, 14); None when the text holds no version."""
    match = _VERSION.search(text or "")
    return tuple(int(p) for p in match.group(0).split(".")) if match else None


def major_minor(text: str | None) -> tuple[int, int] | None:
    found = version_tuple(text)
    if not found:
        return None
    return (found[0], found[1] if len(found) > 1 else 0)


@dataclass(frozen=True)
class Build:
    torch_from: tuple[int, int]
    torch_to: tuple[int, int]
    cuda: tuple[str, ...]
    archs: str


@dataclass(frozen=True)
class EnvData:
    capabilities: dict[str, str]
    builds: tuple[Build, ...]
    default_cuda: dict[str, str]
    toolkit_minimum: tuple[tuple[str, str, str], ...]  # (cuda, linux, windows), newest first
    minor_minimum: dict[int, tuple[str, str]]


def _read(name: str) -> dict[str, Any]:
    from kbgen.fileio import read_limited

    data = json.loads(read_limited(DATA_DIR / name).decode("utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{name}: not a JSON object")
    return data


@functools.cache
def load() -> EnvData:
    """The three data files, read once."""
    gpus, torch, drivers = (_read(name) for name in FILES)
    builds = tuple(
        Build(
            major_minor(b["torch"][0]) or (0, 0),
            major_minor(b["torch"][1]) or (0, 0),
            tuple(b["cuda"]),
            b["archs"],
        )
        for b in torch["builds"]
    )
    return EnvData(
        capabilities={k.lower(): v for k, v in gpus["capabilities"].items()},
        builds=builds,
        default_cuda=dict(torch["linux_default_cuda"]),
        toolkit_minimum=tuple((t["cuda"], t["linux"], t["windows"]) for t in drivers["toolkit_minimum"]),
        minor_minimum={int(m["major"]): (m["linux"], m["windows"]) for m in drivers["minor_version_minimum"]},
    )


# --------------------------------------------------------------------------- look-ups

_NOISE = re.compile(
    r"\b(nvidia|geforce|tesla|(?:with )?max-q design|laptop gpu|generation|\(tm\)|\(r\)|"
    r"\d+\s*gb|sxm\d?|pcie|hbm\d?e?|mig \S+)\b"
)


def normalize_gpu(name: str) -> str:
    text = re.sub(r"[-_/()\[\],]+", " ", name.lower())
    text = _NOISE.sub(" ", text)
    text = re.sub(r"\b(rtx|gtx|gt)(\d{3,4})", r"\1 \2", text)  # "RTX3090", as people type it
    text = re.sub(r"\b(\d{4})(ti|super)\b", r"\1 \2", text)
    return " ".join(text.split())


def capability_of(name: str | None) -> str | None:
    """The compute capability of a GPU named ``name`` ("NVIDIA GeForce RTX 4090" -> "8.9")."""
    if not name:
        return None
    caps = load().capabilities
    text = normalize_gpu(name)
    for candidate in (text, re.sub(r"\bgtx\b", "rtx", text), re.sub(r"\brtx\b", "gtx", text)):
        padded = f" {candidate} "
        found = [key for key in caps if f" {key} " in padded]
        if found:
            return caps[max(found, key=len)]
    return None


def default_cuda(torch_version: str | None) -> str | None:
    """The CUDA variant a plain Linux ``pip install torch==VERSION`` gets."""
    mm = major_minor(torch_version)
    return load().default_cuda.get(f"{mm[0]}.{mm[1]}") if mm else None


def arch_list(torch_version: str | None, cuda: str | None) -> str | None:
    """The arch list of the official build ``torch_version`` for ``cuda``; None when not known."""
    version, runtime = major_minor(torch_version), major_minor(cuda)
    if version is None or runtime is None:
        return None
    for build in load().builds:
        if build.torch_from <= version < build.torch_to and any(
            major_minor(c) == runtime for c in build.cuda
        ):
            return build.archs
    return None


def arch_lists(torch_version: str | None) -> list[str]:
    """The arch lists of every official CUDA build of ``torch_version`` (any CUDA variant)."""
    version = major_minor(torch_version)
    if version is None:
        return []
    return [b.archs for b in load().builds if b.torch_from <= version < b.torch_to]


def builds_with(capability: str) -> tuple[str, str] | None:
    """``(torch, cuda)``: the newest official torch that runs ``capability``, in its oldest CUDA variant."""
    cap = major_minor(capability)
    if cap is None:
        return None
    fits = [b for b in load().builds if arch_runs(cap, b.archs.split())[0] != "fail"]
    if not fits:
        return None
    last = max(b.torch_to for b in fits)
    newest = [b for b in fits if b.torch_to == last]
    cuda = min((c for b in newest for c in b.cuda), key=lambda c: major_minor(c) or (0, 0))
    return f"{last[0]}.{last[1] - 1}", cuda


def arch_runs(cap: tuple[int, int], archs: list[str]) -> tuple[str, str]:
    """Can a GPU of capability ``cap`` run kernels from ``archs`` (sm_XY / compute_XY)? (status, why)"""
    sms = {(int(a[3:-1]), int(a[-1])) for a in archs if re.fullmatch(r"sm_\d{2,3}", a)}
    ptx = {(int(a[8:-1]), int(a[-1])) for a in archs if re.fullmatch(r"compute_\d{2,3}", a)}
    name = f"sm_{cap[0]}{cap[1]}"
    if cap in sms:
        return "pass", f"{name} is in the arch list"
    same = sorted(s for s in sms if s[0] == cap[0] and s[1] <= cap[1])
    if same:
        return "pass", f"{name} runs the sm_{same[-1][0]}{same[-1][1]} kernels (same major version)"
    older = sorted(p for p in ptx if p <= cap)
    if older:
        return (
            "warn",
            f"{name} is not compiled in; kernels are JIT-compiled from "
            f"compute_{older[-1][0]}{older[-1][1]} PTX",
        )
    return "fail", f"{name} is not in the arch list ({' '.join(archs) or 'empty'})"


def driver_supports(driver: str | None, windows: bool) -> str | None:
    """The newest CUDA a driver version supports ("535.183.01" -> "12.2"), from the toolkit table."""
    version = version_tuple(driver)
    if version is None or version[0] < 300:
        return None
    for cuda, linux, win in load().toolkit_minimum:
        floor = version_tuple(win if windows else linux) or (0,)
        if version >= floor:
            return cuda
    return None


def minor_floor(major: int, windows: bool) -> tuple[int, ...] | None:
    pair = load().minor_minimum.get(major)
    return version_tuple(pair[1] if windows else pair[0]) if pair else None


# --------------------------------------------------------------------------- validate check


def data_problems(folder: Path = DATA_DIR) -> list[str]:
    """What is wrong with the data files (empty when they are sound)."""
    problems: list[str] = []
    for name in FILES:
        path = folder / name
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            problems.append(f"{name}: cannot be read: {exc}")
            continue
        if not isinstance(data, dict):
            problems.append(f"{name}: must be a JSON object")
            continue
        problems += _common(name, data)
        check = {"gpu-capabilities.json": _gpus, "torch-builds.json": _torch, "cuda-drivers.json": _drivers}
        try:
            problems += check[name](data)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            problems.append(f"{name}: wrong shape: {type(exc).__name__}: {exc}")
    return problems


def _common(name: str, data: dict[str, Any]) -> list[str]:
    out = []
    sources = data.get("sources")
    if (
        not isinstance(sources, list)
        or not sources
        or not all(isinstance(s, str) and s.startswith("https://") for s in sources)
    ):
        out.append(f"{name}: `sources` must list the https pages the facts come from")
    try:
        dt.date.fromisoformat(str(data.get("retrieved")))
    except ValueError:
        out.append(f"{name}: `retrieved` must be the date the sources were read (YYYY-MM-DD)")
    return out


def _gpus(data: dict[str, Any]) -> list[str]:
    caps = data["capabilities"]
    return [
        f"gpu-capabilities.json: {k}: {v!r} is not a capability like 8.6"
        for k, v in caps.items()
        if not (isinstance(v, str) and _CAP.fullmatch(v))
    ]


def _torch(data: dict[str, Any]) -> list[str]:
    out = []
    for i, build in enumerate(data["builds"]):
        low, high = (major_minor(v) for v in build["torch"])
        if low is None or high is None or low >= high:
            out.append(f"torch-builds.json: builds[{i}]: torch range must be [from, to) with from < to")
        bad = [a for a in build["archs"].split() if not re.fullmatch(r"(sm|compute)_\d{2,3}", a)]
        if bad or not build["cuda"]:
            out.append(f"torch-builds.json: builds[{i}]: needs CUDA variants and sm_XY/compute_XY archs")
    return out


def _drivers(data: dict[str, Any]) -> list[str]:
    out = []
    rows = data["toolkit_minimum"]
    for earlier, later in zip(rows[1:], rows, strict=False):
        for os_name in ("linux", "windows"):
            if (major_minor(earlier["cuda"]) or (0, 0)) >= (major_minor(later["cuda"]) or (0, 0)) or (
                version_tuple(earlier[os_name]) or (0,)
            ) > (version_tuple(later[os_name]) or (0,)):
                out.append(
                    f"cuda-drivers.json: {later['cuda']} ({os_name}) must be newer than {earlier['cuda']}"
                )
    if not data["minor_version_minimum"] or not data["rules"]:
        out.append("cuda-drivers.json: needs minor_version_minimum and rules")
    return out


def problems() -> list[Problem]:
    """``kbgen validate``'s view of the data tables: one problem per defect, named by file.

    Nothing when the base layer is turned off (``$KBGEN_BASE=off``): then no verdict uses them.
    """
    from kbgen import layers
    from kbgen.errors import Problem

    if layers.base_dir() is None:
        return []
    found = []
    for problem in data_problems(DATA_DIR):
        name, _, message = problem.partition(": ")
        found.append(Problem(f"{layers.BASE_LABEL}/data/{name}", None, None, message, code="data"))
    return found
