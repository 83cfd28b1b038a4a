"""`kbgen run --file-bug` on a run that dies with a Python traceback: the bug keeps the traceback,
not only its last line, and the CPU form of an out-of-range index or label (what a rerun on the
CPU shows for a device-side assert) is named and leads to the same cause and fix."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import kbgen

pytestmark = pytest.mark.usefixtures("base_layer")

# A training step whose embedding gets a token id past its table, as torch raises it on the CPU
# (the message comes from C++, so no source line in the traceback shows it).
EMBEDDING = """
TORCH_SAYS = "index out of range in self"
def embed(ids):
    raise IndexError(TORCH_SAYS)

def forward(batch):
    return embed(batch["ids"])

forward({"ids": [3, 12]})
"""

# The loss gets a label past the class count twenty calls below the training loop: a traceback
# longer than the lines triage keeps before an error (distinct functions: Python folds repeats).
DEEP_LOSS = "\n".join(
    [
        'TORCH_SAYS = "Target 7 is out of bounds."',
        "def layer0():",
        "    raise IndexError(TORCH_SAYS)",
        *(f"def layer{n}():\n    return layer{n - 1}()" for n in range(1, 21)),
        "layer20()",
    ]
)

# An error no error type knows, printed as Python prints it.
# An error no type knows, and no plain error of the program either (that one files no bug)
UNKNOWN = """
def load_config(path):
    raise RuntimeError(f"fused optimizer state has no slot: {path}")

load_config("optim.lr")
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    result = kbgen("init", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    return tmp_path


def filed_bug(project: Path, script: str) -> tuple[str, dict[str, object]]:
    (project / "train.py").write_text(script, encoding="utf-8")
    result = kbgen("run", "--file-bug", "--", sys.executable, "train.py", cwd=project)
    assert result.returncode == 1, result.stderr
    bugs = sorted((project / "kb" / "bugs").glob("BUG-*.md"))
    assert len(bugs) == 1, result.stderr
    shown = kbgen("show", bugs[0].name[:16], "--json", cwd=project)
    assert shown.returncode == 0, shown.stderr
    return result.stderr, json.loads(shown.stdout)


def test_a_cpu_index_error_is_named_and_its_traceback_kept(project: Path) -> None:
    err, bug = filed_bug(project, EMBEDDING)
    assert "kbgen: looks like cpu-index-out-of-range" in err
    assert bug["error"] == "cpu-index-out-of-range"
    assert without_carets(bug["message"]) == [
        "Traceback (most recent call last):",
        f'  File "{project / "train.py"}", line 9, in <module>',
        '    forward({"ids": [3, 12]})',
        f'  File "{project / "train.py"}", line 7, in forward',
        '    return embed(batch["ids"])',
        f'  File "{project / "train.py"}", line 4, in embed',
        "    raise IndexError(TORCH_SAYS)",
        "IndexError: index out of range in self",
    ]
    assert bug["title"] == "CPU index out of range in train.py:4 (embed)"


def without_carets(message: str) -> list[str]:
    """The message's lines without the caret lines (``^^^^``) Python 3.11 and later add."""
    return [line for line in message.splitlines() if line.strip(" ^~")]


def test_it_leads_to_the_same_cause_and_fix_as_the_device_side_assert(project: Path) -> None:
    for line, error in [
        ("IndexError: Target -1 is out of bounds.", "cpu-index-out-of-range"),
        ("IndexError: index out of range in self", "cpu-index-out-of-range"),
        ("RuntimeError: CUDA error: device-side assert triggered", "cuda-device-side-assert"),
    ]:
        (project / "crash.log").write_text(line + "\n", encoding="utf-8")
        out = kbgen("triage", "crash.log", cwd=project).stdout
        assert f"1. {error} (score" in out, out
        assert "- out-of-range-labels-or-indices (high)" in out, out
        assert "fix validate-labels-and-indices:" in out, out


def test_a_traceback_deeper_than_the_context_keeps_its_innermost_frames(project: Path) -> None:
    _err, bug = filed_bug(project, DEEP_LOSS)
    assert bug["error"] == "cpu-index-out-of-range"
    lines = str(bug["message"]).splitlines()
    assert lines[-1] == "IndexError: Target 7 is out of bounds."
    innermost = [f'  File "{project / "train.py"}", line 3, in layer0', "    raise IndexError(TORCH_SAYS)"]
    assert lines[-3:-1] == innermost
    assert sum(line.startswith(f'  File "{project / "train.py"}"') for line in lines) >= 10  # of 21


def test_an_unknown_error_keeps_its_traceback_too(project: Path) -> None:
    err, bug = filed_bug(project, UNKNOWN)
    assert "kbgen: no known error type matches the output." in err
    assert bug["error"] is None
    assert without_carets(bug["message"]) == [
        "Traceback (most recent call last):",
        f'  File "{project / "train.py"}", line 5, in <module>',
        '    load_config("optim.lr")',
        f'  File "{project / "train.py"}", line 3, in load_config',
        '    raise RuntimeError(f"fused optimizer state has no slot: {path}")',
        "RuntimeError: fused optimizer state has no slot: optim.lr",
    ]
