"""Shared helpers and fixtures: run kbgen as a user does (in-process or as its own process),
write a tree of files, and a small valid KB to run commands against."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from kbgen.cli import cli
from probes_fixtures import probe_file

#: The error types the shipped KB must cover; links and tools rely on these ids.
#: (Which of them the labelled log sets were gathered for: GATHERED_FOR in test_triage_accuracy.py.)
FIRST_ERROR_IDS = frozenset(
    {
        "cuda-illegal-memory-access",
        "cuda-illegal-instruction",
        "cpu-illegal-instruction",
        "cuda-out-of-memory",
        "cuda-device-side-assert",
        "cuda-no-kernel-image",
        "cuda-driver-too-old",
        "cuda-not-available",
        "cublas-error",
        "cudnn-error",
        "nccl-error",
        "cuda-launch-failure",
        "device-mismatch",
        "dataloader-worker-died",
        "cuda-invalid-device-ordinal",
        "cuda-misaligned-address",
        "gpu-ecc-error",
        "cuda-device-busy",
        "import-hang",
        "cpu-index-out-of-range",
        "extension-build-failed",
        "cuda-library-load-failed",
        "native-crash",
        "host-oom-killed",
        "cuda-unknown-error",
        "cuda-forked-subprocess",
        "cuda-invalid-argument",
        "cuda-operation-not-supported",
        "autograd-inplace-modification",
        "checkpoint-load-failed",
        "index-32bit-overflow",
        "shape-mismatch",
        "dtype-mismatch",
        "non-finite-loss",
        "gradscaler-error",
    }
)
#: every error type the shipped KB must have: complete, ranked, with real lines and wordings
REQUIRED_ERROR_IDS = FIRST_ERROR_IDS | frozenset(
    {
        "process-group-not-initialized",
        "distributed-rendezvous-failed",
        "torchrun-child-failed",
        "torch-compile-failed",
        "triton-compile-failed",
        "serving-engine-died",
    }
)

ERROR_IMA = """\
---
id: cuda-illegal-memory-access
title: CUDA illegal memory access
summary: A kernel read or wrote memory it does not own.
signatures:
  - regex: "an illegal memory access was encountered"
    weight: 3
symptoms:
  - Later CUDA calls fail too.
causes:
  - cause: out-of-range-index
    likelihood: high
diagnostics:
  - id: check-gpu
    title: GPU is visible and works
    probe: gpu
related: []
---
Explanation for people.
"""

CAUSE = """\
---
id: out-of-range-index
title: Index or label out of range
summary: A gather or loss kernel was handed an index past the end of a tensor.
evidence:
  - Running on CPU raises IndexError with the offending value.
fixes:
  - clamp-labels
---
"""

FIX = """\
---
id: clamp-labels
title: Check labels before the loss
summary: Assert that every label is in range on the CPU before it reaches the GPU.
steps:
  - title: Check the range
    command: python -c "print('check')"
risk: low
verify_probe: gpu
---
"""

BUG = """\
---
id: BUG-20251109-002
title: Illegal memory access in BCE loss
created: 2025-11-09T23:04:00+09:00
updated: 2025-11-09T23:04:00+09:00
status: open  # set by a person
severity: high
error: cuda-illegal-memory-access
suspected_causes: [out-of-range-index]
tags: [loss]
---
## What happened

Training died in the loss.
"""


def invoke(*args: str, input: str | None = None, **env: str) -> Result:
    """``kbgen ARGS`` through click's CliRunner, with ``env`` set for the call. A Python exception
    other than click's exit fails the test: a user must get an error message, never a traceback."""
    result = CliRunner().invoke(cli, list(args), input=input, env=env or None)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def run(*args: str, input: str | None = None, **env: str) -> tuple[int, str]:
    """``invoke`` cut down to what a user sees: the exit code and everything printed."""
    result = invoke(*args, input=input, **env)
    return result.exit_code, result.output


#: the command line that starts this checkout's kbgen, for a test that needs Popen or a terminal
KBGEN = [sys.executable, "-m", "kbgen"]

