"""How `kbgen env` reads facts people paste in other layouts or in their own words (logger
prefixes, Markdown, sentences, deviceQuery, conda's CPU variant, cuDNN's mismatch status), and
how the judge weighs a CPU-only build or a torch that does not name its CUDA."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import invoke
from kbgen import envdata

REPO = Path(__file__).resolve().parents[1]


def env(text: str) -> dict[str, Any]:
    result = invoke("env", "--json", "-", input=text)
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    data["status"] = {v["check"]: v["status"] for v in data["verdicts"]}
    return data


# --------------------------------------------------------------------------- layouts


def test_a_loggers_prefix_does_not_hide_the_fact() -> None:
    facts = env(
        "[2025-10-13 18:27:05,692][DEBUG] Platform: Linux-6.6.87.2-microsoft-standard-WSL2-x86_64\n"
        "[2025-10-13 18:27:05,692][DEBUG] Python: 3.12.11\n"
        "2024-05-01 10:00:00,123 - INFO - PyTorch version: 2.3.0+cu121\n"
    )["facts"]
    assert facts["system.python"] == "3.12.11"
    assert facts["system.wsl"] == "WSL2"
    assert facts["torch-build.version"] == "2.3.0+cu121"


def test_a_two_column_markdown_table_is_read_like_collect_env() -> None:
    facts = env(
        "| Item | Value |\n|---|---|\n"
        "| PyTorch version | 2.1.0+cu118 |\n"
        "| GPU models and configuration | NVIDIA A100-SXM4-80GB |\n"
        "| Nvidia driver version | 535.104.05 |\n"
    )["facts"]
    assert facts["torch-build.version"] == "2.1.0+cu118"
    assert facts["gpu.name"] == "NVIDIA A100-SXM4-80GB"
    assert facts["gpu.driver"] == "535.104.05"


def test_bold_and_code_marks_around_a_value_are_dropped() -> None:
    data = env("my GPU is not available anymore: torch.cuda.is_available=**False**\n")
    assert data["facts"]["torch-build.cuda_available"] is False
    assert (
        env("`torch.cuda.is_available()` still returns `False`.\n")["facts"]["torch-build.cuda_available"]
        is False
    )


# --------------------------------------------------------------------------- words


def test_a_gpu_named_in_a_title_gives_its_capability() -> None:
    data = env('[BUG] Is "NVIDIA GeForce RTX 5060 Laptop GPU 12.0 " supported?\ntorch==2.5.1\n')
    assert data["facts"]["gpu.name"] == "NVIDIA GeForce RTX 5060 Laptop GPU"
    assert data["facts"]["gpu.capability"] == "12.0"
    assert data["status"]["gpu-arch"] == "fail"


def test_a_mistyped_series_still_names_the_card() -> None:
    data = env("Here is my environment:\nGTX 3090\nCUDA 10.1\ntorch==1.8.1+cu101\n")
    assert data["facts"]["gpu.name"] == "GTX 3090"
    assert data["facts"]["gpu.capability"] == "8.6"


def test_two_gpus_in_one_sentence_name_neither_and_unknown_models_are_left() -> None:
    facts = env("I have a Tesla K80 and two Tesla K40c cards.\n")["facts"]
    assert "gpu.name" not in facts
    assert "gpu.name" not in env("the RTX 9999 rumours are wrong\n")["facts"]


def test_a_torch_version_in_a_sentence_unless_two_are_named() -> None:
    text = "In a fresh conda environment, install the latest stable version of PyTorch (1.3.1)\n"
    assert env(text)["facts"]["torch-build.version"] == "1.3.1"
    assert "torch-build.version" not in env("it broke going from torch 1.2.0 to torch 1.3.1\n")["facts"]
    assert env("$ pip install torch===1.3.0 torchvision===0.4.1\n")["facts"]["torch-build.version"] == "1.3.0"


def test_a_bare_driver_version_answering_nvidia_smi() -> None:
    data = env("What's the output of nvidia-smi?\n410.48,,\n")
    assert data["facts"]["gpu.driver"] == "410.48"
    assert data["facts"]["gpu.driver_cuda"] == "10.0"
    assert "gpu.driver" not in env("epoch 3 loss:\n410.48\n")["facts"]


def test_driver_too_old_in_the_reporters_words_indicts_the_driver() -> None:
    data = env(
        ">>> print(torch.version.cuda)\n10.0.130\n"
        "when i run my program, the msg is that my Nvidia version is too old.\n"
    )
    assert data["status"]["driver-runtime"] == "fail"
    old_gpu = env("PyTorch no longer supports this GPU because it is too old.\n")
    assert "torch-build.driver_too_old" not in old_gpu["facts"]


# --------------------------------------------------------------------------- small tools


def test_device_query_output() -> None:
    facts = env(
        'Device 0: "NVIDIA GeForce RTX 3090"\n'
        "  CUDA Driver Version / Runtime Version          11.4 / 11.4\n"
        "  CUDA Capability Major/Minor version number:    8.6\n"
    )["facts"]
    assert facts["gpu.name"] == "NVIDIA GeForce RTX 3090"
    assert facts["gpu.driver_cuda"] == "11.4"
    assert facts["gpu.capability"] == "8.6"


def test_macos_cuda_pane_gives_the_drivers_cuda() -> None:
    text = "System\nOS X Yosemite 10.10.5\nCUDA CUDA Driver Version: 7.5.20\n"
    assert env(text)["facts"]["gpu.driver_cuda"] == "7.5"


@pytest.mark.parametrize(
    "line",
    [
        "you could check it in you package list, it is pytorch=1.9.0=py3.8_cpu_0",
        "cpuonly                   2.0                           0    pytorch",
        "pytorch-mutex             1.0                         cpu    pytorch",
    ],
)
def test_conda_cpu_variants(line: str) -> None:
    assert env(line + "\n")["facts"]["torch-build.cpu_only"] is True


def test_cudnn_sublibrary_mismatch_indicts_the_libraries() -> None:
    data = env(
        "RuntimeError: CUDNN_BACKEND_TENSOR_DESCRIPTOR cudnnFinalize failed cudnn_status: "
        "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH\n>>> print(torch.__version__)\n2.12.1+cu130\n"
    )
    verdict = next(v for v in data["verdicts"] if v["check"] == "cudnn-libs")
    assert verdict["status"] == "fail" and verdict["cause"] == "library-version-mismatch"


# --------------------------------------------------------------------------- the judge


def test_a_cpu_only_build_warns_unless_the_machine_has_no_nvidia_gpu() -> None:
    conda = "pytorch                   1.11.0              py3.8_cpu_0    pytorch\n"
    assert env(conda)["status"]["cpu-only-build"] == "warn"
    no_gpu = (
        "PyTorch version: 2.8.0+cpu\nCUDA used to build PyTorch: None\nOS: Ubuntu 22.04.4 LTS (x86_64)\n"
        "Is CUDA available: False\nGPU models and configuration: No CUDA\nNvidia driver version: No CUDA\n"
    )
    assert env(no_gpu)["status"]["cpu-only-build"] == "pass"
    mac = "PyTorch version: 2.10.0\nCUDA used to build PyTorch: None\nOS: macOS 13.7.4 (arm64)\n"
    assert env(mac)["status"]["cpu-only-build"] == "pass"
    assert env(conda + "Driver Version: 550.54.14\n")["status"]["cpu-only-build"] == "fail"


def test_a_torch_without_its_cuda_is_weighed_by_its_linux_wheel() -> None:
    text = "pip install torch==1.3.0\ntorch.cuda.is_available() returns False\nDriver version 410.48\n"
    data = env(text)
    verdict = next(v for v in data["verdicts"] if v["check"] == "driver-runtime")
    assert verdict["status"] == "warn" and "CUDA 10.1" in verdict["message"]
    assert env(text + "OS: Microsoft Windows 10 Pro\n")["status"]["driver-runtime"] == "unknown"
    assert env(text.replace("1.3.0", "1.3.0+cu92"))["status"]["driver-runtime"] == "pass"


@pytest.mark.parametrize(
    ("name", "capability"), [("GTX 3090", "8.6"), ("RTX3090", "8.6"), ("GTX1080Ti", "6.1")]
)
def test_capability_of_names_as_people_type_them(name: str, capability: str) -> None:
    assert envdata.capability_of(name) == capability


def test_triage_matches_the_error_quoted_short_in_a_title(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KBGEN_BASE", raising=False)
    text = 'GPU version of minimal example for libtorch fails with "no kernel image is available..."\n'
    result = invoke("--kb", str(REPO), "triage", "--json", "-", input=text)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["matches"][0]["error"] == "cuda-no-kernel-image"


def test_a_warning_alone_does_not_outrank_the_errors_own_causes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A CPU-only build beside a shape error is worth naming, after what the error itself says."""
    monkeypatch.delenv("KBGEN_BASE", raising=False)
    text = (
        "RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x512 and 256x10)\n"
        "pytorch                   1.11.0              py3.8_cpu_0    pytorch\n"
    )
    result = invoke("--kb", str(REPO), "triage", "--json", "-", input=text)
    assert result.exit_code == 0, result.output
    top = json.loads(result.stdout)["matches"][0]
    causes = [(c["cause"], c["verdict"]) for c in top["causes"]]
    assert top["error"] == "shape-mismatch"
    assert causes[-1] == ("cpu-only-torch-build", "warn") and causes[0][1] is None


