"""kbgen fleet probe --hosts: a real sshd on 127.0.0.1 with keys made by the test."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import PATIENCE, base_kb_files, write_tree
from fleet_fixtures import SRC, bare_python, kbgen, node_file

SSHD = shutil.which("sshd") or ("/usr/sbin/sshd" if Path("/usr/sbin/sshd").exists() else None)
pytestmark = [
    pytest.mark.skipif(SSHD is None, reason="sshd is not installed (Debian: openssh-server)"),
    pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen is not installed"),
    pytest.mark.skipif(pytest.importorskip("asyncssh") is None, reason="asyncssh is not installed"),
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)


@pytest.fixture
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str | int]]:
    home = tmp_path_factory.mktemp("sshd")
    keygen(home / "host")
    keygen(home / "client")
    (home / "authorized_keys").write_text((home / "client.pub").read_text())
    port = free_port()
    config = home / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {home / 'host'}\n"
        f"AuthorizedKeysFile {home / 'authorized_keys'}\nPidFile {home / 'sshd.pid'}\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
        "PermitRootLogin prohibit-password\n"
    )
    Path("/run/sshd").mkdir(exist_ok=True)
    server = subprocess.Popen([str(SSHD), "-D", "-e", "-f", str(config)], stderr=subprocess.PIPE)
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                break
        if server.poll() is not None:
            server.wait()
            pytest.skip(
                f"sshd could not start: {server.stderr.read().decode()[-300:] if server.stderr else ''}"
            )
        time.sleep(0.1)
    host_key = (home / "host.pub").read_text().split()
    (home / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_key[0]} {host_key[1]}\n")
    try:
        yield {"port": port, "identity": str(home / "client"), "known_hosts": str(home / "known_hosts")}
    finally:
        server.terminate()
        server.wait(timeout=PATIENCE)
        if server.stderr is not None:
            server.stderr.close()


def remote_command(host: str) -> str:
    """What each node runs: this checkout's kbgen, the quick system probe, the node's own name."""
    return f"env PYTHONPATH={SRC} KBGEN_HOSTNAME={host} {sys.executable} -m kbgen probe --json system"


def fleet_probe(root: Path, sshd: dict, hosts: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`kbgen fleet probe --hosts` with the test's key and known_hosts."""
    (root / "nodes.txt").write_text(hosts)
    keys = ("--identity", str(sshd["identity"]), "--known-hosts", str(sshd["known_hosts"]))
    return kbgen(root, "fleet", "probe", "--hosts", "nodes.txt", "--json", "--timeout", "120", *keys, *args)


def test_ssh_probes_every_host_and_records_the_unreachable_one(tmp_path: Path, sshd: dict) -> None:
    write_tree(tmp_path, base_kb_files())
    port, closed = sshd["port"], free_port()
    hosts = (
        f"# two names for one sshd, and a port nobody listens on\n127.0.0.1:{port} node-a\n"
        f"root@127.0.0.1:{port} node-b\n127.0.0.1:{closed} node-down\n"
    )
    done = fleet_probe(tmp_path, sshd, hosts, "--command", remote_command("node-x"))
    assert done.returncode == 1, done.stderr
    attempts = {a["node"]: a for a in json.loads(done.stdout)}
    assert attempts["node-a"]["status"] == "ok" and attempts["node-b"]["status"] == "ok"
    assert attempts["node-down"]["status"] == "unreachable"
    node_a = node_file(tmp_path, "node-a")
    assert node_a["report"]["host"] == "node-x"
    assert any(r["id"] == "system" and r["status"] == "pass" for r in node_a["report"]["results"])
    down = node_file(tmp_path, "node-down")
    assert "report" not in down and down["last_attempt"]["status"] == "unreachable"


def test_a_rerun_that_fails_keeps_the_last_good_report(tmp_path: Path, sshd: dict) -> None:
    write_tree(tmp_path, base_kb_files())
    hosts = f"127.0.0.1:{sshd['port']} node-a\n"
    assert fleet_probe(tmp_path, sshd, hosts, "--command", remote_command("node-a")).returncode == 0
    failed = fleet_probe(tmp_path, sshd, hosts, "--command", "echo 'kbgen: command not found' >&2; exit 127")
    assert failed.returncode == 1
    attempt = json.loads(failed.stdout)[0]
    assert attempt["status"] == "failed" and "exit 127: kbgen: command not found" in attempt["error"]
    node = node_file(tmp_path, "node-a")
    assert node["report"]["host"] == "node-a" and node["last_attempt"]["status"] == "failed"


def test_ship_probes_a_node_whose_python_has_no_kbgen(tmp_path: Path, sshd: dict) -> None:
    bare = bare_python()
    write_tree(tmp_path, base_kb_files())
    done = fleet_probe(tmp_path, sshd, f"127.0.0.1:{sshd['port']} bare-node\n", "--ship", "--python", bare)
    assert done.returncode == 0, done.stdout + done.stderr
    report = node_file(tmp_path, "bare-node")["report"]
    assert report["python"]["executable"] == bare
    results = {r["id"]: r for r in report["results"]}
    assert results["system"]["status"] == "pass" and results["cpu"]["status"] == "pass"
    assert results["torch-build"]["status"] == "skip"  # no torch on that interpreter: a result, not an abort
    assert report["torch_import"]["status"] == "missing"
