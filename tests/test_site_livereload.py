"""The site under a live server: edits to kb/ and templates/ reach the served pages."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conftest import KBGEN, PATIENCE, write_tree
from site_kb import TODAY, make_site_project

pytestmark = pytest.mark.slow
BUG = "kb/bugs/BUG-20251020-001.md"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def fetch(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return str(response.read().decode("utf-8"))
    except (urllib.error.URLError, OSError):
        return ""


def wait_until(check: Callable[[], bool], what: str, limit: float = PATIENCE) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {limit:.0f} s")


class Server:
    def __init__(self, project: Path, command: list[str], ready: tuple[str, str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log = project / "server.log"
        env = {**os.environ, "KBGEN_NOW": TODAY, "NO_MKDOCS_2_WARNING": "1"}
        with self.log.open("wb") as log:
            address = ["--dev-addr", f"127.0.0.1:{self.port}"]
            self.proc = subprocess.Popen([*command, *address], cwd=project, env=env, stdout=log, stderr=log)
        path, text = ready or ("bugs/BUG-20251020-001/", "BUG-20251020-001")
        wait_until(lambda: text in self.page(path), "first build served")

    def page(self, path: str) -> str:
        return fetch(self.url + path)

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> None:
        # As Ctrl+C, so the server removes its temporary folders; kbgen serve takes SIGTERM the
        # same way, which also works where SIGINT is ignored (a job started in the background).
        self.proc.send_signal(signal.SIGTERM if "kbgen" in self.proc.args else signal.SIGINT)
        try:
            self.proc.wait(timeout=30)  # a grace period, not an event: then it is killed
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[[list[str]], Server]]:
    project = make_site_project(tmp_path)
    # the team has customised one template: kbgen takes it over the packaged one
    write_tree(project, {"templates/page-tags.md.j2": "# Tags\n\n<!-- material/tags -->\n"})
    servers: list[Server] = []

    def start(command: list[str]) -> Server:
        servers.append(Server(project, command))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_mkdocs_serve_livereload_shows_an_edited_bug(serve: Callable[[list[str]], Server]) -> None:
    server = serve([sys.executable, "-m", "mkdocs", "serve", "--livereload"])
    page = server.page("bugs/BUG-20251020-001/")
    assert "livereload" in page  # the reload script is in the page: browsers refresh on change
    edit(server.log.parent / BUG, "in the embedding", "in the embedding table")
    wait_until(
        lambda: "Device-side assert in the embedding table" in server.page("bugs/BUG-20251020-001/"),
        "edited title served",
    )


def test_kbgen_serve_reloads_bugs_and_templates(serve: Callable[[list[str]], Server]) -> None:
    server = serve([*KBGEN, "serve"])
    project = server.log.parent
    assert "livereload" in server.page("bugs/")
    edit(project / BUG, "severity: medium", "severity: critical")
    wait_until(lambda: "kb-sev--critical" in server.page("bugs/BUG-20251020-001/"), "edited severity served")
    # only the pages that changed were rebuilt, yet search still knows every bug
    index = json.loads(server.page("search/search_index.json"))
    pages = {doc["location"].split("#")[0] for doc in index["docs"]}
    assert {"bugs/BUG-20251020-001/", "bugs/BUG-20251109-002/", "bugs/BUG-20251112-014/"} <= pages
    # saving a template rebuilds the pages made from it; a new override takes effect at once
    edit(project / "templates/page-tags.md.j2", "# Tags", "# Tags of our team")
    wait_until(lambda: "Tags of our team" in server.page("tags/"), "edited template served")
    write_tree(project, {"templates/page-probes.md.j2": "# Our probes\n"})
    wait_until(lambda: "Our probes" in server.page("probes/"), "new template served")


def test_kbgen_serve_rebuilds_once_per_save(serve: Callable[[list[str]], Server]) -> None:
    """The system tells kbgen serve of changes (no polling): one save is one rebuild, and the
    build reading kb/ is no change (each read rebuilding again would never stop)."""
    server = serve([*KBGEN, "serve"])
    assert "watching for changes by polling" not in server.output()
    builds = server.output().count("Documentation built in")
    edit(server.log.parent / BUG, "severity: medium", "severity: high")
    wait_until(lambda: "kb-sev--high" in server.page("bugs/BUG-20251020-001/"), "edited severity served")
    time.sleep(3)  # time for a second, unwanted rebuild to start and finish
    assert server.output().count("Documentation built in") == builds + 1, server.output()


def test_kbgen_serve_can_poll_for_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """$KBGEN_SERVE_POLL keeps mkdocs' polling watcher, for folders the system reports nothing of."""
    monkeypatch.setenv("KBGEN_SERVE_POLL", "1")
    project = make_site_project(tmp_path)
    server = Server(project, [*KBGEN, "serve"])
    try:
        assert "watching for changes by polling" in server.output()
        edit(project / BUG, "severity: medium", "severity: low")
        wait_until(lambda: "kb-sev--low" in server.page("bugs/BUG-20251020-001/"), "edited severity served")
    finally:
        server.stop()


