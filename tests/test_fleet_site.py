"""The Fleet pages of the site, built with `mkdocs build --strict` as CI builds them."""

from __future__ import annotations

import os
import re
from pathlib import Path

from conftest import invoke
from fleet_fixtures import dumps, report
from site_kb import make_site_project, mkdocs_build


def ingest(project: Path, reports: list[dict]) -> None:
    paths = []
    for number, data in enumerate(reports):
        path = project / f"report-{number}.json"
        path.write_text(dumps(data))
        paths.append(str(path))
    cwd = Path.cwd()
    os.chdir(project)
    try:
        result = invoke("fleet", "ingest", *paths)
    finally:
        os.chdir(cwd)
    assert result.exit_code == 0, result.output


def test_fleet_page_marks_the_outlier_and_node_page_links_its_bugs(tmp_path: Path) -> None:
    project = make_site_project(tmp_path)
    ingest(project, [report("wsl-rtx3060"), report("gpu02", gpu={"driver": "535.1"}), report("gpu03")])
    built = mkdocs_build(project)
    assert built.returncode == 0, built.stderr
    fleet = (project / "site" / "fleet" / "index.html").read_text()
    assert "3 nodes, 1 with drift" in fleet
    assert "<strong>535.1</strong>" in fleet and "driver: differs from the fleet" in fleet
    node = (project / "site" / "fleet" / "wsl-rtx3060" / "index.html").read_text()
    assert 'href="../../bugs/BUG-20251109-002/"' in node
    assert "Bugs with this node" in node


def test_a_hostile_host_name_is_text_on_the_fleet_pages(tmp_path: Path) -> None:
    project = make_site_project(tmp_path)
    ingest(project, [report("<img src=x onerror=alert(1)>"), report("gpu02")])
    built = mkdocs_build(project)
    assert built.returncode == 0, built.stderr
    pages = [p.read_text() for p in (project / "site" / "fleet").rglob("index.html")]
    assert len(pages) == 3
    assert all("<img src=x" not in page for page in pages)
    assert any("&lt;img src=x onerror=alert(1)&gt;" in page for page in pages)


def test_without_nodes_there_is_no_fleet_page_and_with_them_it_joins_the_nav(tmp_path: Path) -> None:
    project = make_site_project(tmp_path)
    built = mkdocs_build(project)
    assert built.returncode == 0, built.stderr
    assert not (project / "site" / "fleet").exists()
    assert "Fleet" not in (project / "site" / "index.html").read_text()
    ingest(project, [report("gpu01"), report("gpu02")])
    built = mkdocs_build(project)  # strict, with a mkdocs.yml that names no Fleet page
    assert built.returncode == 0, built.stderr
    home = (project / "site" / "index.html").read_text()
    assert re.search(r'<a href="fleet/"[^>]*>\s*Fleet\s*</a>', home)
    node = (project / "site" / "fleet" / "gpu01" / "index.html").read_text()
    assert "<title>Node gpu01" in node and '<a href="../">Back to the fleet</a>' in node
