"""`kbgen triage` as a user meets it: real log noise, ranking, bad input, hostile patterns."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from conftest import CAUSE, ERROR_IMA, FIX, invoke, kbgen

MakeTree = Callable[[dict[str, str | bytes]], Path]

CUBLAS = """\
---
id: cublas-error
title: cuBLAS call failed
summary: A cuBLAS routine returned an error status.
signatures:
  - regex: 'CUBLAS_STATUS_[A-Z_]+'
    weight: 4
secondary_to: [cuda-illegal-memory-access]
---
"""

OOM = """\
---
id: cuda-out-of-memory
title: CUDA out of memory
summary: The caching allocator could not find room.
signatures:
  - regex: 'CUDA out of memory\\. Tried to allocate'
    weight: 5
---
"""

CUDNN = """\
---
id: cudnn-error
title: cuDNN call failed
summary: A cuDNN routine returned an error status.
signatures:
  - regex: 'cuDNN error: CUDNN_STATUS_\\w+'
    weight: 6
secondary_to: [cuda-out-of-memory]
---
"""

NOT_AVAILABLE = """\
---
id: cuda-not-available
title: CUDA not available
summary: torch cannot use a GPU.
signatures:
  - regex: 'CUDA initialization: '
    weight: 1
---
"""

IMA_LINE = "RuntimeError: CUDA error: an illegal memory access was encountered"


@pytest.fixture
def project(make_tree: MakeTree, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = make_tree(
        {
            "kb/errors/cuda-illegal-memory-access.md": ERROR_IMA,
            "kb/errors/cublas-error.md": CUBLAS,
            "kb/errors/cuda-out-of-memory.md": OOM,
            "kb/errors/cudnn-error.md": CUDNN,
            "kb/errors/cuda-not-available.md": NOT_AVAILABLE,
            "kb/causes/out-of-range-index.md": CAUSE,
            "kb/fixes/clamp-labels.md": FIX,
        }
    )
    monkeypatch.chdir(root)
    return root


def triage(*args: str, stdin: str | bytes | None = None) -> Result:
    return invoke("triage", *args, input=stdin)


def write_log(root: Path, text: str | bytes, name: str = "train.log") -> str:
    path = root / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return name


def matches(root: Path, text: str | bytes) -> list[dict[str, object]]:
    result = triage("--json", write_log(root, text))
    assert result.exit_code == 0, result.output
    found: list[dict[str, object]] = json.loads(result.stdout)["matches"]
    return found


def test_triage_shows_lines_causes_fixes_and_probes(project: Path) -> None:
    log = write_log(project, f"epoch 1 loss 0.3\nTraceback (most recent call last):\n{IMA_LINE}\n")
    result = triage(log)
    assert result.exit_code == 0
    assert result.output == (
        "train.log: 3 lines; 1 error type match.\n"
        "\n"
        "1. cuda-illegal-memory-access (score 3): CUDA illegal memory access\n"
        f"   line 3: {IMA_LINE}\n"
        "   Likely causes:\n"
        "     - out-of-range-index (high): Index or label out of range\n"
        "         fix clamp-labels: Check labels before the loss\n"
        "   Probes to run next:\n"
        "     - gpu: GPU is visible and works\n"
        "   Record it: kbgen new-bug --from-log train.log\n"
    )


def test_triage_json_ranks_best_first(project: Path) -> None:
    log = write_log(project, "CUDA out of memory. Tried to allocate 2.00 GiB\nCUBLAS_STATUS_ALLOC_FAILED\n")
    result = triage("--json", log)
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    # each match carries its causes, ranked with the environment the log shows (none here)
    assert all(isinstance(m.pop("causes"), list) for m in data["matches"])
    assert data.pop("known_bugs") == []  # the project has filed no bug with this crash
    assert data.pop("verdict") == "match"
    assert data == {
        "source": "train.log",
        "lines": 2,
        "matches": [
            {
                "error": "cuda-out-of-memory",
                "title": "CUDA out of memory",
                "score": 5.0,
                "first_line": 1,
                "count": 1,
                "lines": [{"number": 1, "text": "CUDA out of memory. Tried to allocate 2.00 GiB"}],
                "consequence_of": None,
            },
            {
                "error": "cublas-error",
                "title": "cuBLAS call failed",
                "score": 4.0,
                "first_line": 2,
                "count": 1,
                "lines": [{"number": 2, "text": "CUBLAS_STATUS_ALLOC_FAILED"}],
                "consequence_of": None,
            },
        ],
        "skipped": [],
    }


def test_primary_error_wins_over_the_errors_it_causes(project: Path) -> None:
    # after the illegal access every cuBLAS call fails too: more lines, higher raw score
    later = "".join(f"CUBLAS_STATUS_EXECUTION_FAILED when calling cublasSgemm (step {i})\n" for i in range(9))
    found = matches(project, f"{IMA_LINE}\n{later}")
    assert [(m["error"], m["consequence_of"]) for m in found] == [
        ("cuda-illegal-memory-access", None),
        ("cublas-error", "cuda-illegal-memory-access"),
    ]
    result = triage(write_log(project, f"{IMA_LINE}\n{later}"))
    assert "   likely a consequence of cuda-illegal-memory-access, which this log also shows\n" in (
        result.output
    )


def test_a_secondary_type_seen_first_is_not_demoted(project: Path) -> None:
    found = matches(project, f"CUBLAS_STATUS_NOT_INITIALIZED\n{IMA_LINE}\n")
    assert [(m["error"], m["consequence_of"]) for m in found] == [
        ("cublas-error", None),
        ("cuda-illegal-memory-access", None),
    ]


def test_chained_exception_names_the_first_error(project: Path) -> None:
    log = (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 9, in step\n'
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB\n"
        "\n"
        "During handling of the above exception, another exception occurred:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 12, in step\n'
        "RuntimeError: cuDNN error: CUDNN_STATUS_MAPPING_ERROR\n"
    )
    found = matches(project, log)
    assert [(m["error"], m["consequence_of"]) for m in found] == [
        ("cuda-out-of-memory", None),
        ("cudnn-error", "cuda-out-of-memory"),
    ]


def test_a_warning_before_the_real_error_does_not_win(project: Path) -> None:
    log = (
        "/usr/lib/python3/torch/cuda/__init__.py:88: UserWarning: CUDA initialization: "
        "unexpected error from cudaGetDeviceCount()\n"
        "  return torch._C._cuda_getDeviceCount() > 0\n"
        f"{IMA_LINE}\n"
    )
    assert [m["error"] for m in matches(project, log)] == ["cuda-illegal-memory-access", "cuda-not-available"]


@pytest.mark.parametrize(
    ("noisy", "shown"),
    [
        # colour codes inside the message
        (
            "\x1b[31m\x1b[1mRuntimeError\x1b[0m: CUDA error: an illegal "
            "\x1b[4mmemory\x1b[0m access was encountered",
            IMA_LINE,
        ),
        # a progress bar redrawn with carriage returns, the error on the same physical line
        (f"Epoch 1:  10%|#  | 1/10\rEpoch 1:  20%|## | 2/10\r{IMA_LINE}", IMA_LINE),
        # a rich traceback row
        (f"│ {IMA_LINE}                          │", IMA_LINE),
        # interleaved workers
        (f"[rank3]: {IMA_LINE}", f"[rank3]: {IMA_LINE}"),
        (f"(RayWorker pid=7046) ERROR 12-25 01:10:28 worker.py:229] {IMA_LINE}", None),
        # Windows line endings
        (f"{IMA_LINE}\r", IMA_LINE),
    ],
)
def test_real_log_noise(project: Path, noisy: str, shown: str | None) -> None:
    log = f"step 1\r\nstep 2\n{noisy}\nstep 3\n"
    found = matches(project, log)
    assert found[0]["error"] == "cuda-illegal-memory-access"
    assert found[0]["first_line"] == 3
    lines = found[0]["lines"]
    assert isinstance(lines, list)
    assert lines[0]["text"] == (shown if shown is not None else noisy)


def test_no_match_says_so_and_suggests_new_bug(project: Path) -> None:
    result = triage(write_log(project, "RuntimeError: fused step failed on stream 3\n"))
    assert result.exit_code == 0
    assert result.output == (
        "No error type in the KB matches train.log (1 line).\n"
        "   RuntimeError: fused step failed on stream 3\n"
        "To record it as a new bug:\n"
        "  kbgen new-bug --from-log train.log\n"
        "To teach kbgen this error (drafts kb/errors/<id>.md from the error line):\n"
        "  kbgen new-error --from-log train.log\n"
    )


def test_a_plain_error_in_the_program_is_no_gpu_failure(project: Path) -> None:
    result = triage(write_log(project, "ValueError: bad config key 'lr'\n"))
    assert result.exit_code == 0
    assert result.output == (
        "Not a GPU failure: train.log (1 line) ends with an error in the program itself.\n"
        "   ValueError: bad config key 'lr'\n"
        "   Nothing in it points at the GPU, the driver or a CUDA library: fix the code or its data.\n"
    )


def test_reads_stdin(project: Path) -> None:
    result = triage("--json", "-", stdin=f"noise\n{IMA_LINE}\n")
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["source"] == "<stdin>"
    assert data["matches"][0]["lines"] == [{"number": 2, "text": IMA_LINE}]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "Error: train.log: the log is empty\n  hint: pass the file the failing command wrote to\n"),
        (
            b"\n \n\t\n",
            "Error: train.log: the log is empty\n  hint: pass the file the failing command wrote to\n",
        ),
        (
            b"\x7fELF\x02\x01\x01\x00\x00\x00" + bytes(range(256)) * 4,
            "Error: train.log: looks like a binary file (NUL bytes near the start), not a log\n"
            "  hint: if it is UTF-16 text, convert it first: iconv -f UTF-16 -t UTF-8\n",
        ),
    ],
)
def test_bad_logs_are_one_clear_error(project: Path, content: bytes, message: str) -> None:
    result = triage(write_log(project, content))
    assert result.exit_code == 1
    assert result.output == message


def test_missing_log_and_folder(project: Path) -> None:
    missing = triage("nope.log")
    assert (missing.exit_code, missing.output) == (
        1,
        "Error: nope.log: no such file\n  hint: pass a log file, or - to read stdin\n",
    )
    folder = triage("kb")
    assert (folder.exit_code, folder.output) == (1, "Error: kb: is a folder, not a log file\n")


def test_a_single_huge_line_without_newline(project: Path) -> None:
    filler = "x" * (6 * 1024 * 1024)
    found = matches(project, f"{filler} {IMA_LINE} {filler}")
    assert found[0]["error"] == "cuda-illegal-memory-access"
    assert found[0]["first_line"] == 1
    lines = found[0]["lines"]
    assert isinstance(lines, list)
    assert len(lines[0]["text"]) <= 2000


def test_undecodable_bytes_do_not_stop_triage(project: Path) -> None:
    found = matches(project, b"caf\xe9 \xff\xfe log\n" + IMA_LINE.encode() + b"\n")
    assert found[0]["first_line"] == 2


@pytest.mark.slow
def test_a_200_mb_log_is_streamed(project: Path) -> None:
    chunk = ("INFO step ok loss=0.123 lr=1e-4 " * 3 + "\n").encode() * 200_000  # ~20 MB
    path = project / "big.log"
    try:
        with path.open("wb") as handle:
            for _ in range(10):
                handle.write(chunk)
            handle.write(f"{IMA_LINE}\n".encode())
        lines_before = chunk.count(b"\n") * 10
        result = triage("--json", "big.log")
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        assert data["lines"] == lines_before + 1
        assert data["matches"][0]["lines"] == [{"number": lines_before + 1, "text": IMA_LINE}]
    finally:
        path.unlink(missing_ok=True)


def _error_type(error_id: str, *regexes: str) -> str:
    lines = "".join(f"  - regex: '{r}'\n" for r in regexes)
    head = f"---\nid: {error_id}\ntitle: {error_id} title\nsummary: A signature under test.\n"
    return f"{head}signatures:\n{lines}---\n"


@pytest.mark.parametrize(
    ("regex", "hostile", "matching"),
    [
        # each backtracks exponentially or polynomially in Python's re on its hostile line
        (".*a.*a.*a.*a.*a.*qqq", "a" * 2048, "a1 a2 a3 a4 a5 qqq"),
        (r"(?:\w+){1,63}qqq", "w" * 2048 + "!", "wordqqq"),
        (r"NCCL error.*\s.*\s.*\s.*\s.*failed", "NCCL error" + " x" * 1024, "NCCL error a b c d failed"),
        ("(a+)+$", "a" * 2048 + "!", "aaaa"),
    ],
)
def test_backtracking_patterns_run_in_linear_time(
    project: Path, regex: str, hostile: str, matching: str
) -> None:
    (project / "kb/errors/slow-pattern.md").write_text(_error_type("slow-pattern", regex), encoding="utf-8")
    write_log(project, f"{hostile}\n" * 50 + f"{matching}\n")
    done = kbgen("triage", "--json", "train.log", cwd=project, timeout=60)
    assert (done.returncode, done.stderr) == (0, "")
    found = json.loads(done.stdout)["matches"]
    assert [(m["error"], m["first_line"]) for m in found] == [("slow-pattern", 51)]


def test_new_bug_from_log_is_bounded_by_the_same_engine(project: Path) -> None:
    regex = ".*a.*a.*a.*a.*a.*qqq"
    (project / "kb/errors/slow-pattern.md").write_text(_error_type("slow-pattern", regex), encoding="utf-8")
    write_log(project, "a" * 2048 + "\n" + "RuntimeError: a1 a2 a3 a4 a5 qqq\n")
    done = kbgen("new-bug", "--from-log", "train.log", "--date", "2025-11-24", cwd=project, timeout=60)
    assert done.returncode == 0, done.stderr
    bug = next((project / "kb/bugs").glob("*.md")).read_text(encoding="utf-8")
    assert "error: slow-pattern" in bug
    assert "RuntimeError: a1 a2 a3 a4 a5 qqq" in bug


LOOKAHEAD = _error_type("lookahead", "CUDA error", "CUDA error(?!: out of memory)")


def test_a_signature_re2_cannot_run_is_skipped_and_named(project: Path) -> None:
    (project / "kb/errors/lookahead.md").write_text(LOOKAHEAD, encoding="utf-8")
    write_log(project, "CUDA error: oops\n")
    done = kbgen("triage", "train.log", cwd=project, timeout=60)
    assert done.returncode == 0
    assert done.stderr == (
        "warning: kb/errors/lookahead.md:7: signature skipped: RE2 cannot run this pattern "
        "(invalid perl operator: (?!); kbgen runs signatures with RE2: no lookarounds (?= (?! (?<= (?<!, "
        "no backreferences \\1, no possessive or atomic repeats, repeat counts up to 1000\n"
    )
    assert done.stdout.startswith("train.log: 1 line; 1 error type match.\n\n1. lookahead (score 1)")


def test_an_invalid_pattern_is_reported_and_the_rest_still_triaged(project: Path) -> None:
    broken = _error_type("broken", "CUDA error", "[unclosed")
    (project / "kb/errors/broken.md").write_text(broken, encoding="utf-8")
    result = invoke("triage", write_log(project, f"{IMA_LINE}\n"))
    assert result.exit_code == 0
    assert result.stderr == "warning: 1 KB file(s) could not be loaded; `kbgen validate` lists why\n"
    assert result.stdout.startswith("train.log: 1 line; 1 error type match.\n")


def test_validate_names_signatures_re2_cannot_run_with_file_and_line(project: Path) -> None:
    (project / "kb/errors/lookahead.md").write_text(LOOKAHEAD, encoding="utf-8")
    backref = _error_type("backref", "CUDA error", r"(CUBLAS|CUDNN)_STATUS_\w+ from \1", "x*")
    (project / "kb/errors/backref.md").write_text(backref, encoding="utf-8")
    (project / "kb/errors/broken.md").write_text(_error_type("broken", "[unclosed"), encoding="utf-8")
    result = invoke("validate")
    assert result.exit_code == 1
    assert (
        "kb/errors/lookahead.md:7: signatures.1: RE2 cannot run this pattern (invalid perl operator: (?!); "
    ) in result.output
    assert (
        "kb/errors/backref.md:7: signatures.1: RE2 cannot run this pattern (invalid escape sequence: \\1)"
        in (result.output)
    )
    assert (
        "kb/errors/backref.md:8: signatures.2: matches an empty line, "
        "so it would match every line of every log\n"
    ) in result.output
    assert ("kb/errors/broken.md:6: signatures.0.regex: invalid regular expression: ") in result.output


ANCHORED = _error_type("anchored", r"^RuntimeError: CUDA error: device-side assert triggered$")


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: CUDA error: device-side assert triggered",
        "RuntimeError: CUDA error: device-side assert triggered   ",
        "Epoch 1:  10%|#  | 1/10\rRuntimeError: CUDA error: device-side assert triggered",
        "│ RuntimeError: CUDA error: device-side assert triggered        │",
        "\x1b[31mRuntimeError\x1b[0m: CUDA error: device-side assert triggered",
    ],
)
def test_anchors_hold_at_the_cleaned_line_ends(project: Path, line: str) -> None:
    (project / "kb/errors/anchored.md").write_text(ANCHORED, encoding="utf-8")
    found = matches(project, f"step 1\n{line}\nstep 2\n")
    assert [(m["error"], m["first_line"]) for m in found] == [("anchored", 2)]


@pytest.mark.parametrize(
    "line", ["[rank0]: RuntimeError: CUDA error: device-side assert triggered", "RuntimeError: CUDA error: x"]
)
def test_anchors_still_refuse_other_lines(project: Path, line: str) -> None:
    (project / "kb/errors/anchored.md").write_text(ANCHORED, encoding="utf-8")
    assert matches(project, f"{line}\n") == []


def test_a_match_across_a_block_boundary_is_found(project: Path) -> None:
    from kbgen.triage.scan import BLOCK

    count = (BLOCK - 200) // 13
    filler = b"INFO step ok\n" * count
    pad = BLOCK - 20 - len(filler) - 1  # the error line starts 20 bytes before the first block ends
    data = filler + b"x" * pad + b"\n" + f"{IMA_LINE}\n".encode() + b"done\n"
    assert data.index(IMA_LINE.encode()) == BLOCK - 20
    found = matches(project, data)
    lines = found[0]["lines"]
    assert isinstance(lines, list)
    assert lines == [{"number": count + 2, "text": IMA_LINE}]


def test_without_the_set_each_signature_screens_on_its_own(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a KB too large for one RE2 set (here: a set allowed 1 KiB) is still triaged, signature by signature
    monkeypatch.setattr("kbgen.triage.signatures.SET_MEM", 1024)
    log = "CUDA out of memory. Tried to allocate 2.00 GiB\n" + "".join(f"step {i}\n" for i in range(9))
    found = matches(project, log + f"[rank1]: {IMA_LINE}\n")
    assert [(m["error"], m["first_line"]) for m in found] == [
        ("cuda-out-of-memory", 1),
        ("cuda-illegal-memory-access", 11),
    ]


def test_supporting_signatures_need_other_evidence(
    make_tree: MakeTree, monkeypatch: pytest.MonkeyPatch
) -> None:
    hang = (
        "---\nid: import-hang\ntitle: Freeze\nsummary: A run that never returns.\nsignatures:\n"
        "  - regex: '^KeyboardInterrupt$'\n    weight: 1.5\n    supporting: true\n"
        "  - regex: 'in _lazy_init$'\n    weight: 2\n    supporting: true\n"
        "  - regex: 'hangs forever'\n    weight: 3\n"
        "  - regex: 'debug hint'\n    weight: 0.5\n    supporting: true\n"
        "  - regex: 'other hint'\n    weight: 0.5\n    supporting: true\n---\n"
    )
    root = make_tree({"kb/errors/import-hang.md": hang})
    monkeypatch.chdir(root)
    shown = {
        "KeyboardInterrupt\n": [],
        "debug hint\nother hint\n": [],  # two supporting lines that weigh too little together
        "  File torch/cuda/__init__.py, line 9, in _lazy_init\nKeyboardInterrupt\n": [("import-hang", 3.5)],
        "KeyboardInterrupt\nit hangs forever\n": [("import-hang", 4.5)],
    }
    for text, expected in shown.items():
        assert [(m["error"], m["score"]) for m in matches(root, text)] == expected, text
