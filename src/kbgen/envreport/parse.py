"""Line rules that read environment facts out of pasted text, whatever surrounds them.

Each rule is a regular expression over one line (a few look at the next lines) that yields facts
under the probes' names, with a weight: a fact stated by collect_env or nvidia-smi outweighs one
read off a ``pip list`` line or a requirement in prose, and torch's own warnings outweigh both.
No library parses these formats: collect_env, nvidia-smi and sglang/detectron2's tables are
printed for people, so kbgen keeps one table of rules, tested on the real reports in
``tests/data/env-reports``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

Scalar = str | int | float | bool | None

HIGH, MID, LOW = 3, 2, 1
VERSION = r"(\d+(?:\.\d+)+(?:[a-z]+\d*)?(?:\.dev\d+)?(?:\+[\w.]+)?)"


@dataclass
class Found:
    facts: dict[str, Scalar] = field(default_factory=dict)
    weight: dict[str, int] = field(default_factory=dict)
    formats: list[str] = field(default_factory=list)

    def put(self, key: str, value: Scalar, weight: int) -> None:
        if value is None or value == "":
            return
        if weight > self.weight.get(key, 0):
            self.facts[key], self.weight[key] = value, weight

    def saw(self, name: str) -> None:
        if name not in self.formats:
            self.formats.append(name)


Rule = Callable[[re.Match[str], list[str], int, Found], None]
RULES: list[tuple[re.Pattern[str], str, Rule]] = []


def rule(pattern: str, fmt: str) -> Callable[[Rule], Rule]:
    def add(fn: Rule) -> Rule:
        RULES.append((re.compile(pattern, re.IGNORECASE), fmt, fn))
        return fn

    return add


#: lines screened together: one RE2 pass says which rules can match anywhere in them
BLOCK = 512


def scan(lines: list[str]) -> Found:
    """Run every rule on every line, in order; a block of lines where RE2 finds that no rule can
    match (most of a training log) is skipped after one linear pass."""
    found = Found()
    screen, always = _screen(len(RULES))
    for start in range(0, len(lines), BLOCK):
        block = lines[start : start + BLOCK]
        hits = screen.Match(_ascii("\n".join(block)).encode()) if screen is not None else None
        candidates = sorted({*(hits or ()), *always}) if screen is not None else range(len(RULES))
        for offset, line in enumerate(block if candidates else ()):
            for k in candidates:
                pattern, fmt, fn = RULES[k]
                match = pattern.search(line)
                if match:
                    fn(match, lines, start + offset, found)
                    found.saw(fmt)
    return found


def _ascii(text: str) -> str:
    """``text`` for the screen: RE2's ``\\s \\d \\w`` are ASCII, Python's are Unicode, so each
    other character becomes an ASCII one the Python class would also match (a no-break space a
    space, a digit 0, a letter its ASCII lower case or ``a``): the screen stays a superset."""
    if text.isascii():
        return text.translate(_SPACES)
    return "".join(c if c.isascii() else _fold(c) for c in text).translate(_SPACES)


#: ASCII characters Python's ``\\s`` matches and RE2's does not
_SPACES = str.maketrans(dict.fromkeys("\x0b\x1c\x1d\x1e\x1f", " "))


@functools.lru_cache(maxsize=4096)
def _fold(char: str) -> str:
    if char.isspace():
        return " "
    if char.isdecimal():
        return "0"
    lower = char.lower()
    if lower.isascii() and len(lower) == 1:
        return lower
    return "a" if char.isalnum() else "?"


@functools.cache
def _screen(count: int) -> tuple[Any, frozenset[int]]:
    """An RE2 set of the first ``count`` rules, their line anchors dropped (a superset of where
    each can match), and the rules RE2 cannot run, which every block tries."""
    import re2

    from kbgen.triage.signatures import SET_MEM, re2_options, without_anchors

    screen: Any = re2.Set.SearchSet(re2_options(never_nl=True, max_mem=SET_MEM))
    always = set()
    try:
        for index, (pattern, _, _) in enumerate(RULES[:count]):
            try:
                screen.Add("(?i)" + without_anchors(pattern.pattern))
            except re2.error:
                always.add(index)
                screen.Add(r"\b\B")  # keeps the indexes aligned; never matches
        screen.Compile()
    except re2.error:
        return None, frozenset(range(count))
    return screen, frozenset(always)


def major_minor(text: str) -> str | None:
    match = re.match(r"(\d+)\.(\d+)", text)
    return f"{int(match.group(1))}.{int(match.group(2))}" if match else None


def gpu_name(text: str) -> str | None:
    name = re.sub(r"\s*\((?:gfx|arch=|UUID)[^)]*\)\s*$", "", text.strip()).strip(" .|>\"'`")
    if not name or name.lower() in ("no cuda", "could not collect", "n/a", "none"):
        return None
    return name


def driver_version(text: str) -> str | None:
    """An NVIDIA driver version out of ``text``, stray punctuation after it dropped ("410.48,," ->
    "410.48"); None when ``text`` does not start with one."""
    match = re.match(r"\s*(\d{3}(?:\.\d+)+)(?![\d.]*\d)", text)
    return match.group(1) if match else None


def _bool(text: str) -> bool | None:
    word = text.strip().lower()
    return True if word in ("true", "yes") else False if word in ("false", "no") else None


def _os(text: str) -> str:
    return re.sub(r"\s*\((?:x86_64|arm64|aarch64|ppc64le)\)\s*$", "", text.strip())


# --------------------------------------------------------------------------- collect_env

_KV = r"^\s*(?:>\s*)?{key}\s*:\s*(.*?)\s*$"


def _kv(key: str) -> str:
    return _KV.format(key=key)


@rule(_kv(r"PyTorch version"), "collect_env")
def _torch_version(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    value = m.group(1).split()[0] if m.group(1).split() else ""
    if re.match(r"\d", value):
        f.put("torch-build.version", value, HIGH)


@rule(_kv(r"CUDA used to build PyTorch"), "collect_env")
def _cuda_built(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    value = m.group(1).strip("* ")
    if re.match(r"\d", value):
        f.put("torch-build.cuda", major_minor(value), HIGH)
    elif value.lower() in ("none", "could not collect"):
        f.put("torch-build.cpu_only", True, MID)


@rule(_kv(r"ROCM used to build PyTorch"), "collect_env")
def _rocm(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    if re.match(r"\d", m.group(1)):
        f.put("torch-build.hip", m.group(1).split()[0], HIGH)
        f.put("torch-build.cpu_only", False, HIGH)


@rule(_kv(r"OS"), "collect_env")
def _os_line(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    if m.group(1) and not m.group(1).startswith("["):
        f.put("system.os", _os(m.group(1)), HIGH)


@rule(r"^\s*(?:-\s*)?(?:OS|Os)\s*(?:\(e\.g\., Linux\))?\s*:\s*(.+?)\s*$", "markdown")
def _os_bullet(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    if m.group(1) and not m.group(1).startswith("["):
        f.put("system.os", _os(m.group(1)), MID)


@rule(r"^\s*(?:Python version|Python)\s*:\s*(\d+\.\d+(?:\.\d+)?)", "collect_env")
def _python(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("system.python", m.group(1), HIGH)


@rule(r"^\s*Python (3\.\d+\.\d+)\s+(?:\||\(main|\(default|\(tags/)", "python")
def _python_banner(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    """The interpreter's first line (``Python 3.8.12 | packaged by conda-forge | (default, ...``)."""
    f.put("system.python", m.group(1), MID)