# --------------------------------------------------------------------------- builds and forms


def test_cpp_extensions_cuda_mismatch_names_both_sides_even_wrapped(monkeypatch: pytest.MonkeyPatch) -> None:
    data = env(
        "      RuntimeError:\n"
        "      The detected CUDA version (12.2) mismatches the version that was used to compile\n"
        "      PyTorch (11.3). Please make sure to use the same CUDA versions.\n"
    )
    assert (data["facts"]["toolkit.nvcc"], data["facts"]["torch-build.cuda"]) == ("12.2", "11.3")
    assert data["status"]["toolkit-runtime"] == "warn"
    # triage ranks the toolkit first: the library mismatch the error type also lists comes later
    monkeypatch.delenv("KBGEN_BASE", raising=False)
    text = (
        "The detected CUDA version (12.1) mismatches the version that was used to compile PyTorch (11.8).\n"
    )
    result = invoke("--kb", str(REPO), "triage", "--json", "-", input=text)
    assert result.exit_code == 0, result.output
    top = json.loads(result.stdout)["matches"][0]
    assert top["error"] == "extension-build-failed"
    assert top["causes"][0]["cause"] == "cuda-toolkit-missing-or-mismatched"


def test_nvcc_refusing_gcc_indicts_the_host_compiler(monkeypatch: pytest.MonkeyPatch) -> None:
    line = (
        "/usr/include/cuda/crt/host_config.h:139:2: error: #error -- unsupported GNU version! "
        "gcc versions later than 10 are not supported!\n"
    )
    data = env(line)
    assert data["status"]["host-compiler"] == "fail"
    assert env(COLLECT_ENV_SHORT)["status"]["host-compiler"] == "unknown"  # no word on it: no guess
    monkeypatch.delenv("KBGEN_BASE", raising=False)
    result = invoke("--kb", str(REPO), "triage", "--json", "-", input=line)
    assert result.exit_code == 0, result.output
    top = json.loads(result.stdout)["matches"][0]
    assert top["causes"][0]["cause"] == "host-compiler-unsupported-by-nvcc"
    assert top["causes"][0]["verdict"] == "fail"


