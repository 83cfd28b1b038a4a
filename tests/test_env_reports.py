"""Environment reports pasted as text: `kbgen env`, triage's environment, the shared judge, the
data files, pasted environments on import and new-bug, and the figures on real reports."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import invoke, run
from kbgen import envdata
from kbgen.envreport import environment_of, parse
from kbgen.envreport.measure import measure
from kbgen.judge import judge
from kbgen.probes.build import build_report
from kbgen.probes.discovery import discover
from kbgen.probes.record import ProbeRun, RawResult
from kbgen.store import Kb, find_project, load_kb

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "env-reports"
DATA2 = REPO / "tests" / "data" / "env-reports-heldout2"
DATA3 = REPO / "tests" / "data" / "env-reports-heldout3"
DATA4 = REPO / "tests" / "data" / "env-reports-heldout4"
MANIFEST = json.loads((DATA / "manifest.json").read_text())

#: first measured once on the held-out third (facts 0.945, causes 0.793, controls 1.0) after the
#: parser and the judge were written on the rest; its misses were then read and fixed, so both
#: splits are tuning data now and these floors are what the tuned rules reach on each. A figure
#: on reports no rule was written for needs a new held-out set.
HELDOUT_FLOORS = {"facts": 1.0, "causes": 1.0, "controls": 1.0}
TUNE_FLOORS = {"facts": 0.993, "causes": 0.975, "controls": 1.0}
#: the second held-out set, gathered while the rules above were tuned, measured once afterwards
#: (facts 157/179, causes 24/29, controls 17/17: its README has them with the misses); the misses
#: were then read and fixed, so it is tuning data too and these floors are what the rules reach.
HELDOUT2_FLOORS = {"facts": 178 / 179, "causes": 27 / 29, "controls": 1.0}
#: the third held-out set, measured once after the tuning on the second (facts 95/109, causes
#: 22/30, controls 11/11: its README has them with the misses); tuned on since, as the second.
HELDOUT3_FLOORS = {"facts": 1.0, "causes": 29 / 30, "controls": 1.0}
#: the fourth held-out set, from settings the others lacked (other tools' reports, Jetson, GPU
#: monitors), measured once after the tuning on the third: the measured figures
HELDOUT4_FLOORS = {"facts": 39 / 90, "causes": 5 / 21, "controls": 1.0}

COLLECT_ENV = """\
Collecting environment information...
PyTorch version: 2.5.1+cu124
Is debug build: False
CUDA used to build PyTorch: 12.4
ROCM used to build PyTorch: N/A

