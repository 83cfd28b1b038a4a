"""`kbgen run` reads the error file a torchrun child leaves (TORCHELASTIC_ERROR_FILE) as the
untrusted record it is: whatever the command puts there, kbgen notes in one line why it set it
aside, keeps the command's exit status, and neither hangs nor prints a traceback."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from conftest import KBGEN, base_kb_files, write_tree
from kbgen.run.command import Capture, Outcome
from kbgen.run.errorfile import MAX_BYTES, read
from kbgen.store import find_project, load_kb
from kbgen.triage import triage_text

IMA = "CUDA error: an illegal memory access was encountered"

# The failing command: puts KIND at the error file's place, then exits 3. A KIND of "copy" copies
# the file named by the third argument there.
WRITES = """
import os, shutil, sys
path = os.environ["TORCHELASTIC_ERROR_FILE"]
kind = sys.argv[1]
if kind == "zero":
    os.symlink("/dev/zero", path)
elif kind == "fifo":
    os.mkfifo(path)
elif kind == "folder":
    os.mkdir(path)
else:
    shutil.copyfile(sys.argv[2], path)
print("worker failed", flush=True)
sys.exit(3)
"""
# kbgen with at most 1 GiB of address space: a reader that follows /dev/zero fails fast
LIMITED = (
    "import os, resource, sys\n"
    "resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))\n"
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])\n"
)


def run_kbgen(folder: Path, kind: str, payload: bytes = b"") -> tuple[int, str, str]:
    """``kbgen run`` of a command that leaves KIND as its error file; (status, stdout, stderr)."""
    import subprocess

    if not (folder / "kb").exists():  # a project, so that what kbgen reads is triaged
        write_tree(folder, base_kb_files())
    (folder / "tmp").mkdir(exist_ok=True)
    script = folder / "worker.py"
    script.write_text(WRITES)
    source = folder / "payload.bin"
    source.write_bytes(payload)
    command = [sys.executable, str(script), kind, str(source)]
    done = subprocess.run(
        [sys.executable, "-c", LIMITED, *KBGEN[1:], "run", "--", *command],
        cwd=folder,
        env={**os.environ, "TMPDIR": str(folder / "tmp")},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert list((folder / "tmp").iterdir()) == []  # no kbgen-run-* folder left
    assert [p.name for p in (folder / "kb" / "bugs").iterdir()] == ["BUG-20251109-002.md"]  # nothing filed
    return done.returncode, done.stdout, done.stderr


NOTE = "kbgen: ignored the torchrun error file (TORCHELASTIC_ERROR_FILE): "


@pytest.mark.parametrize(
    ("kind", "payload", "why"),
    [
        ("zero", b"", "a symbolic link, which kbgen does not follow"),
        ("fifo", b"", "a named pipe (FIFO), not a regular file"),
        ("folder", b"", "a folder, not a regular file"),
        ("copy", b"[" * 200_000, "not JSON kbgen reads: nested too deeply"),
        ("copy", b'{"message": ' * 50_000, "not JSON kbgen reads: nested too deeply"),
        (
            "copy",
            json.dumps({"message": {"message": IMA, "extraInfo": ["py_callstack"]}}).encode(),
            "not the shape torchrun writes: message.extraInfo: should be an object",
        ),
        ("copy", b'{"message": [1, 2]}', "not the shape torchrun writes: message: should be a string"),
        ("copy", b"[]", "not the shape torchrun writes: an array, not an object"),
        ("copy", b"\x89PNG\r\n\x1a\n\0\0", "not JSON: Expecting value"),
        (
            "copy",
            b" " * MAX_BYTES + b"{}",
            f"the file is {MAX_BYTES + 2:,} bytes; kbgen reads at most {MAX_BYTES:,} here",
        ),
    ],
    ids=["link-to-dev-zero", "fifo", "folder", "deep-array", "deep-object", "extraInfo-list",
         "message-list", "array", "binary", "too-large"],
)  # fmt: skip
def test_an_error_file_kbgen_cannot_use_is_noted_and_the_status_kept(
    tmp_path: Path, kind: str, payload: bytes, why: str
) -> None:
    status, out, err = run_kbgen(tmp_path, kind, payload)
    assert status == 3, err
    assert out == "worker failed\n"
    assert "Traceback" not in err
    assert [line for line in err.splitlines() if line.startswith(NOTE)] == [NOTE + why]
    assert "kbgen: the command failed (exit status 3)." in err


def test_a_good_error_file_is_triaged_even_with_nul_bytes_and_lone_surrogates(kb_project: Path) -> None:
    record = {"message": {"message": f"RuntimeError: {IMA}\u0000\ud800", "extraInfo": {"py_callstack": "x"}}}
    status, _, err = run_kbgen(kb_project, "copy", json.dumps(record).encode())
    assert status == 3, err
    assert "kbgen: looks like cuda-illegal-memory-access" in err
    assert NOTE not in err and "Traceback" not in err


# --------------------------------------------------------------------------- any bytes at all

_KEYS = st.sampled_from(["message", "extraInfo", "py_callstack", "timestamp", "errorCode", ""])
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(_KEYS | st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
# torch's own shape with random parts, any JSON value, and raw bytes
_SHAPED = st.builds(
    lambda message, extra, stack: {
        "message": {"message": message, "extraInfo": {"py_callstack": stack, **extra}}
    },
    _JSON,
    st.dictionaries(_KEYS, _JSON, max_size=2),
    _JSON,
)
PAYLOADS = st.one_of(
    _SHAPED.map(lambda value: json.dumps(value).encode()),
    _JSON.map(lambda value: json.dumps({"message": value}).encode()),
    _JSON.map(lambda value: json.dumps(value).encode()),
    st.binary(max_size=2000),
    st.integers(1, 5000).map(lambda depth: b'{"message": ' * depth + b"1" + b"}" * depth),
)


# shapes that once cost a traceback, always tried first
KNOWN = [
    b"[" * 100_000,
    b'{"message": {"message": "x", "extraInfo": ["py_callstack"]}}',
    b'{"message": "RuntimeError: \\ud800 an illegal memory access was encountered"}',
]


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> object:
    folder = write_tree(tmp_path_factory.mktemp("kb"), base_kb_files())
    return load_kb(find_project(folder))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payload=PAYLOADS)
@example(payload=KNOWN[0])
@example(payload=KNOWN[1])
@example(payload=KNOWN[2])
def test_any_error_file_is_read_or_set_aside_and_what_is_read_can_be_triaged(
    tmp_path: Path, kb: object, payload: bytes
) -> None:
    path = tmp_path / "error.json"
    path.write_bytes(payload)
    found = read(path)
    assert (found.text is None) or (found.note is None)
    if found.note is not None:
        assert "\n" not in found.note and len(found.note) < 300
    capture = Capture()
    capture.feed(b"worker failed\n")
    outcome = Outcome(3, capture, error_file=found)
    triage_text(outcome.report_text(), kb, "the command's output")  # type: ignore[arg-type]


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payload=PAYLOADS)
@example(payload=KNOWN[0])
@example(payload=KNOWN[2])
def test_kbgen_run_keeps_the_status_whatever_the_error_file_holds(tmp_path: Path, payload: bytes) -> None:
    status, out, err = run_kbgen(tmp_path, "copy", payload)
    assert status == 3, err
    assert out == "worker failed\n"
    assert "Traceback" not in err
    assert len([line for line in err.splitlines() if line.startswith(NOTE)]) <= 1
