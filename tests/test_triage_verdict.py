"""What triage says beyond a match: "not a GPU failure" for a program's own error, the failure
and the nearest error types (as guesses) when nothing matches, and `kbgen new-error`, which
drafts an error type from a log so that the next triage names it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import run
from kbgen.errordraft import generalise, negative_lines
from kbgen.triage.pyerror import last_error
from kbgen.triage.signatures import compile_exact

REPO = Path(__file__).resolve().parent.parent

# A plain Python error in data code (the shape of the KeyError logs in the triage test sets):
# nothing in its message or in the installed code it ran through concerns the GPU.
KEY_ERROR = """\
[rank0]: Traceback (most recent call last):
[rank0]:   File "/home/ana/proj/train.py", line 88, in <module>
[rank0]:     batch = collate(items)
[rank0]:   File "/home/ana/proj/data/collate.py", line 12, in collate
[rank0]:     return {k: default_collate([d[k] for d in items]) for k in keys}
[rank0]:   File "/opt/venv/lib/python3.11/site-packages/torch/utils/data/_utils/collate.py", line 5, in f
[rank0]:     return batch[key]
[rank0]: KeyError: 'labels'
"""

# An unknown CUDA library error: no signature matches, and it is no user error.
UNKNOWN = """\
Traceback (most recent call last):
  File "/work/bench.py", line 9, in <module>
    y = fused(x)
  File "/usr/lib/python3/dist-packages/fancyops/kernels.py", line 40, in fused
    return _C.fused_forward(x)
RuntimeError: cuBLAS API failed with status 7 in fancyops gemm
"""

LINALG = """\
Epoch 3:  45%|####5     | 450/1000
Traceback (most recent call last):
  File "/home/ana/proj/train.py", line 88, in <module>
    L = torch.linalg.cholesky(cov)
torch._C._LinAlgError: linalg.cholesky: The factorization could not be completed because the \
input is not positive-definite (the leading minor of order 37 is not positive-definite).
"""

pytestmark = pytest.mark.usefixtures("base_layer")


def _triage_json(tmp_path: Path, text: str) -> dict:
    log = tmp_path / "run.log"
    log.write_text(text)
    code, out = run("--kb", str(REPO), "triage", "--json", str(log))
    assert code == 0, out
    return json.loads(out)


def test_a_plain_python_error_is_not_a_gpu_failure(tmp_path: Path) -> None:
    data = _triage_json(tmp_path, KEY_ERROR)
    assert data["matches"] == [] and data["verdict"] == "not-gpu"
    failure = data["failure"]
    assert (failure["exception"], failure["message"]) == ("KeyError", "'labels'")
    assert failure["user_frame"] == {
        "path": "~/proj/data/collate.py",  # redacted like every line triage prints
        "line": 12,
        "function": "collate",
        "package": None,
    }
    assert failure["library_frame"]["package"] == "torch"
    assert "guesses" not in data
    log = tmp_path / "run.log"
    code, out = run("--kb", str(REPO), "triage", str(log))
    assert code == 0
    assert out.startswith(f"Not a GPU failure: {log} (8 lines) ends with an error in the program itself.")
    assert "KeyError: 'labels'" in out and "your code: ~/proj/data/collate.py:12 in collate" in out
    assert "raised in torch:" in out and "new-error" not in out


def test_real_negative_logs_that_end_in_a_plain_error_are_not_gpu_failures() -> None:
    """The negatives of the triage sets that are plain errors (a pickling error, a missing
    module, a tokenizer that does not load) are named as such."""
    names = [
        "tests/data/logs-fresh2/neg-pickle-mutualnet-5-windows.log",
        "tests/data/logs-fresh/negative-tokenizer-kohya-colab-141.log",
        "tests/data/logs-fresh/negative-pickle-monet-9.log",
        "tests/data/logs-fresh2/neg-no-torch-dreamtalk.log",
    ]
    for name in names:
        path = next(REPO.glob(f"tests/data/*/{Path(name).name}"))
        code, out = run("--kb", str(REPO), "triage", "--json", str(path))
        data = json.loads(out)
        assert (code, data["verdict"], data["matches"]) == (0, "not-gpu", []), name


def test_a_gpu_error_no_type_knows_is_unknown_with_guesses_apart_from_matches(tmp_path: Path) -> None:
    data = _triage_json(tmp_path, UNKNOWN)
    assert data["matches"] == [] and data["verdict"] == "unknown"
    assert data["failure"]["library_frame"]["package"] == "fancyops"
    guesses = data["guesses"]
    assert guesses and guesses[0]["error"] == "cublas-error" and all(g["guess"] for g in guesses)
    assert "cublas" in guesses[0]["shared"]
    code, out = run("--kb", str(REPO), "triage", str(tmp_path / "run.log"))
    assert code == 0 and "No error type in the KB matches" in out
    assert "? cublas-error" in out and "no signature matched" in out
    assert "kbgen new-error --from-log" in out


def test_a_match_says_so(tmp_path: Path) -> None:
    data = _triage_json(tmp_path, "RuntimeError: CUDA error: an illegal memory access was encountered\n")
    assert data["verdict"] == "match" and data["matches"][0]["error"] == "cuda-illegal-memory-access"
    assert "failure" not in data and "guesses" not in data
    causes = data["matches"][0]["causes"]
    assert causes[0]["why"] == f"cuda-illegal-memory-access lists it as {causes[0]['likelihood']} likelihood"
    assert [c["likelihood"] for c in causes] == sorted((c["likelihood"] for c in causes), key=_ORDER.index)


_ORDER = ["high", "medium", "low"]


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A team repository as `kbgen init` leaves it, the cwd."""
    monkeypatch.chdir(tmp_path)
    code, out = run("init")
    assert code == 0, out
    (tmp_path / "crash.log").write_text(LINALG)
    return tmp_path


