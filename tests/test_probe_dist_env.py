"""The dist-env probe, run for real on this machine through `kbgen probe`: what it says about the
launch variables torch.distributed reads, a port another process listens on, a master that does not
resolve, and ranks that do not fit the world size."""

from __future__ import annotations

import json
import runpy
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import invoke
from kbgen.probes.discovery import BUILTIN_DIR

LAUNCH_VARIABLES = (
    "MASTER_ADDR",
    "MASTER_PORT",
    "WORLD_SIZE",
    "RANK",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "TORCHELASTIC_RUN_ID",
    "SLURM_PROCID",
    "OMPI_COMM_WORLD_RANK",
    "PMI_RANK",
    "USE_LIBUV",
)


@pytest.fixture(autouse=True)
def clean_launch_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in LAUNCH_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def listener() -> Iterator[int]:
    """A port that a process on this host listens on, as a stale run's TCPStore would."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("0.0.0.0", 0))
    server.listen(4)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def probe(monkeypatch: pytest.MonkeyPatch, **env: str) -> dict[str, Any]:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = invoke("probe", "--json", "dist-env")
    assert result.exit_code == 0, result.stderr
    found: dict[str, Any] = json.loads(result.stdout)["results"][0]
    assert found["id"] == "dist-env"
    return found


def test_a_plain_shell_is_no_distributed_launch(kb_project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    found = probe(monkeypatch)
    assert found["status"] == "warn"
    assert found["message"].startswith(
        "no launcher variables set (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK)"
    )
    facts = found["facts"]
    assert facts["env_complete"] is False and facts["launcher"] is None
    assert facts["missing"] == "MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK"
    assert facts["port_checked"] == 29500  # torchrun's default port is checked when none is set


def test_a_port_someone_listens_on_is_not_free(
    kb_project: Path, monkeypatch: pytest.MonkeyPatch, listener: int
) -> None:
    found = probe(monkeypatch, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(listener), WORLD_SIZE="2", RANK="0")
    facts = found["facts"]
    assert facts["port_free_here"] is False
    assert "Address already in use" in facts["port_bind_error"]
    assert facts["master_connect"] == "open"
    assert facts["env_complete"] is True and facts["master_addr_resolves"] is True
    assert found["status"] == "warn"
    assert f"port {listener} cannot be bound on this host" in found["message"]


def test_a_complete_launch_with_a_free_port_passes_but_names_the_missing_listener(
    kb_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    found = probe(
        monkeypatch,
        MASTER_ADDR="localhost",
        MASTER_PORT=str(port),
        WORLD_SIZE="4",
        RANK="1",
        LOCAL_RANK="1",
        LOCAL_WORLD_SIZE="4",
        TORCHELASTIC_RUN_ID="none",
    )
    facts = found["facts"]
    assert facts["launcher"] == "torchrun"
    assert facts["port_free_here"] is True and facts["master_addr_resolves"] is True
    assert facts["master_connect"] == "refused"  # this host answers; no rank 0 listens yet
    assert found["message"].startswith(f"rank 1 of 4 (torchrun), master localhost:{port}")
    assert found["status"] == "warn"


def test_a_master_that_does_not_resolve_fails(kb_project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # .invalid is reserved (RFC 2606): it never resolves, with or without a network
    found = probe(
        monkeypatch, MASTER_ADDR="rank0-node.invalid", MASTER_PORT=str(free_port()), WORLD_SIZE="2", RANK="1"
    )
    assert found["status"] == "fail"
    assert "MASTER_ADDR='rank0-node.invalid' does not resolve" in found["message"]
    assert found["facts"]["master_addr_resolves"] is False
    assert "master_connect" not in found["facts"]


@pytest.mark.parametrize(
    ("env", "words"),
    [
        ({"RANK": "2", "WORLD_SIZE": "2"}, "RANK=2 is not below WORLD_SIZE=2"),
        ({"LOCAL_RANK": "-1"}, "LOCAL_RANK='-1' is not a non-negative integer"),
        ({"MASTER_PORT": "70000"}, "MASTER_PORT='70000' is not a TCP port (1-65535)"),
    ],
)
def test_numbers_that_cannot_work_fail(
    kb_project: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], words: str
) -> None:
    found = probe(monkeypatch, **env)
    assert found["status"] == "fail"
    assert words in found["message"]


def test_a_partial_launch_names_what_is_missing(kb_project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    found = probe(monkeypatch, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    assert found["status"] == "warn"
    assert found["message"].startswith("set: MASTER_ADDR, MASTER_PORT; missing: WORLD_SIZE, RANK")
    assert found["facts"]["env_partial"] is True


_PURE = runpy.run_path(str(BUILTIN_DIR / "dist_env.py"))
_NAMES = st.sampled_from(
    ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"]
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(_NAMES, st.text(max_size=30)))
def test_any_launch_variables_give_facts_not_a_traceback(env: dict[str, str]) -> None:
    facts, missing = _PURE["_env_facts"](env)
    problems = _PURE["_numbers"](env)
    assert isinstance(facts["env_complete"], bool) and isinstance(missing, list)
    assert all(isinstance(p, str) for p in problems)
