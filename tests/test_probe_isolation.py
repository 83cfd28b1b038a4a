"""Probes that crash, hang, print garbage or raise become results; the others still run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import invoke, write_tree
from probes_fixtures import GARBAGE, HANG, PASS, RAISES, SEGFAULT, SIGILL, probe_file
from run_fixtures import alive


def report_of(*args: str) -> dict:
    result = invoke("probe", "--json", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture
def bad_probes(kb_project: Path) -> Path:
    files = {
        "ok.py": probe_file("ok", PASS),
        "sigill.py": probe_file("sigill", SIGILL),
        "segv.py": probe_file("segv", SEGFAULT),
        "hang.py": probe_file("hang", HANG, timeout=1.5),
        "garbage.py": probe_file("garbage", GARBAGE),
        "raises.py": probe_file("raises", RAISES),
        "exits.py": probe_file("exits", "import os\nos._exit(3)"),
        "sysexit.py": probe_file("sysexit", "import sys\nsys.exit(2)"),
        "notdict.py": probe_file("notdict", 'print(\'{"status": "pass"}\')'),
        "badstatus.py": probe_file("badstatus", 'return {"status": "great", "message": "hm"}'),
    }
    write_tree(kb_project / "kb" / "probes", files)
    return kb_project


def by_id(report: dict) -> dict[str, dict]:
    return {r["id"]: r for r in report["results"]}


def test_every_bad_probe_becomes_a_result_and_the_rest_still_run(bad_probes: Path) -> None:
    ids = ["sigill", "ok", "segv", "hang", "garbage", "raises", "exits", "sysexit", "notdict", "badstatus"]
    report = report_of(*ids)
    results = by_id(report)
    assert [r["id"] for r in report["results"]] == ids

    assert results["ok"]["status"] == "pass"
    assert results["ok"]["facts"] == {"answer": 42}

    assert results["sigill"]["status"] == "crash"
    assert results["sigill"]["signal"] == "SIGILL"
    assert "died of SIGILL (illegal instruction)" in results["sigill"]["message"]
    assert "Fatal Python error" in results["sigill"]["stderr_tail"]  # faulthandler's last words

    assert results["segv"]["status"] == "crash"
    assert results["segv"]["signal"] == "SIGSEGV"
    assert "string_at" in results["segv"]["stderr_tail"]  # the Python stack of the crash

    assert results["hang"]["status"] == "timeout"
    assert results["hang"]["message"] == "no result within 1.5 s; killed it and every process it started"
    assert 'hang.py", line 7 in run' in results["hang"]["stderr_tail"]  # where it hung

    assert results["garbage"]["status"] == "pass"
    assert "this is not JSON {{{" in results["garbage"]["stderr_tail"]

    assert results["raises"]["status"] == "error"
    assert results["raises"]["message"] == "ValueError: label 7 out of range for 5 classes"
    assert "Traceback" in results["raises"]["stderr_tail"]

    assert results["exits"]["status"] == "crash"
    assert results["exits"]["exit_code"] == 3
    assert "exited with status 3" in results["exits"]["message"]

    assert results["sysexit"] == results["sysexit"] | {
        "status": "error",
        "message": "the probe called sys.exit(2)",
    }

    assert results["notdict"]["status"] == "error"
    assert results["notdict"]["message"].startswith("run() returned NoneType, not a dict (it printed")

    assert results["badstatus"]["status"] == "error"
    assert "status 'great'" in results["badstatus"]["message"]


def test_table_shows_the_crash_and_its_last_words(bad_probes: Path) -> None:
    result = invoke("probe", "ok", "sigill")
    code, out = result.exit_code, result.stdout
    assert code == 0
    lines = out.splitlines()
    assert lines[2].split() == ["PROBE", "STATUS", "RESULT"]
    assert lines[3] == "ok      pass     all good"
    assert lines[4].startswith(
        "sigill  crash    the probe's process died of SIGILL (illegal instruction) after "
    )
    assert any(line.startswith("        | Fatal Python error: Illegal instruction") for line in lines)
    assert lines[-1].startswith("2 probes in ") and lines[-1].endswith(" s: 1 pass, 1 crash")


def test_timeout_option_overrides_every_probe(bad_probes: Path) -> None:
    # the limit applies to "ok" too: 3 s leaves a busy machine room to run it
    report = report_of("--timeout", "3", "hang", "ok")
    assert by_id(report)["hang"]["message"] == "no result within 3 s; killed it and every process it started"
    assert by_id(report)["ok"]["status"] == "pass"


def test_a_hung_probe_leaves_no_process_behind(kb_project: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    body = f"""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open({str(pidfile)!r}, "w").write(str(child.pid))
        time.sleep(600)
    """
    (kb_project / "kb" / "probes" / "spawner.py").write_text(probe_file("spawner", body, timeout=5))
    report = report_of("spawner")
    assert by_id(report)["spawner"]["status"] == "timeout"
    child = int(pidfile.read_text())
    assert not alive(child)


def test_probe_cannot_read_kbgen_job_list_from_stdin(kb_project: Path) -> None:
    body = 'import sys\nreturn {"status": "pass", "message": repr(sys.stdin.read())}'
    (kb_project / "kb" / "probes" / "reader.py").write_text(probe_file("reader", body))
    (kb_project / "kb" / "probes" / "after.py").write_text(probe_file("after", PASS))
    report = report_of("reader", "after")
    assert by_id(report)["reader"]["message"] == "''"
    assert by_id(report)["after"]["status"] == "pass"


def test_probes_run_in_the_chosen_interpreter_not_in_kbgen(kb_project: Path) -> None:
    body = """
        import sys
        facts = {"kbgen": "kbgen" in sys.modules}
        return {"status": "pass", "message": sys.executable, "facts": facts}
    """
    (kb_project / "kb" / "probes" / "where.py").write_text(probe_file("where", body))
    report = report_of("where")
    assert by_id(report)["where"]["message"] == report["python"]["executable"]
    assert by_id(report)["where"]["facts"] == {"kbgen": False}
    assert report["python"]["version"] == ".".join(map(str, sys.version_info[:3]))


def test_a_crash_in_the_torch_worker_does_not_take_the_next_torch_probes_with_it(kb_project: Path) -> None:
    pytest.importorskip("torch")
    uses_torch = 'import torch\nreturn {"status": "pass", "message": torch.__version__, "facts": {}}'
    dies = "import torch, os, signal\nos.kill(os.getpid(), signal.SIGSEGV)"
    for probe_id, body in (("first", uses_torch), ("dies", dies), ("after", uses_torch)):
        (kb_project / "kb" / "probes" / f"{probe_id}.py").write_text(
            probe_file(probe_id, body, needs='["torch"]')
        )
    report = report_of("first", "dies", "after")
    import torch

    results = by_id(report)
    assert results["first"]["message"] == torch.__version__
    assert results["dies"]["status"] == "crash"
    assert results["dies"]["signal"] == "SIGSEGV"
    assert results["after"]["status"] == "pass"  # ran in a fresh worker
    assert results["after"]["message"] == torch.__version__


def test_import_timing_finds_the_import_that_hangs(kb_project: Path, tmp_path: Path) -> None:
    modules = tmp_path / "mods"
    modules.mkdir()
    (modules / "quick_mod.py").write_text("VALUE = 1\n")
    (modules / "hangs_on_import.py").write_text("import time\nwhile True:\n    time.sleep(1)\n")
    (modules / "after_mod.py").write_text("VALUE = 2\n")
    env = {
        "PYTHONPATH": str(modules),
        "KBGEN_IMPORTS": "quick_mod,hangs_on_import,after_mod,not_installed_mod",
        "KBGEN_IMPORT_LIMIT": "1",
    }
    result = invoke("probe", "--json", "import-timing", **env)
    assert result.exit_code == 0, result.stderr
    found = json.loads(result.stdout)["results"][0]
    assert found["status"] == "fail"
    assert found["message"].startswith("import of hangs_on_import did not finish within 1 s")
    facts = found["facts"]
    assert facts["hangs_on_import"] == "hang > 1 s"
    assert isinstance(facts["quick_mod"], float)
    assert isinstance(facts["after_mod"], float)  # the modules after the hang were still timed
    assert facts["not_installed"] == "not_installed_mod"