COLLECT_ENV_SHORT = "PyTorch version: 2.4.0+cu121\nCUDA used to build PyTorch: 12.1\n"


def test_torch_build_config_gives_its_cuda_and_arch_list() -> None:
    facts = env(
        "PyTorch compiling details: PyTorch built with:\n"
        "  - GCC 7.3\n"
        "  - CUDA Runtime 10.2\n"
        "  - NVCC architecture flags: -gencode;arch=compute_37,code=sm_37;"
        "-gencode;arch=compute_50,code=sm_50;-gencode;arch=compute_75,code=sm_75;-gencode;arch=compute_37,code=compute_37\n"
        "NVCC: Cuda compilation tools, release 10.1, V10.1.243\n"
    )["facts"]
    assert facts["torch-build.cuda"] == "10.2"
    assert facts["torch-build.arch_list"] == "sm_37 sm_50 sm_75 compute_37"
    assert facts["toolkit.nvcc"] == "10.1"


def test_detectron2_table_names_its_cuda_compiler() -> None:
    facts = env("Compiler                GCC 7.5\nCUDA compiler           CUDA 10.1\n")["facts"]
    assert facts["toolkit.nvcc"] == "10.1"


def test_issue_form_headings_and_their_answers() -> None:
    facts = env(
        "### NVIDIA Open GPU Kernel Modules Version\n\n570.158.01\n\n"
        "### Operating System and Version\n\nRocky 9.6\n\n"
        "### Hardware: GPU\n\nRTX 6000 Ada Gen, RTX 4500 Ada Gen\n\n"
        "### Python version\n\n_No response_\n"
    )["facts"]
    assert facts["gpu.driver"] == "570.158.01"
    assert facts["system.os"] == "Rocky 9.6"
    assert facts["gpu.name"] == "RTX 6000 Ada Gen"  # the first of those listed
    assert "system.python" not in facts
    two = env("### NVIDIA Open GPU Kernel Modules Version\n\n570.158.01, 575.57.08\n")["facts"]
    assert "gpu.driver" not in two  # which of the two ran the failure is not said


def test_chinese_labels_and_full_width_colons() -> None:
    facts = env("Python版本：3.10.11\nPyTorch 版本：2.1.2\n")["facts"]
    assert facts["system.python"] == "3.10.11"
    assert facts["torch-build.version"] == "2.1.2"


