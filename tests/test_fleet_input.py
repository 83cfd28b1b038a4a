"""What reaches kb/fleet/ from outside (reports, host names, node files edited by hand) is checked:
every node keeps a file of its own, times carry their UTC offset, and a deep or non-finite value
is one clear problem of its file."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import base_kb_files, invoke, run, write_tree
from fleet_fixtures import dumps, report
from site_kb import make_site_project, mkdocs_build

FLEET = Path("kb/fleet")


def ingest(root: Path, *reports: dict, names: list[str] | None = None) -> tuple[int, str]:
    folder = root / "reports"
    folder.mkdir(exist_ok=True)
    paths = []
    for number, data in enumerate(reports):
        path = folder / (names[number] if names else f"report-{number}.json")
        path.write_text(dumps(data))
        paths.append(str(path.relative_to(root)))
    return run("--kb", str(root), "fleet", "ingest", *paths)


def show_json(root: Path) -> tuple[dict, str]:
    result = invoke("--kb", str(root), "fleet", "show", "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout, parse_constant=_no_constant), result.stderr


def _no_constant(text: str) -> None:
    raise AssertionError(f"show --json printed {text}, which is not JSON")


def drivers(root: Path) -> dict[str, str]:
    data, _ = show_json(root)
    return {node["host"]: node["facts"]["driver"] for node in data["nodes"]}


# --------------------------------------------------------------------------- one file per node


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("gpu/01", "gpu_01"),
        (".", ".."),
        ("..", ""),
        ("a" * 100 + "-one", "a" * 100 + "-two"),
        ("index", "gpu02"),
    ],
)
def test_nodes_whose_names_differ_keep_a_file_each(kb_project: Path, first: str, second: str) -> None:
    code, out = ingest(
        kb_project, report(first, gpu={"driver": "550.1"}), report(second, gpu={"driver": "535.1"})
    )
    assert code == 0, out
    assert drivers(kb_project) == {first: "550.1", second: "535.1"}
    files = sorted((kb_project / FLEET).iterdir())
    assert len(files) == 2
    assert all(p.parent == kb_project / FLEET and p.suffix == ".json" for p in files)
    assert all(p.stem not in ("", ".", "..", "index") for p in files)


@pytest.mark.slow
def test_the_site_has_a_page_per_node_beside_the_fleet_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_site_project(tmp_path / "project")
    monkeypatch.chdir(project)
    assert (
        ingest(project, report("gpu/01"), report("gpu_01", gpu={"driver": "535.1"}), report("index"))[0] == 0
    )
    built = mkdocs_build(project)
    assert built.returncode == 0, built.stderr
    fleet = project / "site" / "fleet"
    assert "3 nodes, 1 with drift" in (fleet / "index.html").read_text()
    titles = sorted(
        page.read_text().split("<title>Node ", 1)[1].split(" ", 1)[0] for page in fleet.glob("*/index.html")
    )
    assert titles == ["gpu/01", "gpu_01", "index"]


def test_a_node_file_an_older_kbgen_named_is_kept_and_moved(kb_project: Path) -> None:
    """Before, ``gpu/01`` was stored as gpu_01.json, the name the node ``gpu_01`` has now."""
    assert ingest(kb_project, report("gpu/01", when="2026-11-01T10:00:00+00:00"))[0] == 0
    stored = next((kb_project / FLEET).iterdir())
    stored.rename(stored.with_name("gpu_01.json"))  # where an older kbgen put it
    code, out = ingest(
        kb_project,
        report("gpu_01", gpu={"driver": "535.1"}),
        report("gpu/01", when="2026-11-20T10:00:00+00:00", gpu={"driver": "560.1"}),
    )
    assert code == 0, out
    assert drivers(kb_project) == {"gpu/01": "560.1", "gpu_01": "535.1"}
    names = {p.name for p in (kb_project / FLEET).iterdir()}
    assert len(names) == 2 and "gpu_01.json" in names
    [moved] = names - {"gpu_01.json"}
    history = json.loads((kb_project / FLEET / moved).read_text())["history"]
    assert [h["facts"]["driver"] for h in history] == ["550.54.15", "560.1"]


def test_ingest_says_which_of_two_reports_for_a_node_it_kept(kb_project: Path) -> None:
    new = report("gpu/01", when="2026-11-20T10:00:00+00:00", gpu={"driver": "560.1"})
    old = report("gpu/01", when="2026-11-01T09:00:00-05:00", gpu={"driver": "535.1"})
    code, out = ingest(kb_project, new, old, names=["new.json", "old.json"])
    assert code == 0, out
    assert out.splitlines()[0] == (
        "gpu/01: 2 reports (reports/new.json, reports/old.json); kept reports/new.json"
        " (collected 2026-11-20T10:00:00+00:00, the newest; of equal times, the one named last)"
    )
    assert drivers(kb_project) == {"gpu/01": "560.1"}
    older = report("gpu/01", when="2026-10-01T10:00:00+00:00")
    code, out = ingest(kb_project, older, names=["older.json"])
    assert code == 0, out
    assert out.splitlines()[0] == (
        "gpu/01: kept its stored report (collected 2026-11-20T10:00:00+00:00), newer than reports/older.json"
    )
    assert drivers(kb_project) == {"gpu/01": "560.1"}


# --------------------------------------------------------------------------- times


def test_a_time_without_a_utc_offset_is_refused(kb_project: Path) -> None:
    assert ingest(kb_project, report("gpu01"))[0] == 0
    before = (kb_project / FLEET / "gpu01.json").read_bytes()
    code, out = ingest(kb_project, report("gpu01", when="2026-11-21T10:00:00"), names=["naive.json"])
    assert code == 1
    assert out.startswith(
        "Error: reports/naive.json: not a `kbgen probe --json` report: collected_at: "
        "needs a UTC offset (e.g. +00:00)\n"
    )
    assert (kb_project / FLEET / "gpu01.json").read_bytes() == before
    code, out = ingest(kb_project, report("gpu02", when="2026-11-21T10:00:00"), names=["naive.json"])
    assert code == 1 and "collected_at: needs a UTC offset (e.g. +00:00)" in out
    assert not (kb_project / FLEET / "gpu02.json").exists()


def _edit_node_file(root: Path, node: str, old: str, new: str) -> None:
    path = root / FLEET / f"{node}.json"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_a_node_file_with_a_time_without_offset_is_a_warning_of_that_file(kb_project: Path) -> None:
    assert ingest(kb_project, report("gpu01"), report("gpu02"))[0] == 0
    _edit_node_file(kb_project, "gpu02", '"2026-11-20T10:00:00Z"', '"2026-11-20T10:00:00"')
    data, warnings = show_json(kb_project)
    assert [n["host"] for n in data["nodes"]] == ["gpu01"]
    assert warnings == (
        "warning: kb/fleet/gpu02.json: collected_at: needs a UTC offset (e.g. +00:00)\n"
        "  hint: delete it and probe again\n"
    )


@pytest.mark.slow
def test_the_site_builds_with_a_node_file_whose_time_has_no_offset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_site_project(tmp_path / "project")
    monkeypatch.chdir(project)
    assert ingest(project, report("gpu01"), report("gpu02"))[0] == 0
    _edit_node_file(project, "gpu02", '"2026-11-20T10:00:00Z"', '"2026-11-20T10:00:00"')
    built = mkdocs_build(project, "--no-strict")
    assert built.returncode == 0, built.stderr
    assert "Traceback" not in built.stderr
    page = (project / "site" / "fleet" / "index.html").read_text()
    assert "kb/fleet/gpu02.json" in page and "needs a UTC offset" in page


# --------------------------------------------------------------------------- nesting and numbers


def test_a_deeply_nested_report_is_one_clear_error(kb_project: Path) -> None:
    data = report("gpu01")
    text = dumps(data).replace('"arch_ok": true', '"arch_ok": ' + "[" * 100_000 + "]" * 100_000)
    (kb_project / "deep.json").write_text(text)
    code, out = run("fleet", "ingest", "deep.json")
    assert code == 1
    assert out == "Error: deep.json: not JSON kbgen reads: nested more than 32 levels\n"
    assert not (kb_project / FLEET).exists()


def test_a_node_file_nested_too_deep_is_a_warning(kb_project: Path) -> None:
    assert ingest(kb_project, report("gpu01"), report("gpu02"))[0] == 0
    _edit_node_file(
        kb_project, "gpu02", '"facts": {', '"deep": ' + "[" * 50_000 + "]" * 50_000 + ', "facts": {'
    )
    data, warnings = show_json(kb_project)
    assert [n["host"] for n in data["nodes"]] == ["gpu01"]
    assert warnings.startswith("warning: kb/fleet/gpu02.json: not JSON kbgen reads: nested more than 32")


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_a_non_finite_number_in_a_node_file_is_a_warning_and_show_prints_json(
    kb_project: Path, value: str
) -> None:
    assert ingest(kb_project, report("gpu01"), report("gpu02"))[0] == 0
    _edit_node_file(kb_project, "gpu02", '"ecc_uncorrected": 0', f'"ecc_uncorrected": {value}')
    data, warnings = show_json(kb_project)
    assert [n["host"] for n in data["nodes"]] == ["gpu01"]
    assert warnings.startswith("warning: kb/fleet/gpu02.json: not JSON kbgen reads: ")
    assert value.lstrip("-") in warnings


def test_a_non_finite_number_in_a_report_is_refused(kb_project: Path) -> None:
    text = dumps(report("gpu01")).replace('"ecc_uncorrected": 0', '"ecc_uncorrected": NaN')
    (kb_project / "nan.json").write_text(text)
    code, out = run("fleet", "ingest", "nan.json")
    assert code == 1
    assert out == "Error: nan.json: not JSON kbgen reads: NaN is not a number JSON allows\n"
    assert not (kb_project / FLEET).exists()


# --------------------------------------------------------------------------- property

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=30))
shapes = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=20,
)
host_names = st.one_of(
    st.text(max_size=130),
    st.sampled_from([".", "..", "", "/", "../..", "a/../../b", "index", "gpu01", "GPU01", "x" * 300]),
)


@st.composite
def report_texts(draw: st.DrawFn) -> str:
    """A report, a report with odd facts, any JSON shape, deep nesting, or random bytes."""
    kind = draw(st.sampled_from(["report", "shape", "deep", "bytes"]))
    if kind == "report":
        when = draw(st.sampled_from(["2026-11-20T10:00:00+02:00", "2026-11-20T10:00:00", "2026-11-20"]))
        data = report(draw(host_names), when=when)
        data["results"][0]["facts"].update(draw(st.dictionaries(st.text(max_size=10), shapes, max_size=3)))
        return json.dumps(data)
    if kind == "shape":
        return json.dumps(draw(shapes))
    if kind == "deep":
        depth = draw(st.one_of(st.integers(0, 40), st.integers(900, 60_000)))
        opener, closer = draw(st.sampled_from([("[", "]"), ('{"a":', "}")]))
        return opener * depth + "1" + closer * depth
    return draw(st.binary(max_size=300)).decode("utf-8", "replace")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(report_texts(), min_size=1, max_size=3))
def test_ingest_never_fails_and_writes_only_node_files(texts: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = write_tree(Path(folder) / "project", base_kb_files())
        names = []
        for number, text in enumerate(texts):
            path = root / "reports" / f"r{number}.json"
            path.parent.mkdir(exist_ok=True)
            path.write_text(text, encoding="utf-8")
            names.append(str(path))
        before = {p for p in Path(folder).rglob("*") if p.is_file()}
        result = invoke("--kb", str(root), "fleet", "ingest", *names)  # fails the test on a traceback
        assert result.exit_code in (0, 1), result.output
        written = {p for p in Path(folder).rglob("*") if p.is_file()} - before
        assert all(p.parent == root / FLEET and p.suffix == ".json" for p in written), written
        shown = invoke("--kb", str(root), "fleet", "show", "--json")
        assert shown.exit_code == 0, shown.output
        json.loads(shown.stdout, parse_constant=_no_constant)
