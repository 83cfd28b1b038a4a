"""The build-env, host-memory and crash-tools probes: their verdicts on given facts, and the real
probes on this machine, checked against what the machine itself says."""

from __future__ import annotations

import json
import os
import re
import resource
import runpy
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import invoke
from kbgen.probes.discovery import BUILTIN_DIR


def builtin(name: str) -> dict[str, Any]:
    return runpy.run_path(str(BUILTIN_DIR / f"{name}.py"))


def probe(probe_id: str) -> dict[str, Any]:
    result = invoke("probe", "--json", probe_id)
    assert result.exit_code == 0, result.stderr
    found: dict[str, Any] = json.loads(result.stdout)["results"][0]
    return found


def test_arch_list_covers_a_gpu_by_its_capability_or_older_ptx() -> None:
    entries = builtin("build_env")["_arch_entries"]("7.5;8.0+PTX")
    covers = builtin("build_env")["arch_covers"]
    assert covers(entries, (7, 5)) and covers(entries, (8, 6))  # 8.6 runs 8.0's PTX
    assert not covers(entries, (7, 0))
    assert not covers(builtin("build_env")["_arch_entries"]("7.5 8.0"), (9, 0))


@pytest.mark.parametrize(
    ("facts", "caps", "status_words"),
    [
        ({"torch": "2.4", "torch_cuda": "12.4", "nvcc_cuda": "11.8"}, [], ("fail", "majors differ")),
        ({"torch": "2.4", "torch_cuda": "12.4", "nvcc_cuda": "12.1"}, [], ("warn", "same major")),
        ({"torch": "2.4", "torch_cuda": "12.4", "nvcc_cuda": None}, [], ("fail", "no nvcc")),
        (
            {
                "torch": "2.4",
                "torch_cuda": "12.4",
                "nvcc_cuda": "12.4",
                "cuda_home_var": "CUDA_HOME",
                "cuda_home": "/nowhere",
                "cuda_home_exists": False,
            },
            [],
            ("fail", "CUDA_HOME=/nowhere does not exist"),
        ),
        (
            {"torch": "2.4", "torch_cuda": "12.4", "nvcc_cuda": "12.4", "arch_list": "7.5;8.0"},
            [(8, 9)],
            ("fail", "leaves out this GPU's 8.9"),
        ),
        (
            {"torch": "2.4", "torch_cuda": "11.7", "nvcc_cuda": "11.7", "gcc": "gcc (GCC) 12.2.1"},
            [],
            ("warn", "gcc 12.2 is outside the range torch allows for CUDA 11.7"),
        ),
        ({"torch": "2.4", "torch_cuda": "12.4", "nvcc_cuda": "12.4", "gcc": "gcc 11.4.0"}, [], ("pass", "")),
    ],
)
def test_build_env_verdicts(facts: dict[str, Any], caps: list[Any], status_words: tuple[str, str]) -> None:
    table = {"11.7": ((6, 0, 0), (12, 0)), "12.4": ((6, 0, 0), (14, 0))}  # as torch's CUDA_GCC_VERSIONS
    fails, warns = builtin("build_env")["problems"](facts, caps, table)
    status = "fail" if fails else "warn" if warns else "pass"
    assert status == status_words[0], (fails, warns)
    assert status_words[1] in "; ".join(fails + warns)


def test_build_env_on_this_machine_reports_what_the_tools_say(kb_project: Path) -> None:
    torch = pytest.importorskip("torch")
    result = probe("build-env")
    facts = result["facts"]
    assert facts["torch"] == torch.__version__
    assert facts["torch_cuda"] == torch.version.cuda
    gcc = shutil.which("gcc")
    if gcc:
        first = subprocess.run([gcc, "--version"], capture_output=True, text=True, timeout=10).stdout
        assert facts["gcc"] == first.splitlines()[0].strip()
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    under_home = Path(home, "bin", "nvcc") if home else None
    nvcc = str(under_home) if under_home and under_home.is_file() else shutil.which("nvcc")
    if nvcc:
        said = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=10).stdout
        release = re.search(r"release (\d+\.\d+)", said)
        assert facts["nvcc_cuda"] == (release.group(1) if release else None)
    else:
        assert facts["nvcc"] is None
    if torch.version.cuda is None:
        assert result["status"] == "warn"
        assert "CPU-only build" in result["message"]


def test_build_env_fails_on_a_cuda_home_that_does_not_exist(
    kb_project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda-12.4"))
    result = probe("build-env")
    assert result["facts"]["cuda_home_exists"] is False
    assert result["status"] == "fail"
    assert f"CUDA_HOME={tmp_path / 'cuda-12.4'} does not exist" in result["message"]


def test_meminfo_is_read_in_megabytes() -> None:
    text = "MemTotal:       24683520 kB\nMemFree:  100 kB\nMemAvailable:   23700000 kB\nSwapTotal: 0 kB\n"
    assert builtin("host_memory")["meminfo"](text) == {
        "MemTotal": 24105,
        "MemAvailable": 23144,
        "SwapTotal": 0,
    }


def test_host_memory_on_this_machine_matches_proc_and_the_cgroup(kb_project: Path) -> None:
    result = probe("host-memory")
    facts = result["facts"]
    meminfo = Path("/proc/meminfo").read_text()
    total = int(re.search(r"MemTotal:\s+(\d+)", meminfo).group(1)) // 1024  # type: ignore[union-attr]
    assert facts["mem_total_mb"] == total
    v1 = Path("/sys/fs/cgroup/memory/memory.limit_in_bytes")
    if facts["cgroup"] == "v1":
        limit = int(v1.read_text())
        assert facts["cgroup_limit_mb"] == (None if limit >= 1 << 60 else limit // (1024 * 1024))
    expected = {"fail"} if facts["cgroup_oom_kills"] or facts["oom_kill_lines"] else {"pass", "warn"}
    assert result["status"] in expected, result
    assert isinstance(facts["kernel_log_readable"], bool)


def test_crash_tools_on_this_machine(kb_project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONFAULTHANDLER", "1")
    result = probe("crash-tools")
    facts = result["facts"]
    assert facts["gdb"] == shutil.which("gdb")
    assert facts["faulthandler"] is True
    soft = resource.getrlimit(resource.RLIMIT_CORE)[0]
    assert facts["core_limit"] == ("unlimited" if soft == resource.RLIM_INFINITY else soft)
    assert result["status"] == ("pass" if shutil.which("gdb") else "warn")