def test_kbgen_serve_reports_a_broken_edit_until_it_is_fixed(serve: Callable[[list[str]], Server]) -> None:
    server = serve([*KBGEN, "serve"])
    edit(server.log.parent / BUG, "severity: medium", "severity: urgent")
    wait_until(lambda: f"{BUG}:7: severity: " in server.output(), "the problem reported with file and line")
    edit(server.log.parent / BUG, "severity: urgent", "severity: low")
    wait_until(lambda: "kb-sev--low" in server.page("bugs/BUG-20251020-001/"), "the fixed page served")


def problem(server: Server) -> str:
    text = server.page("kbgen-problem.json")
    return str(json.loads(text)["problem"]) if text else "(no answer)"


def test_kbgen_serve_keeps_answering_while_a_record_is_broken(serve: Callable[[list[str]], Server]) -> None:
    server = serve([*KBGEN, "serve"])
    broken = "kb/bugs/BUG-20251109-002.md"  # another bug names it under related:
    edit(server.log.parent / broken, "status: investigating", "status: investigatin")
    wait_until(lambda: f"{broken}:" in problem(server), "the problem published for the banner")
    assert "status: must be one of" in problem(server)
    # every page still answers at once, with the last good content
    started = time.monotonic()
    assert "kb-status--investigating" in server.page("bugs/BUG-20251109-002/")
    assert "BUG-20251112-014" in server.page("bugs/BUG-20251112-014/")
    assert time.monotonic() - started < 10
    # the bug that names the broken one is not blamed
    assert "BUG-20251112-014.md" not in server.output()
    assert "BUG-20251112-014.md" not in problem(server)
    edit(server.log.parent / broken, "status: investigatin", "status: confirmed")
    fixed = "kb-status--confirmed"
    wait_until(lambda: fixed in server.page("bugs/BUG-20251109-002/"), "the fixed page served")
    assert problem(server) == ""


def test_kbgen_serve_starts_with_a_broken_record_and_recovers(tmp_path: Path) -> None:
    project = make_site_project(tmp_path)
    broken = project / "kb/bugs/BUG-20251109-002.md"
    edit(broken, "status: investigating", "status: investigatin")
    server = Server(project, [*KBGEN, "serve"], ready=("", "cannot be published yet"))
    try:
        home = server.page("")
        assert "kb/bugs/BUG-20251109-002.md:" in home and "investigatin" in home
        assert "kb/bugs/BUG-20251109-002.md:" in problem(server)
        edit(broken, "status: investigatin", "status: investigating")
        wait_until(lambda: "BUG-20251109-002" in server.page("bugs/BUG-20251109-002/"), "the site served")
        assert problem(server) == ""
    finally:
        server.stop()


def test_kbgen_serve_shows_the_fleet_tab_on_every_page_after_the_first_ingest(
    serve: Callable[[list[str]], Server],
) -> None:
    from fleet_fixtures import dumps, report

    server = serve([*KBGEN, "serve"])
    project = server.log.parent
    assert "Fleet" not in server.page("bugs/BUG-20251020-001/")
    for host in ("gpu01", "gpu02"):
        (project / f"{host}.json").write_text(dumps(report(host)))
    ingest = subprocess.run(
        [*KBGEN, "fleet", "ingest", "gpu01.json", "gpu02.json"], cwd=project, capture_output=True
    )
    assert ingest.returncode == 0, ingest.stderr
    # a page whose own content did not change shows the new tab too, without a restart
    wait_until(
        lambda: 'href="../../fleet/"' in server.page("bugs/BUG-20251020-001/"), "Fleet tab on a bug page"
    )
    assert "gpu02" in server.page("fleet/")