@rule(r"^\s*Python\s{2,}(\d+\.\d+\.\d+)", "detectron2")
def _python_table(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("system.python", m.group(1), HIGH)


@rule(r"(?:python=|python)(3\.\d+(?:\.\d+)?)\b", "prose")
def _python_prose(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("system.python", m.group(1), LOW)


@rule(r"microsoft-standard-WSL2|-microsoft-standard\b", "collect_env")
def _wsl2(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("system.wsl", "WSL2", HIGH)


@rule(r"^\s*(?:Is CUDA available|CUDA available|GPU available)\s*:?\s+(True|False|Yes|No)\b", "collect_env")
def _available(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("torch-build.cuda_available", _bool(m.group(1)), HIGH)


@rule(r"is_available(?:\(\))?\s*(?:={1,2}|returns|:|\))?\s*\**\s*(True|False)\b", "prose")
def _available_prose(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("torch-build.cuda_available", _bool(m.group(1)), MID)


@rule(_kv(r"GPU models and configuration"), "collect_env")
def _gpu_models(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    value = m.group(1)
    if not value:
        value = next((x for x in lines[i + 1 : i + 3] if x.strip()), "")
    name = re.sub(r"^\s*GPU \d+\s*[:：]\s*", "", value)
    f.put("gpu.name", gpu_name(name), HIGH)
    if value.strip().lower() == "no cuda":  # collect_env: nvidia-smi, the driver and nvcc all absent
        f.put("gpu.count", 0, MID)


@rule(_kv(r"Nvidia driver version"), "collect_env")
def _nv_driver(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("gpu.driver", driver_version(m.group(1)), HIGH)


@rule(r"^\s*(?:Model name|Name)\s*[:=]\s*(.+?)\s*$", "lscpu")
def _cpu_model(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    if re.search(r"(?i)intel|amd|apple|arm|qemu|xeon|epyc|ryzen|core", m.group(1)) and "torch" not in m.group(
        1
    ):
        f.put("cpu.model", m.group(1), MID)


@rule(r"^\s*CPU:\s*$", "collect_env")
def _cpu_block(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
    if nxt and ":" not in nxt and "=" not in nxt:
        f.put("cpu.model", nxt, MID)


@rule(r"^\s*(?:Flags|flags)\s*:\s*(\w.*)$", "lscpu")
def _flags(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    words = m.group(1).split()
    if "fpu" in words or "sse2" in words:
        f.put("cpu.flags", " ".join(words), HIGH)


# --------------------------------------------------------------------------- nvidia-smi and nvcc


@rule(r"NVIDIA-SMI\s+([\d.]+)\s+Driver Version:\s*([\d.]+)\s+CUDA (?:UMD )?Version:\s*([\d.]+)", "nvidia-smi")
def _smi_header(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("gpu.driver", m.group(2), HIGH)
    f.put("gpu.driver_cuda", major_minor(m.group(3)), HIGH)


@rule(r"^\s*\|\s+0\s+(.+?)\s+(?:On|Off|WDDM|TCC)\s+\|", "nvidia-smi")
def _smi_row(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("gpu.name", gpu_name(m.group(1)), HIGH)


@rule(r"^\s*(?:[-*]\s*)?Driver Version\s*:\s*([\d.]+)[\s,;]*$", "nvidia-smi -q")
def _smiq_driver(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("gpu.driver", driver_version(m.group(1)), HIGH)


@rule(r"^\s*CUDA Version\s*:\s*([\d.]+)\s*$", "nvidia-smi -q")
def _smiq_cuda(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("gpu.driver_cuda", major_minor(m.group(1)), HIGH)


@rule(r"^\s*Product Name\s*:\s*(.+?)\s*$", "nvidia-smi -q")
def _smiq_name(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("gpu.name", gpu_name(m.group(1)), HIGH)


@rule(r"NVRM version:.*Kernel Module\s+(\d{3}\.\d+(?:\.\d+)?)", "nvrm")
def _nvrm(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("gpu.driver", m.group(1), HIGH)


@rule(r"Cuda compilation tools, release (\d+\.\d+)", "nvcc")
def _nvcc(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("toolkit.nvcc", m.group(1), HIGH)


@rule(r"\bCUDA Driver Version\s*:\s*(\d+\.\d+[\d.]*)", "sglang")
def _cuda_driver_version(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    """sglang's line gives the driver; macOS's CUDA pane ("CUDA Driver Version: 7.5.20") its CUDA."""
    value = m.group(1).rstrip(".")
    if int(value.split(".")[0]) >= 100:
        f.put("gpu.driver", value, HIGH)
    else:
        f.put("gpu.driver_cuda", major_minor(value), HIGH)


@rule(r"^\s*GPU [\d,]+\s*:\s*(.+?)\s*$", "sglang")
def _sgl_gpu(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("gpu.name", gpu_name(m.group(1)), MID)


@rule(r"^\s*GPU [\d,]+ Compute Capability\s*:\s*(\d+\.\d)", "sglang")
def _sgl_cap(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("gpu.capability", m.group(1), HIGH)


@rule(r"^\s*GPU [\d,]+\s{2,}(.+?)\s*$", "detectron2")
def _d2_gpu(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    arch = re.search(r"\(arch=(\d+\.\d)\)", m.group(1))
    f.put("gpu.name", gpu_name(m.group(1)), MID)
    if arch:
        f.put("gpu.capability", arch.group(1), HIGH)


@rule(r"^\s*(?:PyTorch|torch)\s{2,}" + VERSION + r"(?:\s+@|\s*$)", "detectron2")
def _d2_torch(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("torch-build.version", m.group(1), MID)


@rule(r"^\s*CUDA compiler\s{2,}CUDA (\d+\.\d+)", "detectron2")
def _d2_nvcc(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("toolkit.nvcc", m.group(1), MID)


@rule(r"^\s*Driver version\s{2,}([\d.]+)", "detectron2")
def _d2_driver(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("gpu.driver", m.group(1), HIGH)


def iter_rules() -> Iterator[tuple[re.Pattern[str], str, Rule]]:
    yield from RULES
