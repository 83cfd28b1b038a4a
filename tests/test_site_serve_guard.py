"""What `kbgen serve` answers: only requests that name it by a loopback name, the --dev-addr host
or a name given with --allow-host (no DNS rebinding), a bad request for a NUL in a path (not a
500), and never a file a link in docs/ leads to outside docs/.

One server per module, started as a user starts it and ready once it prints its address; the
requests are raw HTTP, so the Host: header is whatever the test says.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import KBGEN, write_tree
from site_kb import TODAY, make_site_project

pytestmark = pytest.mark.slow

SECRET = "kbgen-test-secret-0f6c"
ALLOWED = "kb.lab.example"


class Serve:
    """`kbgen serve` in a subprocess; ready when it logs the address it serves on."""

    def __init__(self, project: Path, *extra: str) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])
        env = {**os.environ, "KBGEN_NOW": TODAY, "NO_MKDOCS_2_WARNING": "1"}
        command = [*KBGEN, "serve", "--dev-addr", f"127.0.0.1:{self.port}", *extra]
        self.proc = subprocess.Popen(
            command, cwd=project, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        self.lines: list[str] = []
        self.ready = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        if not self.ready.wait(timeout=300):
            self.stop()
            raise AssertionError("kbgen serve never said it was serving:\n" + "".join(self.lines))
        assert self.proc.poll() is None, "".join(self.lines)

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:  # drained to the end, so the server never blocks on it
            self.lines.append(line)
            if "Serving on http://" in line:
                self.ready.set()
        self.ready.set()  # it ended: whoever waits learns it from poll()

    def get(self, target: str, host: str | None = None) -> tuple[int, bytes]:
        """Status and body of ``GET target`` sent with ``Host: host`` (this server's address if None)."""
        host = f"127.0.0.1:{self.port}" if host is None else host
        request = f"GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        with socket.create_connection(("127.0.0.1", self.port), timeout=60) as sock:
            sock.sendall(request.encode("latin-1"))
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        head, _, body = answer.partition(b"\r\n\r\n")
        return int(head.split(b" ", 2)[1]), body

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)  # kbgen serve takes it as Ctrl+C
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.reader.join(timeout=60)
        if self.proc.stderr is not None:
            self.proc.stderr.close()


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture KB, whose docs/ holds links to a file and a folder outside it, and one inside."""
    root = tmp_path_factory.mktemp("serve")
    outside = write_tree(root / "outside", {"secret.txt": f"{SECRET}\n", "folder/more.txt": f"{SECRET}\n"})
    project = make_site_project(root / "project")
    (project / "docs" / "secret.txt").symlink_to(outside / "secret.txt")
    (project / "docs" / "linked").symlink_to(outside / "folder")
    (project / "docs" / "guide-link.md").symlink_to(project / "docs" / "getting-started.md")
    return project


@pytest.fixture(scope="module")
def server(project: Path) -> Iterator[Serve]:
    serving = Serve(project)
    try:
        yield serving
    finally:
        serving.stop()


def test_only_requests_for_this_machine_are_answered(server: Serve) -> None:
    for host in (f"127.0.0.1:{server.port}", f"localhost:{server.port}", f"[::1]:{server.port}"):
        status, body = server.get("/bugs/", host)
        assert status == 200 and b"BUG-20251109-002" in body, host
    port = server.port
    foreign = (f"evil.example:{port}", "evil.example", f"127.0.0.1.evil.example:{port}", ALLOWED)
    for host in foreign:
        status, body = server.get("/bugs/", host)
        assert status == 403, host
        assert b"BUG-" not in body and b"--allow-host" in body
    # the live-reload poll is refused too: it tells a page elsewhere when the KB changes
    assert server.get("/livereload/0/0", f"evil.example:{server.port}")[0] == 403


def test_allow_host_adds_a_name(project: Path) -> None:
    serving = Serve(project, "--allow-host", ALLOWED, "--allow-host", "10.0.0.7")
    try:
        for host in (ALLOWED, f"{ALLOWED.upper()}:{serving.port}", f"10.0.0.7:{serving.port}", "localhost"):
            assert serving.get("/bugs/", host)[0] == 200, host
        assert serving.get("/bugs/", f"evil.example:{serving.port}")[0] == 403
    finally:
        serving.stop()


def test_a_nul_in_the_path_is_a_bad_request(server: Serve) -> None:
    for target in ("/%00", "/bugs/%00/", "/index.html%00.png"):
        assert server.get(target)[0] == 400, target
    assert server.get("/bugs/")[0] == 200  # and the server goes on


def test_a_link_in_docs_to_a_file_outside_is_not_served(server: Serve) -> None:
    for target in ("/secret.txt", "/linked/more.txt"):
        status, body = server.get(target)
        assert status == 404 and SECRET.encode() not in body, target
    assert "secret.txt is left out of the site: a symbolic link to" in "".join(server.lines)
    # a link that stays inside docs/ is a page like any other
    status, body = server.get("/guide-link/")
    assert status == 200 and b"Getting started" in body


_NAME = st.text(st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="[]:"), max_size=30)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    path=st.binary(max_size=40).map(lambda b: "/" + urllib.parse.quote(b, safe="/")),
    name=st.one_of(_NAME, st.sampled_from(["127.0.0.1", "LocalHost", "localhost.", ALLOWED, "evil.example"])),
    port=st.one_of(st.just(""), st.integers(0, 99999).map(lambda n: f":{n}")),
)
def test_no_request_gets_a_server_error_or_an_answer_for_a_foreign_host(
    server: Serve, path: str, name: str, port: str
) -> None:
    if path.startswith("/livereload/"):
        path = "/x" + path  # a long poll answers only when the KB changes
    status, _ = server.get(path, name + port if name else None)
    assert status < 500, (path, name, port)
    if name and name.lower().rstrip(".") not in ("127.0.0.1", "localhost"):
        assert status in (400, 403), (path, name, port)
