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
    assert triage_json(tmp_path, monkeypatch, AUTOGRAD_AFTER_CTRL_C) == []
    found = triage_json(tmp_path, monkeypatch, CTRL_C_IN_AN_EXTENSION_BUILD)
    assert [m["error"] for m in found] == ["import-hang"]
