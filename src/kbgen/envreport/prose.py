"""Rules for facts people state in their own words, and for the layouts of smaller tools.

- a GPU named in a sentence or a title ("Is the NVIDIA GeForce RTX 5060 Laptop GPU supported?",
  "GTX 3090" on a line of its own), taken only when NVIDIA's list knows the model, so that the
  capability follows from it;
- a driver version given bare in answer to "what does nvidia-smi say?" (``410.48,,``);
- torch's "driver is too old" retold ("the msg is that my Nvidia version is too old");
- CUDA's ``deviceQuery`` sample and macOS's CUDA preference pane;
- conda's CPU variant packages (``cpuonly``, ``pytorch-mutex ... cpu``);
- cuDNN's own word that its libraries do not match.

Importing this module registers its rules after those of :mod:`kbgen.envreport.warnings`, so a
fact that a form or a table states on the same line wins over the one read from the words.
"""

from __future__ import annotations

import re

from kbgen import envdata
from kbgen.envreport import warnings as _warnings  # noqa: F401  (its rules go first)
from kbgen.envreport.parse import HIGH, LOW, MID, Found, driver_version, gpu_name, major_minor, rule

# --------------------------------------------------------------------------- words


@rule(
    r"\b((?:NVIDIA\s+)?(?:GeForce\s+)?(?:RTX|GTX|GT)\s?-?(?:PRO\s+)?\d{3,4}(?:\s?(?:Ti|SUPER))?"
    r"(?:\s+(?:Laptop GPU|Max-Q|Ada(?: Generation)?))?"
    r"|(?:NVIDIA\s+)?(?:Tesla|Quadro)\s+(?:RTX\s+)?[A-Z]{0,3}\d{1,4}[A-Za-z]{0,2}(?:-(?:SXM|PCIE)\w*(?:-\d+GB)?)?"
    r"|NVIDIA\s+(?:RTX\s+)?[ABHL]\d{1,4}[A-Za-z]{0,2}(?:-(?:SXM|PCIE)\w*(?:-\d+GB)?)?)\b",
    "prose",
)
def _gpu_named(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    named = {envdata.normalize_gpu(x.group(1)) for x in m.re.finditer(m.string)}
    name = gpu_name(m.group(1))
    if name and len(named) == 1 and envdata.capability_of(name):  # two GPUs named: which one is it?
        f.put("gpu.name", name, LOW)


@rule(r"\b(?:py)?torch\s*(?:version\s*)?\(?\s*v?(\d+\.\d+\.\d+(?:\+\w+)?)\b", "prose")
def _torch_named(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    if len({x.group(1) for x in m.re.finditer(m.string)}) == 1:  # "from torch 1.2.0 to 1.3.1": which?
        f.put("torch-build.version", m.group(1), LOW)


@rule(r"(?:nvidia-smi|driver(?: version)?)\s?[?:][\s?]*$", "prose")
def _driver_answer(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    """A line that ends asking for (or running) nvidia-smi or the driver version, and a bare
    driver version in the next lines, as a reply pastes it ("410.48,,")."""
    for line in [x for x in lines[i + 1 : i + 4] if x.strip()][:2]:
        bare = re.fullmatch(r"\s*(\d{3}\.\d{2,3}(?:\.\d{2,3})?)[\s,.;]*", line)
        if bare:
            f.put("gpu.driver", driver_version(bare.group(1)), LOW)
            return


@rule(r"\b(?:nvidia|driver)(?:\s+(?:driver|version))*\s+(?:is|was)\s+too\s+old\b", "prose")
def _driver_old_retold(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("torch-build.driver_too_old", True, MID)


# --------------------------------------------------------------------------- small tools


@rule(r"CUDA Driver Version / Runtime Version\s+(\d+\.\d+)\s*/\s*(\d+\.\d+)", "deviceQuery")
def _dq_versions(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("gpu.driver_cuda", major_minor(m.group(1)), HIGH)


@rule(r"CUDA Capability Major/Minor version number:\s*(\d{1,2})\.(\d)\b", "deviceQuery")
def _dq_capability(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("gpu.capability", f"{m.group(1)}.{m.group(2)}", HIGH)


@rule(r'^\s*Device \d+:\s*"([^"]+)"', "deviceQuery")
def _dq_device(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("gpu.name", gpu_name(m.group(1)), HIGH)


@rule(r"^\s*(?:\[conda\]\s+)?(?:cpuonly\s+\d[\w.]*|pytorch-mutex\s+[\d.]+\s+cpu)\b", "conda list")
def _conda_cpu_variant(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("torch-build.cpu_only", True, MID)


@rule(
    r"CUDNN_STATUS_(?:SUBLIBRARY_)?VERSION_MISMATCH|cuDNN version (?:incompatibility|mismatch)", "torch error"
)
def _cudnn_mismatch(m: re.Match[str], lines: list[str], i: int, f: Found) -> None:
    f.put("torch-build.cudnn_mismatch", True, HIGH)