def test_new_error_drafts_a_type_that_triage_then_names(team: Path) -> None:
    code, out = run("new-error", "--from-log", "crash.log")
    assert code == 0, out
    draft = team / "kb/errors/linalg-cholesky-factorization-completed-input.md"
    assert f"wrote {draft.relative_to(team)}" in out and "now names it" in out
    text = draft.read_text()
    assert "leading minor of order [0-9]+(?:\\.[0-9]+)?" in text and "tags: [draft]" in text
    assert "## Causes" in text
    code, out = run("triage", "--json", "crash.log")
    assert json.loads(out)["matches"][0]["error"] == "linalg-cholesky-factorization-completed-input"
    # the same order of a minor, another size: a rerun that changes the number still matches
    (team / "again.log").write_text(LINALG.replace("order 37", "order 912"))
    assert json.loads(run("triage", "--json", "again.log")[1])["verdict"] == "match"
    code, out = run("validate")
    assert code == 0 and "no problems" in out
    # a second draft of the same log: triage names it now, and the id is taken
    code, out = run("new-error", "--from-log", "crash.log")
    assert code == 1 and "kbgen names this error already: linalg-cholesky" in out


def test_new_error_dry_run_and_json_and_id(team: Path) -> None:
    code, out = run("new-error", "--from-log", "crash.log", "--dry-run")
    assert code == 0 and out.startswith("---\nid: linalg-cholesky") and not (team / "kb/errors").exists()
    code, out = run("new-error", "--from-log", "crash.log", "--id", "cholesky-not-pd", "--json")
    data = json.loads(out)
    assert (code, data["id"], data["file"], data["written"]) == (
        0,
        "cholesky-not-pd",
        "kb/errors/cholesky-not-pd.md",
        True,
    )
    assert compile_exact(data["regex"]).search(data["line"])
    code, out = run("new-error", "--from-log", "crash.log", "--id", "Not An Id", "--anyway")
    assert code == 1 and "no valid id" in out


def test_new_error_refuses_a_signature_as_generic_as_a_negative_line(team: Path) -> None:
    (team / "tok.log").write_text(
        "OSError: Can't load tokenizer for 'runwayml/stable-diffusion-v1-5'. If you were trying to load "
        "it from 'https://huggingface.co/models', make sure you don't have a local directory with the "
        "same name.\n"
    )
    code, out = run("new-error", "--from-log", "tok.log")
    assert code == 1 and "too generic" in out and "no GPU failure" in out
    assert not (team / "kb/errors").exists()


def test_new_error_without_an_error_line(team: Path) -> None:
    (team / "quiet.log").write_text("epoch 1 loss 0.3\nepoch 2 loss 0.2\n")
    code, out = run("new-error", "--from-log", "quiet.log")
    assert code == 1 and "no error line" in out


def test_new_error_never_writes_through_a_link(team: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (team / "kb/errors").symlink_to(elsewhere, target_is_directory=True)
    code, out = run("new-error", "--from-log", "crash.log")
    assert code == 1 and "kb/errors" in out and "link" in out
    assert list(elsewhere.iterdir()) == []


def test_the_shipped_negative_lines_are_current() -> None:
    """knowledge/data/negative-lines.json holds the lines of every negative log of the test sets."""
    script = REPO / "scripts/refresh_negative_lines.py"
    done = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True, env=os.environ
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(negative_lines()) > 200


_LINE = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=300)


@settings(max_examples=300, deadline=None)
@given(_LINE)
def test_a_generalised_line_always_matches_itself(line: str) -> None:
    assert compile_exact(generalise(line)).search(line)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.one_of(_LINE, st.sampled_from(KEY_ERROR.splitlines() + UNKNOWN.splitlines())), max_size=40)
)
def test_reading_the_last_exception_never_fails(lines: list[str]) -> None:
    found = last_error("\n".join(lines))
    if found is not None:
        assert found.name and found.exception.endswith(found.name)


def test_run_names_a_plain_error_and_files_no_bug(team: Path) -> None:
    from conftest import kbgen

    code = "def load(d):\n    return d['labels']\nload({})\n"
    done = kbgen("run", "--file-bug", "--", sys.executable, "-c", code, cwd=team)
    assert done.returncode == 1, done.stderr
    assert "kbgen: not a GPU failure: KeyError: 'labels' (your code: <string>:2 in load)" in done.stderr
    assert "no bug filed" in done.stderr
    assert list((team / "kb" / "bugs").glob("BUG-*")) == []


def test_a_missing_compiled_ops_module_is_no_user_error(tmp_path: Path) -> None:
    """mmcv._ext and detectron2._C are the GPU builds of a package: their absence is a build problem."""
    for line in (
        "ModuleNotFoundError: No module named 'mmcv._ext'",
        "ImportError: cannot import name '_C' from 'detectron2'",
    ):
        assert _triage_json(tmp_path, line + "\n")["verdict"] != "not-gpu", line
    assert _triage_json(tmp_path, "ModuleNotFoundError: No module named 'cv2'\n")["verdict"] == "not-gpu"