#: seconds a process test waits for an event (a file renamed into place, a line on a pipe, an
#: exit) before it fails. Tests wait on the event itself, so a passing test never waits this long;
#: the bound is only how long a broken run takes to fail, and it is set for a shared runner at a
#: load of 8 on 2 cores, where starting Python and importing torch take many times longer.
PATIENCE = 300.0


def kbgen(
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = PATIENCE,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """``kbgen ARGS`` in a process of its own, as a user runs it: stdin is not a terminal (or is
    ``input``), ``env`` is added to this process's environment, and a hang fails the one test."""
    return subprocess.run(
        [*KBGEN, *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        input=input,
        stdin=subprocess.DEVNULL if input is None else None,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def edit(root: Path, rel: str, old: str, new: str) -> None:
    """Replace ``old`` (which must be there) by ``new`` in the file ``rel`` under ``root``."""
    path = root / rel
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def write_tree(root: Path, files: Mapping[str, str | bytes]) -> Path:
    """Write ``{relative path: text or bytes}`` under ``root`` (text dedented, UTF-8); returns ``root``."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_bytes(textwrap.dedent(content).encode("utf-8"))
    return root


#: the fixture KB's one bug (``BUG`` above), in kb/bugs/BUG_ID.md
BUG_ID = "BUG-20251109-002"


def bug_path(root: Path) -> Path:
    return root / "kb" / "bugs" / f"{BUG_ID}.md"


def frontmatter(root: Path) -> dict:
    """The fixture bug's frontmatter as plain YAML data (what a person reading the file sees)."""
    return yaml.safe_load(bug_path(root).read_text().split("---\n")[1])


def add_keys(root: Path, extra: str) -> None:
    """Add frontmatter lines to the fixture bug (before its closing ---)."""
    path = bug_path(root)
    head, body = path.read_text().split("\n---\n", 1)
    path.write_text(head + "\n" + extra.strip("\n") + "\n---\n" + body)


def add_probe(root: Path, probe_id: str, body: str, **meta: Any) -> None:
    """A project probe ``kb/probes/PROBE_ID.py`` whose ``run()`` has ``body``."""
    (root / "kb" / "probes" / f"{probe_id}.py").write_text(probe_file(probe_id, body, **meta))


def base_kb_files() -> dict[str, str | bytes]:
    return {
        "kb/errors/cuda-illegal-memory-access.md": ERROR_IMA,
        "kb/causes/out-of-range-index.md": CAUSE,
        "kb/fixes/clamp-labels.md": FIX,
        "kb/bugs/BUG-20251109-002.md": BUG,
        "kb/probes/.keep": "",
    }


@pytest.fixture
def make_tree(tmp_path: Path) -> Callable[[dict[str, str | bytes]], Path]:
    def make(files: dict[str, str | bytes]) -> Path:
        return write_tree(tmp_path, files)

    return make


@pytest.fixture
def kb_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A small valid project in tmp_path, made the cwd, with the clock and host pinned."""
    write_tree(tmp_path, base_kb_files())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KBGEN_NOW", "2025-11-21T10:00:00+00:00")
    monkeypatch.setenv("KBGEN_HOSTNAME", "testhost")
    monkeypatch.setenv("KBGEN_USER", "tester")
    monkeypatch.delenv("KBGEN_KB", raising=False)
    return tmp_path


@pytest.fixture(autouse=True)
def _no_user_kb(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's own $KBGEN_KB must not leak into the tests. The fixture KBs stand alone:
    the base layer shipped in the package is off unless a test asks for it (``base_layer``)."""
    if "KBGEN_KB" in os.environ:
        monkeypatch.delenv("KBGEN_KB")
    monkeypatch.setenv("KBGEN_BASE", "off")


@pytest.fixture
def base_layer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Read the knowledge shipped in the package under the project's kb/, as users get it."""
    monkeypatch.delenv("KBGEN_BASE", raising=False)


def pytest_configure(config: pytest.Config) -> None:
    """Give the processes the tests start Ctrl-C's default meaning. A shell without job control
    starts a background job (``make test &`` in a script) with SIGINT ignored, every program it
    runs inherits that, and kbgen rightly keeps a signal its caller ignores (as under nohup):
    the tests that stop kbgen with SIGINT would then test the launcher, not kbgen."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite the expected files in tests/golden/ from the current output instead of comparing",
    )
