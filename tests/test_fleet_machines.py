"""Two machines that give one host name (a re-installed node, two containers on one host) stay
two rows in `kbgen fleet show` and on the Fleet page, each saying which it is; a node whose torch
is missing drifts on a GPU fleet. As a user meets them: CLI output, node files, built pages."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from conftest import invoke
from fleet_fixtures import dumps, report
from site_kb import make_site_project, mkdocs_build

OLD_MACHINE = "1a2b3c4d5e6f"
NEW_MACHINE = "9f8e7d6c5b4a"


def ingest(root: Path, *reports: dict[str, Any]) -> str:
    folder = root / "reports"
    folder.mkdir(exist_ok=True)
    paths = []
    for data in reports:
        path = folder / f"report-{len(list(folder.iterdir()))}.json"
        path.write_text(dumps(data))
        paths.append(str(path))
    result = invoke("--kb", str(root), "fleet", "ingest", *paths)
    assert result.exit_code == 0, result.output
    return result.output


def show(root: Path) -> str:
    result = invoke("--kb", str(root), "fleet", "show")
    assert result.exit_code == 0, result.output
    return result.output


def show_json(root: Path) -> list[dict[str, Any]]:
    result = invoke("--kb", str(root), "fleet", "show", "--json")
    assert result.exit_code == 0, result.output
    nodes: list[dict[str, Any]] = json.loads(result.stdout)["nodes"]
    return nodes


def on(
    machine: str, host: str = "gpu07", when: str = "2026-11-20T10:00:00+00:00", **facts: Any
) -> dict[str, Any]:
    return report(host, when=when, system={"machine_id": machine, **facts})


def no_torch(host: str) -> dict[str, Any]:
    """A report of a node whose Python has no torch: the torch probes did not run."""
    data = report(host)
    data["results"] = [r for r in data["results"] if r["id"] not in ("torch-build", "compat")]
    data["torch_import"] = {"status": "missing", "message": "No module named 'torch'"}
    return data


def test_a_reinstalled_node_keeps_both_reports_and_says_which_is_newest(kb_project: Path) -> None:
    ingest(kb_project, on(OLD_MACHINE, when="2026-11-01T10:00:00+00:00", kernel="5.15.0-1-generic"))
    ingest(kb_project, on(NEW_MACHINE), report("gpu08"))
    nodes = show_json(kb_project)
    assert [(n["host"], n["machine"], n["other"]) for n in nodes] == [
        ("gpu07", NEW_MACHINE, False),
        ("gpu07", OLD_MACHINE, True),
        ("gpu08", "", False),
    ]
    assert nodes[1]["facts"]["kernel"] == "5.15.0-1-generic"
    assert nodes[1]["collected_at"].startswith("2026-11-01")
    out = show(kb_project)
    assert re.search(rf"^gpu07 \[{NEW_MACHINE}\] +ok ", out, re.M), out
    assert re.search(rf"^gpu07 \[{OLD_MACHINE}\] +ok ", out, re.M), out
    assert f"gpu07 [{NEW_MACHINE}]: 2 machines under this host name; this one sent the newest report" in out
    assert (
        f"gpu07 [{OLD_MACHINE}]: another machine under this host name (a re-installed node, a second "
        f"container); the newest report is machine {NEW_MACHINE}'s"
    ) in out
    node = json.loads((kb_project / "kb" / "fleet" / "gpu07.json").read_text())
    assert node["machine"] == NEW_MACHINE and [o["machine"] for o in node["others"]] == [OLD_MACHINE]
    # the node's own report is the newest machine's: probe --fill --from-fleet takes it
    assert node["report"]["collected_at"].startswith("2026-11-20")


def test_an_older_report_of_another_machine_is_kept_beside_the_newer(kb_project: Path) -> None:
    ingest(kb_project, on(NEW_MACHINE))
    ingest(kb_project, on(OLD_MACHINE, when="2026-11-01T10:00:00+00:00"))
    assert [(n["machine"], n["other"]) for n in show_json(kb_project)] == [
        (NEW_MACHINE, False),
        (OLD_MACHINE, True),
    ]
    ingest(kb_project, on(OLD_MACHINE, when="2026-11-21T10:00:00+00:00"))  # it reports again, newest now
    assert [(n["machine"], n["other"]) for n in show_json(kb_project)] == [
        (OLD_MACHINE, False),
        (NEW_MACHINE, True),
    ]


def test_two_containers_on_one_host_are_two_rows(kb_project: Path) -> None:
    one = on(OLD_MACHINE, container="docker", container_id="aaaaaaaaaaaa")
    two = on(OLD_MACHINE, when="2026-11-20T10:05:00+00:00", container="docker", container_id="bbbbbbbbbbbb")
    ingest(kb_project, one, two)
    assert [n["machine"] for n in show_json(kb_project)] == [
        f"{OLD_MACHINE}/bbbbbbbbbbbb",
        f"{OLD_MACHINE}/aaaaaaaaaaaa",
    ]


def test_one_machine_reporting_again_stays_one_row(kb_project: Path) -> None:
    ingest(kb_project, report("gpu07", when="2026-10-01T10:00:00+00:00"))  # a kbgen without machine ids
    ingest(kb_project, on(OLD_MACHINE, when="2026-11-01T10:00:00+00:00"))
    ingest(kb_project, on(OLD_MACHINE))
    nodes = show_json(kb_project)
    assert [(n["host"], n["machine"], n["shared"]) for n in nodes] == [("gpu07", "", "")]
    assert "machines under this host name" not in show(kb_project)


def test_a_hostile_machine_id_says_nothing(kb_project: Path) -> None:
    ingest(kb_project, on("../../\x1b[31m" + "a" * 5000))
    ingest(kb_project, on(NEW_MACHINE, when="2026-11-21T10:00:00+00:00"))
    assert [(n["machine"], n["other"]) for n in show_json(kb_project)] == [("", False)]
    assert [p.name for p in (kb_project / "kb" / "fleet").iterdir()] == ["gpu07.json"]


def test_a_node_without_torch_drifts_on_a_gpu_fleet(kb_project: Path) -> None:
    ingest(kb_project, report("gpu01"), report("gpu02"), no_torch("gpu03"))
    nodes = {n["host"]: n for n in show_json(kb_project)}
    assert nodes["gpu03"]["drift"] == [
        {
            "fact": "torch",
            "value": "none",
            "majority": "2.5.1+cu124",
            "reason": "no torch installed: no torch on a GPU fleet",
        }
    ]
    assert nodes["gpu01"]["drift"] == []
    out = show(kb_project)
    assert "3 nodes, 1 with drift" in out
    assert re.search(r"^gpu03 .* - \* .*torch: no torch installed: no torch on a GPU fleet$", out, re.M), out
    failed = invoke("--kb", str(kb_project), "fleet", "show", "--fail-on", "drift")
    assert failed.exit_code == 1


def test_without_gpus_a_node_without_torch_is_no_drift(kb_project: Path) -> None:
    cpu = [no_torch(h) for h in ("login1", "login2")]
    for data in cpu:
        data["results"] = [r for r in data["results"] if r["id"] != "gpu"]
    ingest(kb_project, *cpu)
    assert [n["drift"] for n in show_json(kb_project)] == [[], []]


def test_the_fleet_page_shows_both_machines_and_the_node_without_torch(tmp_path: Path) -> None:
    project = make_site_project(tmp_path)
    ingest(project, on(OLD_MACHINE, when="2026-11-01T10:00:00+00:00"))
    ingest(project, on(NEW_MACHINE), report("gpu08"), no_torch("gpu09"))
    built = mkdocs_build(project)
    assert built.returncode == 0, built.stderr
    fleet = (project / "site" / "fleet" / "index.html").read_text()
    assert "4 nodes, 1 with drift" in fleet
    assert f'<a href="gpu07/">gpu07</a> <code>{NEW_MACHINE}</code>' in fleet
    assert re.search(
        rf'<a href="gpu07_{OLD_MACHINE}--[0-9a-f]{{16}}/">gpu07</a> <code>{OLD_MACHINE}</code>', fleet
    )
    assert "Host names that several machines gave" in fleet
    assert f"the newest report is machine {NEW_MACHINE}" in fleet
    assert "torch: no torch installed: no torch on a GPU fleet" in fleet
    [other] = [p for p in (project / "site" / "fleet").iterdir() if p.name.startswith(f"gpu07_{OLD_MACHINE}")]
    page = (other / "index.html").read_text()
    assert f"<title>Node gpu07 (machine {OLD_MACHINE})" in page
    assert "a re-installed node, a second container" in page


def test_the_system_probe_names_the_machine_by_a_digest_of_its_id(kb_project: Path) -> None:
    raw = Path("/etc/machine-id").read_text().strip() if Path("/etc/machine-id").is_file() else ""
    if not re.fullmatch(r"[0-9a-f]{32}", raw):
        pytest.skip("this machine has no /etc/machine-id")
    result = invoke("probe", "--json", "system")
    assert result.exit_code == 0, result.output
    assert raw not in result.stdout  # the machine's own id never leaves it
    (kb_project / "me.json").write_text(result.stdout)
    assert invoke("fleet", "ingest", "me.json").exit_code == 0
    [node] = show_json(kb_project)
    digest = hashlib.sha256(f"kbgen-machine:{raw}".encode()).hexdigest()[:12]
    assert node["facts"]["machine_id"] == digest
    stored = json.loads(next((kb_project / "kb" / "fleet").iterdir()).read_text())
    assert stored["machine"].split("/")[0] == digest
