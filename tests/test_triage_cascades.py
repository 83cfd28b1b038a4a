"""Cascades in the shipped KB: a first error that causes others ranks first, and the others are
marked as its consequences in `kbgen triage --json` and in the text output.

The logs are written for this test in the shapes PyTorch, cuBLAS and NCCL print; which error
type causes which comes from the ``secondary_to`` lists of kb/errors/ and the order in the log.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import invoke

REPO = Path(__file__).resolve().parent.parent
#: these tests read the knowledge shipped in the package
pytestmark = pytest.mark.usefixtures("base_layer")

DEVICE_ASSERT_THEN_CUBLAS = (
    "epoch 0 step 118 loss 2.31\n"
    "/pytorch/aten/src/ATen/native/cuda/Loss.cu:240: nll_loss_forward_reduce_cuda_kernel_2d: bl"
    "ock: [0,0,0], thread: [5,0,0] Assertion `t >= 0 && t < n_classes` failed.\n"
    "Traceback (most recent call last):\n"
    '  File "train.py", line 40, in <module>\n'
    "    loss.backward()\n"
    "RuntimeError: CUDA error: device-side assert triggered\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktr"
    "ace below might be incorrect.\n"
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1.\n"
    "\n"
    "evaluating on the validation set after the failed step\n"
    "Traceback (most recent call last):\n"
    '  File "eval.py", line 12, in <module>\n'
    "    out = model(x)\n"
    "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle"
    ", opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`\n"
    "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle"
    ", opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`\n"
    "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle"
    ", opa, opb, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc)`\n"
)

OOM_THEN_NCCL_WATCHDOG = (
    "[rank0]: Traceback (most recent call last):\n"
    '[rank0]:   File "/workspace/train.py", line 211, in <module>\n'
    "[rank0]:     loss = model(batch).loss\n"
    "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has"
    " a total capacity of 79.10 GiB of which 1.06 GiB is free. Of the allocated memory 74.20 Gi"
    "B is allocated by PyTorch, and 2.31 GiB is reserved by PyTorch but unallocated. If reserve"
    "d but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:"
    "True to avoid fragmentation.\n"
    "[rank1]:[E1123 08:10:02.118000 412 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught coll"
    "ective operation timeout: WorkNCCL(SeqNum=5120, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, T"
    "imeout(ms)=600000) ran for 600017 milliseconds before timing out.\n"
    "[rank2]:[E1123 08:10:02.120000 413 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught coll"
    "ective operation timeout: WorkNCCL(SeqNum=5120, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, T"
    "imeout(ms)=600000) ran for 600019 milliseconds before timing out.\n"
    "[rank3]:[E1123 08:10:02.121000 414 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught coll"
    "ective operation timeout: WorkNCCL(SeqNum=5120, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, T"
    "imeout(ms)=600000) ran for 600020 milliseconds before timing out.\n"
    "[rank1]:[E1123 08:10:02.300000 412 ProcessGroupNCCL.cpp:1834] [PG ID 0 PG GUID 0(default_p"
    "g) Rank 1] Exception (either an error or timeout) detected by watchdog at work: 5120, last"
    " enqueued NCCL work: 5120, last completed NCCL work: 5119.\n"
    "[rank2]:[E1123 08:10:02.301000 413 ProcessGroupNCCL.cpp:1834] [PG ID 0 PG GUID 0(default_p"
    "g) Rank 2] Exception (either an error or timeout) detected by watchdog at work: 5120, last"
    " enqueued NCCL work: 5120, last completed NCCL work: 5119.\n"
)

ECC_THEN_NCCL = (
    "step 9000 loss 1.02\n"
    "Traceback (most recent call last):\n"
    '  File "train.py", line 88, in <module>\n'
    "    optimizer.step()\n"
    "RuntimeError: CUDA error: uncorrectable ECC error encountered\n"
    "Search for `cudaErrorECCUncorrectable' in https://docs.nvidia.com/cuda/cuda-runtime-api/gr"
    "oup__CUDART__TYPES.html for more information.\n"
    "[rank2]: Traceback (most recent call last):\n"
    '[rank2]:   File "train.py", line 90, in <module>\n'
    "[rank2]:     dist.all_reduce(grad)\n"
    "[rank2]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d"
    "/ProcessGroupNCCL.cpp:1970, unhandled cuda error (run with NCCL_DEBUG=INFO for details), N"
    "CCL version 2.21.5\n"
    "[rank2]: ncclUnhandledCudaError: Call to CUDA function failed.\n"
)


@pytest.mark.parametrize(
    ("log", "cause", "consequence"),
    [
        (DEVICE_ASSERT_THEN_CUBLAS, "cuda-device-side-assert", "cublas-error"),
        (OOM_THEN_NCCL_WATCHDOG, "cuda-out-of-memory", "nccl-error"),
        (ECC_THEN_NCCL, "gpu-ecc-error", "nccl-error"),
    ],
)
def test_the_first_cause_ranks_first_and_consequences_are_marked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, log: str, cause: str, consequence: str
) -> None:
    monkeypatch.chdir(REPO)
    path = tmp_path / "train.log"
    path.write_text(log, encoding="utf-8")
    result = invoke("triage", "--json", str(path))
    assert result.exit_code == 0, result.output
    found = {m["error"]: m for m in json.loads(result.stdout)["matches"]}
    first = json.loads(result.stdout)["matches"][0]
    assert (first["error"], first["consequence_of"]) == (cause, None)
    assert found[consequence]["consequence_of"] == cause
    assert found[consequence]["first_line"] > first["first_line"]
    text = invoke("triage", "--top", "10", str(path))
    assert text.exit_code == 0, text.output
    assert f"1. {cause} (score" in text.stdout
    block = text.stdout[text.stdout.index(f". {consequence} (score") :]
    assert block.splitlines()[1] == f"   likely a consequence of {cause}, which this log also shows"


def test_a_consequence_alone_is_not_marked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    path = tmp_path / "train.log"
    nccl = ECC_THEN_NCCL[ECC_THEN_NCCL.index("[rank2]: Traceback") :]
    path.write_text(nccl, encoding="utf-8")
    result = invoke("triage", "--json", str(path))
    assert result.exit_code == 0, result.output
    matches = json.loads(result.stdout)["matches"]
    assert [(m["error"], m["consequence_of"]) for m in matches] == [("nccl-error", None)]


def triage_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, log: str) -> list[dict[str, object]]:
    monkeypatch.chdir(REPO)
    path = tmp_path / "train.log"
    path.write_text(log, encoding="utf-8")
    result = invoke("triage", "--json", str(path))
    assert result.exit_code == 0, result.output
    matches: list[dict[str, object]] = json.loads(result.stdout)["matches"]
    return matches


def test_watchdog_timeouts_printed_before_the_failing_rank_are_still_its_consequence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a log gathered rank by rank: the ranks that waited come first, the rank that failed last
    oom = OOM_THEN_NCCL_WATCHDOG[: OOM_THEN_NCCL_WATCHDOG.index("[rank1]:[E1123")]
    watchdog = OOM_THEN_NCCL_WATCHDOG[len(oom) :]
    found = triage_json(tmp_path, monkeypatch, watchdog + oom)
    assert [(m["error"], m["consequence_of"]) for m in found] == [
        ("cuda-out-of-memory", None),
        ("nccl-error", "cuda-out-of-memory"),
    ]


def test_an_impossible_allocation_after_a_timeout_ranks_below_the_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a collective that timed out hands on garbage: the next allocation asks for exabytes
    watchdog = OOM_THEN_NCCL_WATCHDOG[OOM_THEN_NCCL_WATCHDOG.index("[rank1]:[E1123") :]
    garbage = (
        "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate more than 1EB memory.\n"
        "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 17179869184.00 GiB."
        " GPU 0 has a total capacity of 79.10 GiB of which 70.06 GiB is free.\n"
    )
    found = triage_json(tmp_path, monkeypatch, garbage + watchdog)
    assert [(m["error"], m["consequence_of"]) for m in found] == [
        ("nccl-error", None),
        ("cuda-out-of-memory", "nccl-error"),
    ]
    alone = triage_json(tmp_path, monkeypatch, garbage)
    assert [(m["error"], m["consequence_of"]) for m in alone] == [("cuda-out-of-memory", None)]


AUTOGRAD_AFTER_CTRL_C = (
    "KeyboardInterrupt\n"
    '  File "/usr/lib/python3.10/site-packages/torch/autograd/__init__.py", line 200, in backward\n'
    "RuntimeError: one of the variables needed for gradient computation has been modified by an"
    " inplace operation\n"
)

CTRL_C_IN_AN_EXTENSION_BUILD = (
    "^CTraceback (most recent call last):\n"
    '  File "/work/ext/__init__.py", line 9, in <module>\n'
    "    _backend = load(name='ext', sources=['ext.cu'])\n"
    '  File "/usr/lib/python3.10/site-packages/torch/utils/cpp_extension.py", line 2156, in _jit_compile\n'
    "    baton.wait()\n"
    "KeyboardInterrupt\n"
)


def test_a_stray_keyboard_interrupt_is_no_hang_but_a_stack_stuck_in_a_wait_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the autograd error itself is named; the KeyboardInterrupt above it makes no hang of it
    found = triage_json(tmp_path, monkeypatch, AUTOGRAD_AFTER_CTRL_C)
    assert [m["error"] for m in found] == ["autograd-inplace-modification"]
    found = triage_json(tmp_path, monkeypatch, CTRL_C_IN_AN_EXTENSION_BUILD)
    assert [m["error"] for m in found] == ["import-hang"]


EXTENSION_BUILD_START = (
    "loading configs from configs/train.yaml\n"
    "Using /home/u/.cache/torch_extensions/py310_cu121 as PyTorch extensions root...\n"
    "Using /home/u/.cache/torch_extensions/py310_cu121 as PyTorch extensions root...\n"
)


def test_a_log_that_stops_at_an_extension_build_step_is_a_hang_and_one_that_goes_on_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the ranks wait on a lock a killed build left behind: nothing follows the build's first line
    found = triage_json(tmp_path, monkeypatch, EXTENSION_BUILD_START + "\n")
    assert [m["error"] for m in found] == ["import-hang"]
    goes_on = (
        "Emitting ninja build file /home/u/.cache/torch_extensions/py310_cu121/fused/build.ninja...\n"
        "Building extension module fused...\n"
        "Loading extension module fused...\n"
        "epoch 0 step 10 loss 2.01\n"
    )
    assert triage_json(tmp_path, monkeypatch, EXTENSION_BUILD_START + goes_on) == []
    # a build that fails right after a build step is a build error, not a freeze
    no_cuda_home = (
        "Emitting ninja build file /home/u/.cache/torch_extensions/py310_cu121/fused/build.ninja...\n"
        "OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA install root.\n"
    )
    found = triage_json(tmp_path, monkeypatch, EXTENSION_BUILD_START + no_cuda_home)
    assert [m["error"] for m in found] == ["extension-build-failed"]


def test_a_tools_own_out_of_memory_hint_in_a_host_memory_failure_matches_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = (
        "Error: [enforce fail at alloc_cpu.cpp:83] . DefaultCPUAllocator: can't allocate memory: you"
        " tried to allocate 264896512 bytes. Error code 12 (Cannot allocate memory)\n"
        "If you encounter CUDA out of memory, try to set --tile with a smaller number.\n"
    )
    assert triage_json(tmp_path, monkeypatch, host) == []
    title = "Getting CUDA out of memory when fine-tuning with batch size 8\n"
    assert [m["error"] for m in triage_json(tmp_path, monkeypatch, title)] == ["cuda-out-of-memory"]


def test_a_sanitizer_illegal_instruction_is_a_gpu_fault_not_a_cpu_sigill(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = (
        "========= COMPUTE-SANITIZER\n"
        "========= Illegal instruction\n"
        "=========     at reduce_kernel(float *, int)+0x80 in reduce.cu:72\n"
        "=========     by thread (0,0,0) in block (0,0,0)\n"
    )
    assert [m["error"] for m in triage_json(tmp_path, monkeypatch, report)] == ["cuda-illegal-instruction"]
    shell = "./run.sh: line 3: 4242 Illegal instruction     python -c 'import torch'\n"
    assert [m["error"] for m in triage_json(tmp_path, monkeypatch, shell)] == ["cpu-illegal-instruction"]


def test_an_uncorrected_pcie_error_on_the_gpu_ranks_above_the_nccl_failure_it_causes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    aer = (
        "[ 812.4] nvidia 0000:3b:00.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction"
        " Layer, (Requester ID)\n"
        "[ 812.4] nvidia 0000:3b:00.0:   device [10de:20b0] error status/mask=00004000/00000000\n"
    )
    found = triage_json(tmp_path, monkeypatch, ECC_THEN_NCCL[ECC_THEN_NCCL.index("[rank2]") :] + aer)
    assert [(m["error"], m["consequence_of"]) for m in found] == [
        ("gpu-ecc-error", None),
        ("nccl-error", "gpu-ecc-error"),
    ]
    # corrected errors on a bridge are routine: no GPU fault
    corrected = (
        "pcieport 0000:00:03.0: AER: Corrected error received: 0000:00:03.0\n"
        "pcieport 0000:00:03.0: PCIe Bus Error: severity=Corrected, type=Data Link Layer, (Transmitter ID)\n"
        "pcieport 0000:00:03.0:   device [8086:6f08] error status/mask=00001000/00002000\n"
    )
    assert triage_json(tmp_path, monkeypatch, corrected) == []