OS: Ubuntu 22.04.4 LTS (x86_64)
Python version: 3.11.9 (main, Apr 19 2024, 16:48:06) [GCC 11.2.0] (64-bit runtime)
Is CUDA available: True
GPU models and configuration: GPU 0: NVIDIA GeForce RTX 5090
Nvidia driver version: 570.124.06
"""


def newest_bug(root: Path) -> str:
    return max((root / "kb" / "bugs").glob("*.md"), key=lambda p: p.stat().st_mtime_ns).read_text()


@pytest.fixture(scope="module")
def shipped_kb() -> Kb:
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("KBGEN_BASE", raising=False)
        return load_kb(find_project(REPO))


# --------------------------------------------------------------------------- the data set


def test_reports_are_sourced_split_by_url_and_new() -> None:
    assert len(MANIFEST) >= 100
    used = "\n".join(p.read_text() for p in (REPO / "tests" / "data").glob("logs*/manifest.json"))
    causes = {p.stem for p in (REPO / "src" / "kbgen" / "knowledge" / "causes").glob("*.md")}
    for item in MANIFEST:
        assert (DATA / item["file"]).is_file(), item["id"]
        assert item["source"].startswith("https://github.com/") and item["source"] not in used
        assert item["cause"] in causes | {"control"}, item["id"]
        heldout = int(hashlib.sha256(item["source"].encode()).hexdigest(), 16) % 3 == 0
        assert item["split"] == ("heldout" if heldout else "tune"), item["id"]
    assert sum(item["cause"] == "control" for item in MANIFEST) >= 30


@pytest.mark.parametrize(("data", "split"), [(DATA2, "heldout2"), (DATA3, "heldout3"), (DATA4, "heldout4")])
def test_later_held_out_sets_are_new_threads(data: Path, split: str) -> None:
    """Each later set is its own threads: none in an earlier set or a log set, none twice."""
    items = json.loads((data / "manifest.json").read_text())
    others = [DATA, DATA2, DATA3, DATA4]
    earlier = {
        i["source"]
        for d in others[: others.index(data)]
        for i in json.loads((d / "manifest.json").read_text())
    }
    used = "\n".join(p.read_text() for p in (REPO / "tests" / "data").glob("logs*/manifest.json"))
    causes = {p.stem for p in (REPO / "src" / "kbgen" / "knowledge" / "causes").glob("*.md")}
    sources = [item["source"] for item in items]
    assert len(sources) == len(set(sources)) and not set(sources) & earlier
    for item in items:
        assert item["split"] == split and (data / item["file"]).is_file(), item["id"]
        assert item["source"].startswith("https://github.com/") and item["source"] not in used
        assert item["cause"] in causes | {"control"}, item["id"]


@pytest.mark.parametrize(
    ("data", "split", "floors"),
    [
        (DATA, "heldout", HELDOUT_FLOORS),
        (DATA, "tune", TUNE_FLOORS),
        (DATA2, "heldout2", HELDOUT2_FLOORS),
        (DATA3, "heldout3", HELDOUT3_FLOORS),
        (DATA4, "heldout4", HELDOUT4_FLOORS),
    ],
)
def test_figures_hold_their_floors(shipped_kb: Kb, data: Path, split: str, floors: dict[str, float]) -> None:
    figures = measure(data, shipped_kb, split)
    misses = figures.line() + "\n" + "\n".join(figures.misses)
    assert figures.ratio("facts") >= floors["facts"], misses
    assert figures.ratio("causes") >= floors["causes"], misses
    assert figures.ratio("controls") >= floors["controls"], misses


# --------------------------------------------------------------------------- kbgen env


def test_env_reads_collect_env_and_names_the_fix(tmp_path: Path) -> None:
    report = tmp_path / "report.txt"
    report.write_text("Traceback ...\nRuntimeError: CUDA error: no kernel image\n" + COLLECT_ENV)
    code, out = run("env", str(report))
    assert code == 0
    lines = {line.split()[0]: line.split(None, 1)[1] for line in out.splitlines() if line.startswith("  ")}
    assert lines["torch-build.version"] == "2.5.1+cu124"
    assert lines["gpu.capability"] == "12.0  (derived: NVIDIA's list, by GPU name)"
    assert "FAIL gpu-arch: the NVIDIA GeForce RTX 5090 is sm_120; torch 2.5.1+cu124 is built for" in out
    assert "[arch-list-missing-gpu-capability]" in out


def test_env_json_from_stdin_has_facts_and_verdicts() -> None:
    result = invoke("env", "--json", "-", input=COLLECT_ENV)
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["facts"]["torch-build.cuda"] == "12.4"
    assert data["facts"]["gpu.driver"] == "570.124.06"
    verdicts = {v["check"]: v for v in data["verdicts"]}
    assert verdicts["gpu-arch"]["status"] == "fail"
    assert verdicts["driver-runtime"]["status"] == "pass"
    assert verdicts["cpu-isa"]["status"] == "unknown"  # no flags in the text: never a guess


def test_env_says_when_the_text_holds_no_report(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("nothing about machines here\n")
    code, out = run("env", str(tmp_path / "notes.txt"))
    assert code == 0 and "No environment report found" in out


def test_env_refuses_a_binary_file_and_a_folder(tmp_path: Path) -> None:
    (tmp_path / "blob").write_bytes(b"\x00\x01" * 100)
    code, out = run("env", str(tmp_path / "blob"))
    assert code == 1 and "binary" in out
    code, out = run("env", str(tmp_path))
    assert code == 1 and "is a folder" in out


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.text(max_size=3000),
    st.sampled_from(["", COLLECT_ENV, "NVIDIA-SMI 1 Driver Version: x CUDA Version: y"]),
)
def test_env_never_raises_on_any_text(noise: str, report: str) -> None:
    env = environment_of(noise + "\n" + report + noise)
    assert all(v.status in ("pass", "warn", "fail", "unknown") for v in env.verdicts)


# --------------------------------------------------------------------------- triage


def test_triage_json_ranks_causes_with_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KBGEN_BASE", raising=False)
    log = tmp_path / "run.log"
    log.write_text(
        "RuntimeError: CUDA error: no kernel image is available for execution on the device\n" + COLLECT_ENV
    )
    result = invoke("--kb", str(REPO), "triage", "--json", str(log))
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["environment"]["facts"]["gpu.name"] == "NVIDIA GeForce RTX 5090"
    top = data["matches"][0]
    assert top["error"] == "cuda-no-kernel-image"
    assert top["causes"][0]["cause"] == "arch-list-missing-gpu-capability"
    assert top["causes"][0]["verdict"] == "fail"


# --------------------------------------------------------------------------- one judge


def test_compat_probe_and_env_give_the_same_verdicts(kb_project: Path) -> None:
    """The same facts, once as a probe run and once as pasted text, judged by the same judge."""
    specs = [s for s in discover(find_project(kb_project)) if s.id in ("gpu", "torch-build", "compat")]
    results = {
        "gpu": RawResult(
            "pass",
            facts={
                "name": "NVIDIA GeForce RTX 5090",
                "capability": "12.0",
                "driver": "570.124.06",
                "driver_cuda": "12.8",
            },
        ),
        "torch-build": RawResult(
            "pass",
            facts={
                "version": "2.5.1+cu124",
                "cuda": "12.4",
                "cpu_only": False,
                "arch_list": "sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90",
            },
        ),
        "compat": RawResult(
            "pass",
            facts={
                "runtime": "12.4",
                "driver_cuda": "12.8",
                "toolkit": "12.1",
                "arch_list": "sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90",
                "capability": "12.0",
            },
        ),
    }
    report = build_report(ProbeRun(python="python3", results=results), specs)
    compat = report.result("compat")
    assert compat is not None and compat.status.value == "fail"
    pasted = environment_of(COLLECT_ENV + "Cuda compilation tools, release 12.1, V12.1.105\n")
    expected = [v for v in pasted.verdicts if v.check in ("gpu-arch", "driver-runtime", "toolkit-runtime")]
    for verdict in expected:
        assert f"{verdict.check}: {verdict.message}" in compat.message
    assert compat.facts["arch_ok"] is False


def test_a_missing_fact_gives_unknown_never_a_guess() -> None:
    verdicts = {v.check: v for v in judge({"gpu.name": "NVIDIA A100-SXM4-80GB"})}
    assert verdicts["gpu-arch"].status == "unknown"
    assert verdicts["driver-runtime"].status == "unknown"


# --------------------------------------------------------------------------- data files


def test_data_files_validate_and_a_broken_one_is_named(tmp_path: Path) -> None:
    assert envdata.data_problems() == []
    for name in envdata.FILES:
        shutil.copy(envdata.DATA_DIR / name, tmp_path / name)
    drivers = json.loads((tmp_path / "cuda-drivers.json").read_text())
    drivers["toolkit_minimum"][0]["linux"] = "100.0"
    drivers["retrieved"] = "last week"
    (tmp_path / "cuda-drivers.json").write_text(json.dumps(drivers))
    problems = envdata.data_problems(tmp_path)
    assert any("must be newer than" in p for p in problems)
    assert any("`retrieved` must be the date" in p for p in problems)


@pytest.mark.usefixtures("base_layer")
def test_validate_names_a_broken_data_table(
    kb_project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out = run("validate")
    assert code == 0, out
    broken = tmp_path / "data"
    shutil.copytree(envdata.DATA_DIR, broken)
    gpus = json.loads((broken / "gpu-capabilities.json").read_text())
    del gpus["sources"]
    (broken / "gpu-capabilities.json").write_text(json.dumps(gpus))
    monkeypatch.setattr(envdata, "DATA_DIR", broken)
    code, out = run("validate")
    assert code == 1
    assert "kbgen/knowledge/data/gpu-capabilities.json: " in out
    assert "sources" in out


@pytest.mark.parametrize(
    ("name", "capability"),
    [
        ("NVIDIA GeForce RTX 4070 Laptop GPU", "8.9"),
        ("A100-SXM4-40GB", "8.0"),
        ("Tesla V100S-PCIE-32GB", "7.0"),
        ("GeForce GTX 670M", "2.1"),
        ("NVIDIA RTX 6000 Ada Generation", "8.9"),
        ("Quadro RTX 6000", "7.5"),
    ],
)
def test_capability_by_name(name: str, capability: str) -> None:
    assert envdata.capability_of(name) == capability


# --------------------------------------------------------------------------- pasted environments


def test_github_form_with_collect_env_imports_a_filled_environment(kb_project: Path) -> None:
    body = (
        "### Error message\n\nRuntimeError: CUDA error: no kernel image is available\n\n"
        "### Log\n\n```\nRuntimeError: CUDA error: no kernel image is available\n```\n\n"
        "### Environment\n\n```\n" + COLLECT_ENV + "```\n"
    )
    issues = kb_project / "issues.json"
    issues.write_text(json.dumps([{"number": 7, "title": "5090 fails", "body": body, "labels": []}]))
    code, out = run("import", "--github", str(issues))
    assert code == 0, out
    bug = newest_bug(kb_project)
    assert "pasted: 'pasted in GitHub issue #7'" in bug
    assert "gpu.name: NVIDIA GeForce RTX 5090" in bug
    assert "torch-build.version: 2.5.1+cu124" in bug


def test_new_bug_from_log_fills_the_pasted_environment(kb_project: Path) -> None:
    log = kb_project / "crash.log"
    log.write_text("RuntimeError: CUDA error: no kernel image is available\n" + COLLECT_ENV)
    code, out = run("new-bug", "--from-log", str(log), "--severity", "high")
    assert code == 0, out
    bug = newest_bug(kb_project)
    assert "pasted: pasted in crash.log" in bug and "gpu.driver: 570.124.06" in bug


def test_refresh_script_parses_its_sources_and_checks_the_files() -> None:
    import runpy
    import subprocess
    import sys

    script = REPO / "scripts" / "refresh_env_data.py"
    done = subprocess.run([sys.executable, str(script), "check"], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and "sound" in done.stdout
    refresh = runpy.run_path(str(script))
    table = "<table><tr><td>CUDA 12.8 GA</td><td>&gt;=570.26</td><td>&gt;=570.65</td></tr></table>"
    assert refresh["drivers"](table) == [{"cuda": "12.8", "linux": "570.26", "windows": "570.65"}]
    assert refresh["gpus"]("<tr><td>GeForce RTX 4090, GeForce RTX 4080</td><td>8.9</td></tr>") == {
        "rtx 4090": "8.9",
        "rtx 4080": "8.9",
    }
    script_text = '    12.8) TORCH_CUDA_ARCH_LIST="7.0;7.5;8.0;12.0+PTX" ;;\n'
    assert refresh["torch_archs"](script_text) == {"12.8": "sm_70 sm_75 sm_80 sm_120"}


def test_markdown_report_with_a_pasted_collect_env_imports_its_environment(kb_project: Path) -> None:
    report = kb_project / "old-report.md"
    report.write_text(
        "# 5090 fails\n\n## Error Messages\n\nno kernel image is available\n\n```\n" + COLLECT_ENV + "```\n"
    )
    code, out = run("import", str(report))
    assert code == 0, out
    bug = newest_bug(kb_project)
    assert "pasted: pasted in old-report.md" in bug and "torch-build.cuda: '12.4'" in bug


def _every_rule_on_every_line(lines: list[str]) -> parse.Found:
    found = parse.Found()
    for index, line in enumerate(lines):
        for pattern, fmt, fn in parse.RULES:
            match = pattern.search(line)
            if match:
                fn(match, lines, index, found)
                found.saw(fmt)
    return found


_REPORT_LINES = [
    line
    for path in sorted((Path(__file__).parent / "data" / "env-reports" / "reports").glob("*"))
    if path.is_file()
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines()[:80]
]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(_REPORT_LINES),
            st.text(st.characters(blacklist_characters="\r\n"), max_size=80),  # read_report splits there
            st.sampled_from(_REPORT_LINES).map(lambda x: x.replace(" ", "\u00a0").replace("0", "\u0660")),
        ),
        max_size=1200,
    )
)
def test_the_screen_finds_every_fact_the_rules_find(lines: list[str]) -> None:
    """The RE2 screen only skips blocks where no rule can match: with it or without, the same facts."""
    with_screen, without = parse.scan(lines), _every_rule_on_every_line(lines)
    assert (with_screen.facts, with_screen.formats) == (without.facts, without.formats)
