"""kbgen fleet ingest / show and probe --from-fleet, as a user meets them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from conftest import run
from fleet_fixtures import dumps, report


def write_reports(root: Path, reports: list[dict]) -> list[str]:
    folder = root / "reports"
    folder.mkdir(exist_ok=True)
    names = []
    for data in reports:
        path = folder / f"{data['host'].replace('/', '_')}-{data['collected_at'][:10]}.json"
        path.write_text(dumps(data))
        names.append(str(path))
    return names


def show_json(*extra: str) -> dict:
    code, out = run("fleet", "show", "--json", *extra)
    assert code == 0, out
    return json.loads(out)


def drift_of(data: dict) -> dict[str, list[dict]]:
    return {node["host"]: node["drift"] for node in data["nodes"]}


def test_ingest_marks_the_node_with_another_driver_and_the_cpu_only_one(kb_project: Path) -> None:
    files = write_reports(
        kb_project,
        [
            report("gpu01"),
            report("gpu02", gpu={"driver": "535.104.05", "driver_cuda": "12.2"}),
            report("gpu03", torch_build={"version": "2.5.1+cpu", "cuda": None, "cpu_only": True}),
            report("gpu04"),
        ],
    )
    code, out = run("fleet", "ingest", *files)
    assert code == 0 and "merged 4 reports" in out
    drift = drift_of(show_json())
    assert drift["gpu01"] == [] and drift["gpu04"] == []
    assert {(d["fact"], d["value"], d["majority"]) for d in drift["gpu02"]} == {
        ("driver", "535.104.05", "550.54.15"),
        ("driver_cuda", "12.2", "12.4"),
    }
    facts = {d["fact"] for d in drift["gpu03"]}
    assert {"torch", "cpu_only"} <= facts
    assert "cuda_runtime" not in {d["fact"] for d in drift["gpu01"]}


def test_show_prints_a_table_and_fails_on_drift_when_asked(kb_project: Path) -> None:
    run(
        "fleet",
        "ingest",
        *write_reports(kb_project, [report("a"), report("b"), report("c", gpu={"driver": "1"})]),
    )
    code, out = run("fleet", "show")
    assert code == 0
    row = next(line for line in out.splitlines() if line.startswith("c "))
    assert "1 *" in row and "driver: differs from the fleet" in row
    assert "3 nodes, 1 with drift" in out
    assert run("fleet", "show", "--fail-on", "drift")[0] == 1


def test_an_agreeing_fleet_passes_the_drift_gate(kb_project: Path) -> None:
    run("fleet", "ingest", *write_reports(kb_project, [report("a"), report("b"), report("c")]))
    assert run("fleet", "show", "--fail-on", "drift")[0] == 0


def test_health_marks_need_no_majority(kb_project: Path) -> None:
    reports = [
        report("ecc", gpu={"ecc_uncorrected": 2}),
        report("xid", gpu_health={"xid_events": 3}),
        report("nogpu", gpu={"count": 0}),
        report("oldarch", compat={"arch_ok": False}, gpu={"capability": "12.0"}),
        report("fine"),
    ]
    run("fleet", "ingest", *write_reports(kb_project, reports))
    drift = drift_of(show_json())
    assert [d["fact"] for d in drift["ecc"]] == ["ecc_uncorrected"]
    assert [d["fact"] for d in drift["xid"]] == ["xid_events"]
    assert [(d["fact"], d["value"], d["majority"]) for d in drift["nogpu"]] == [("gpu_count", 0, 8)]
    assert [(d["fact"], d["value"]) for d in drift["oldarch"]] == [("capability", "12.0")]
    assert drift["fine"] == []


def test_newest_report_wins_and_history_keeps_both(kb_project: Path) -> None:
    new = report("n1", when="2026-11-20T10:00:00+00:00", gpu={"driver": "560.1"})
    old = report("n1", when="2026-11-01T10:00:00+00:00", gpu={"driver": "535.1"})
    run("fleet", "ingest", *write_reports(kb_project, [new]))
    run("fleet", "ingest", *write_reports(kb_project, [old]))
    node = json.loads((kb_project / "kb" / "fleet" / "n1.json").read_text())
    assert node["report"]["collected_at"].startswith("2026-11-20")
    assert [h["facts"]["driver"] for h in node["history"]] == ["535.1", "560.1"]
    assert show_json()["nodes"][0]["facts"]["driver"] == "560.1"


def test_secrets_in_a_report_never_reach_the_fleet_folder(kb_project: Path) -> None:
    data = report(
        "leaky", debug_env={"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz0123", "CUDA_LAUNCH_BLOCKING": "1"}
    )
    data["results"][0]["message"] = "token ghp_abcdefghijklmnopqrstuvwxyz012345 seen"
    run("fleet", "ingest", *write_reports(kb_project, [data]))
    text = (kb_project / "kb" / "fleet" / "leaky.json").read_text()
    assert "hf_abcdefghij" not in text and "ghp_abcdefghij" not in text
    assert '"CUDA_LAUNCH_BLOCKING": "1"' in text


def test_a_hostile_host_name_stays_inside_the_fleet_folder(kb_project: Path) -> None:
    data = report("../../kb/bugs/BUG-20251109-002.md\x1b[31m")
    before = (kb_project / "kb" / "bugs" / "BUG-20251109-002.md").read_bytes()
    run("fleet", "ingest", *write_reports(kb_project, [data]))
    assert (kb_project / "kb" / "bugs" / "BUG-20251109-002.md").read_bytes() == before
    assert [p.parent.name for p in (kb_project / "kb").rglob("*.json")] == ["fleet"]
    code, out = run("fleet", "show")
    assert code == 0 and "\x1b" not in out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "reports/bad.json:1: not JSON"),
        ('{"host": "x"}', "reports/bad.json: not a `kbgen probe --json` report"),
    ],
)
def test_a_file_that_is_not_a_report_is_one_clear_error(kb_project: Path, content: str, message: str) -> None:
    (kb_project / "reports").mkdir()
    (kb_project / "reports" / "bad.json").write_text(content)
    code, out = run("fleet", "ingest", "reports/bad.json")
    assert code == 1 and message in out and "Traceback" not in out
    assert not (kb_project / "kb" / "fleet").exists()


def test_probe_fill_from_fleet_takes_the_nodes_facts(kb_project: Path) -> None:
    run("fleet", "ingest", *write_reports(kb_project, [report("gpu07")]))
    code, out = run("probe", "--fill", "BUG-20251109-002", "--from-fleet", "gpu07")
    assert code == 0, out
    text = (kb_project / "kb" / "bugs" / "BUG-20251109-002.md").read_text()
    meta = yaml.safe_load(text.split("---\n")[1])
    assert "550.54.15" in json.dumps(meta, default=str)
    assert "gpu07" in json.dumps(meta, default=str)
    assert "Training died in the loss." in text


def test_from_fleet_names_the_known_nodes_when_one_is_missing(kb_project: Path) -> None:
    run("fleet", "ingest", *write_reports(kb_project, [report("gpu07")]))
    code, out = run("probe", "--fill", "BUG-20251109-002", "--from-fleet", "gpu99")
    assert code == 1 and "no fleet report for node 'gpu99'" in out and "gpu07" in out


def test_a_node_running_another_container_image_drifts(kb_project: Path) -> None:
    image = "nvcr.io/nvidia/pytorch:24.01"
    reports = [report(h, system={"container": "docker", "container_image": image}) for h in ("a", "b")]
    reports.append(
        report("c", system={"container": "docker", "container_image": "nvcr.io/nvidia/pytorch:23.10"})
    )
    run("fleet", "ingest", *write_reports(kb_project, reports))
    drift = drift_of(show_json())
    assert drift["a"] == [] and drift["b"] == []
    assert [(d["fact"], d["value"], d["majority"]) for d in drift["c"]] == [
        ("container", "nvcr.io/nvidia/pytorch:23.10", image)
    ]


def test_a_fifo_or_a_huge_file_is_refused_without_reading_it(kb_project: Path) -> None:
    os.mkfifo(kb_project / "pipe.json")  # reading it would wait for a writer forever
    code, out = run("fleet", "ingest", "pipe.json")
    assert code == 1 and "pipe.json: a named pipe (FIFO), not a regular file" in out
    with (kb_project / "huge.json").open("wb") as handle:
        handle.truncate(9_000_000)
    code, out = run("fleet", "ingest", "huge.json")
    assert code == 1 and "huge.json: a probe report is 9,000,000 bytes; kbgen reads at most 8,388,608" in out
    assert not (kb_project / "kb" / "fleet").exists()
