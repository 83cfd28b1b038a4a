"""`kbgen serve` on a port another program holds says so at once, before building the site (a
build takes seconds to minutes on a large KB, and the error used to come only after it)."""

from __future__ import annotations

import socket
from pathlib import Path

from conftest import kbgen


def test_a_taken_port_is_reported_before_the_build(tmp_path: Path) -> None:
    assert kbgen("init", cwd=tmp_path).returncode == 0
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        result = kbgen("serve", "--dev-addr", f"127.0.0.1:{port}", cwd=tmp_path, timeout=120)
    assert result.returncode == 1
    assert (
        f"Error: 127.0.0.1:{port} is taken: another program already listens on port {port}" in result.stderr
    )
    assert f"kbgen serve --dev-addr 127.0.0.1:{port + 1}" in result.stderr
    assert "Building documentation" not in result.stderr, result.stderr
    assert "Documentation built" not in result.stderr, result.stderr