def test_is_available_printed_below_torchs_warning() -> None:
    facts = env(
        'CUDA_VISIBLE_DEVICES= python -c "import torch; print(torch.cuda.is_available())"\n\n'
        "/x/torch/cuda/__init__.py:52: UserWarning: CUDA initialization: The NVIDIA driver on your "
        "system is too old (found version 10010).\n"
        "  return torch._C._cuda_getDeviceCount() > 0\n"
        "False\n"
    )["facts"]
    assert facts["torch-build.cuda_available"] is False


def test_a_driver_of_two_versions_indicts_the_broken_driver_not_an_old_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for line in (
        "Failed to initialize NVML: Driver/library version mismatch\n",
        "UserWarning: CUDA initialization: Unexpected error from cudaGetDeviceCount(). Error 803: system has "
        "unsupported display driver / cuda driver combination\n",
    ):
        data = env(line)
        assert data["status"]["driver-runtime"] == "fail"
        monkeypatch.delenv("KBGEN_BASE", raising=False)
        result = invoke("--kb", str(REPO), "triage", "--json", "-", input=line)
        assert result.exit_code == 0, result.output
        top = json.loads(result.stdout)["matches"][0]
        assert (top["error"], top["causes"][0]["cause"]) == (
            "cuda-driver-too-old",
            "driver-missing-or-broken",
        )


def test_msvc_refused_by_nvcc_and_cudnns_older_mismatch_wording() -> None:
    msvc = (
        "host_config.h(153): fatal error C1189: #error:  -- unsupported Microsoft Visual Studio version! "
        "Only the versions between 2017 and 2022 (inclusive) are supported!\n"
    )
    assert env(msvc)["status"]["host-compiler"] == "fail"
    cudnn = (
        "RuntimeError: cuDNN version mismatch: PyTorch was compiled against 7102 but linked against 7600\n"
    )
    assert env(cudnn)["facts"]["torch-build.cudnn_mismatch"] is True


def test_versions_as_scripts_and_banners_print_them() -> None:
    facts = env(
        "    torch.__version__  = 1.5.1\n"
        "Python 3.8.12 | packaged by conda-forge | (default, Jan 30 2022, 23:42:07)\n"
        "-     Driver Version: 570.144\n"
    )["facts"]
    assert (facts["torch-build.version"], facts["system.python"], facts["gpu.driver"]) == (
        "1.5.1",
        "3.8.12",
        "570.144",
    )
    assert env("torch.__version__: '2.0.1+cu118'\n")["facts"]["torch-build.cuda"] == "11.8"
    assert env("My driver version is 470.141.03 with CUDA 11.7.\n")["facts"]["gpu.driver"] == "470.141.03"
    assert env("conda create -n env python=3.10.12\n")["facts"]["system.python"] == "3.10.12"


def test_ultralytics_and_lightning_environment_lines() -> None:
    facts = env(
        "Ultralytics 8.3.95 \U0001f680 Python-3.10.12 torch-2.6.0+cu124 "
        "CUDA:0 (NVIDIA GeForce RTX 5090, 32120MiB)\n"
    )["facts"]
    assert (facts["system.python"], facts["torch-build.version"]) == ("3.10.12", "2.6.0+cu124")
    assert (facts["gpu.name"], facts["gpu.capability"]) == ("NVIDIA GeForce RTX 5090", "12.0")
    facts = env(
        "* CUDA:\n\t- GPU:\n\t\t- Quadro RTX 5000\n\t- available:         True\n\t- version:           11.7\n"
        "* Lightning:\n\t- torch:             1.13.1\n"
    )["facts"]
    assert facts["gpu.name"] == "Quadro RTX 5000" and facts["torch-build.cuda_available"] is True
    assert (facts["torch-build.cuda"], facts["torch-build.version"]) == ("11.7", "1.13.1")
    # outside Lightning's CUDA block a "- version:" line is anything's version
    assert "torch-build.cuda" not in env("* Packages:\n\t- numpy:\n\t- version:  1.24\n")["facts"]


def test_gpus_and_distributions_named_in_prose() -> None:
    facts = env(
        "GPU: GTX 1080Ti and RT 2080Ti\nUbuntu version: 16.04.3 LTS (GNU/Linux 4.15.0-76-generic x86_64)\n"
    )["facts"]
    assert (facts["gpu.name"], facts["system.os"]) == ("GTX 1080Ti", "Ubuntu 16.04.3 LTS")
    named = env("My device is Tesla V100-SXM2-32GB with CUDA=12.2.\n")["facts"]
    assert (named["gpu.name"], named["gpu.capability"]) == ("Tesla V100-SXM2-32GB", "7.0")
    said = env("now `torch.cuda.is_available()` is returning False\n")["facts"]
    assert said["torch-build.cuda_available"] is False
