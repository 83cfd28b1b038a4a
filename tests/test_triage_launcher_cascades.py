"""Launcher and serving summaries in the shipped KB rank below the error that caused them.

torchrun's ChildFailedError box and vLLM's EngineDeadError only say that a process died. In a log
that also shows that process's error, `kbgen triage` ranks the real error first and marks the
summary ``consequence_of`` it; alone, the summary is still named. The logs are lines posted in
public threads, in the order posted: FlagOpen/FlagEmbedding#709 (a CUDA OOM, then torchrun's
agent), noonghunna/club-3090#58 (vLLM's front end first, then the engine core's OOM, the issue's
title). FlagEmbedding's excerpt ends where torchrun's traceback starts; its ChildFailedError box is
the one vision-CAIR/MiniGPT-4#237 posts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import invoke

pytestmark = pytest.mark.usefixtures("base_layer")

OOM_THEN_TORCHRUN = (
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 198.00 MiB. GPU 0 has a total "
    "capacity of 23.64 GiB of which 210.94 MiB is free. Including non-PyTorch memory, this process has "
    "22.93 GiB memory in use. Of the allocated memory 21.74 GiB is allocated by PyTorch, and 628.00 MiB "
    "is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for "
    "Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)\n"
    "  0%|                                                      | 0/25 [00:00<?, ?it/s]\n"
    "[2024-04-20 18:56:38,931] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: 1) "
    "local_rank: 0 (pid: 358104) of binary: /usr/bin/python3\n"
    "Traceback (most recent call last):\n"
    '  File "/home/b405/.local/bin/torchrun", line 8, in <module>\n'
    "    sys.exit(main())\n"
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
    "============================================================\n"
    "train.py FAILED\n"
    "------------------------------------------------------------\n"
    "Root Cause (first observed failure):\n"
    "[0]:\n"
    "  time      : 2023-05-19_16:39:58\n"
    "  rank      : 0 (local_rank: 0)\n"
    "  exitcode  : 1 (pid: 78970)\n"
    "  error_file: <N/A>\n"
    "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n"
    "============================================================\n"
)

ENGINE_DEAD_THEN_OOM = (
    "(APIServer pid=1) ERROR 05-05 12:36:59 [serving.py:1173] vllm.v1.engine.exceptions.EngineDeadError:"
    " EngineCore encountered an issue. See stack trace (above) for the root cause.\n"
    "(EngineCore pid=104) Process EngineCore:\n"
    "(EngineCore pid=104) Traceback (most recent call last):\n"
    '(EngineCore pid=104)   File "/usr/lib/python3.12/multiprocessing/process.py", line 314, in _bootstrap\n'
    "(EngineCore pid=104)     self.run()\n"
    '(EngineCore pid=104)   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", line '
    "1140, in run_engine_core\n"
    "(EngineCore pid=104)     raise e\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 50.00 MiB. GPU 0 has a total capacity "
    "of 23.56 GiB of which 56.88 MiB is free\n"
)


def triage(tmp_path: Path, text: str) -> list[dict[str, object]]:
    log = tmp_path / "run.log"
    log.write_text(text, encoding="utf-8")
    result = invoke("triage", "--json", str(log))
    assert result.exit_code == 0, result.stderr
    matches: list[dict[str, object]] = json.loads(result.stdout)["matches"]
    return matches


@pytest.mark.parametrize(
    ("text", "summary"),
    [(OOM_THEN_TORCHRUN, "torchrun-child-failed"), (ENGINE_DEAD_THEN_OOM, "serving-engine-died")],
    ids=["oom-then-torchrun", "engine-dead-then-oom"],
)
def test_the_real_error_ranks_first_and_the_summary_is_its_consequence(
    kb_project: Path, tmp_path: Path, text: str, summary: str
) -> None:
    matches = triage(tmp_path, text)
    by_id = {m["error"]: m for m in matches}
    assert matches[0]["error"] == "cuda-out-of-memory"
    assert matches[0]["consequence_of"] is None
    assert by_id[summary]["consequence_of"] == "cuda-out-of-memory"
    assert float(str(by_id[summary]["score"])) < float(str(matches[0]["score"]))


def test_the_summary_alone_is_still_named(kb_project: Path, tmp_path: Path) -> None:
    box = OOM_THEN_TORCHRUN[OOM_THEN_TORCHRUN.index("[2024-04-20") :]
    matches = triage(tmp_path, box)
    assert [m["error"] for m in matches] == ["torchrun-child-failed"]
    assert matches[0]["consequence_of"] is None


def test_the_text_output_says_which_error_caused_the_summary(kb_project: Path, tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(ENGINE_DEAD_THEN_OOM, encoding="utf-8")
    result = invoke("triage", str(log))
    assert result.exit_code == 0, result.stderr
    first = result.stdout.index("cuda-out-of-memory")
    assert first < result.stdout.index("serving-engine-died")
