"""`kbgen run` on a crash the project already filed records an occurrence, not a copy;
`status BUG duplicate --of OTHER` links two bugs; `new-bug --from-log` warns of a known bug."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from conftest import kbgen, run

CRASH = """\
def load_ops():
    raise ModuleNotFoundError("No module named 'mmcv._ext'")


def main():
    load_ops()


main()
"""


def _bugs(root: Path) -> list[dict]:
    code, out = run("list", "--json")
    assert code == 0, out
    return json.loads(out)


def _run(root: Path, script: Path) -> tuple[int, str]:
    done = kbgen("run", "--file-bug", "--", sys.executable, str(script), cwd=root)
    return done.returncode, done.stdout + done.stderr


def test_run_records_an_occurrence_instead_of_filing_a_copy(kb_project: Path, base_layer: None) -> None:
    script = kb_project / "train.py"
    script.write_text(CRASH, encoding="utf-8")
    before = {b["id"] for b in _bugs(kb_project)}
    code, out = _run(kb_project, script)
    assert code == 1, out
    filed = [b for b in _bugs(kb_project) if b["id"] not in before]
    assert len(filed) == 1 and filed[0]["fingerprint"]["names"] == ["name:mmcv._ext"]
    code, out = _run(kb_project, script)
    assert code == 1, out
    assert "Seen before: " + filed[0]["id"] in out
    assert "recorded an occurrence" in out
    after = [b for b in _bugs(kb_project) if b["id"] not in before]
    assert len(after) == 1, "a second bug was filed for the same crash"
    (occurrence,) = after[0]["occurrences"]
    assert occurrence["exit_status"] == 1 and "train.py" in occurrence["command"]


def test_a_fixed_bug_whose_crash_is_back_is_reopened_in_ci(kb_project: Path, base_layer: None) -> None:
    script = kb_project / "train.py"
    script.write_text(CRASH, encoding="utf-8")
    _run(kb_project, script)
    (bug,) = [b for b in _bugs(kb_project) if b.get("fingerprint")]
    code, out = run("status", bug["id"], "fixed", "--note", "rebuilt mmcv-full")
    assert code == 0, out
    code, out = _run(kb_project, script)
    assert "the fix did not hold" in out and "reopened" in out
    (again,) = [b for b in _bugs(kb_project) if b["id"] == bug["id"]]
    assert again["status"] == "open" and len(again["occurrences"]) == 1


def test_status_duplicate_links_two_bugs(kb_project: Path, base_layer: None) -> None:
    log = kb_project / "crash.log"
    log.write_text("ModuleNotFoundError: No module named 'mmcv._ext'\n", encoding="utf-8")
    first = json.loads(run("new-bug", "--from-log", str(log), "--json")[1].splitlines()[-1])["id"]
    code, out = run("new-bug", "--from-log", str(log), "--json")
    assert code == 0 and f"looks like {first}" in out
    second = json.loads(out.splitlines()[-1])["id"]
    code, out = run("status", second, "duplicate", "--of", first)
    assert code == 0, out
    (dup,) = [b for b in _bugs(kb_project) if b["id"] == second]
    assert dup["status"] == "duplicate" and dup["duplicate_of"] == first
    code, out = run("status", second, "duplicate", "--of", second)
    assert code != 0 and "itself" in out and "Traceback" not in out


def test_new_bug_can_be_filed_as_a_duplicate(kb_project: Path, base_layer: None) -> None:
    log = kb_project / "crash.log"
    log.write_text("ModuleNotFoundError: No module named 'mmcv._ext'\n", encoding="utf-8")
    first = json.loads(run("new-bug", "--from-log", str(log), "--json")[1].splitlines()[-1])["id"]
    code, out = run("new-bug", "--from-log", str(log), "--duplicate-of", first, "--json")
    assert code == 0, out
    second = json.loads(out.splitlines()[-1])["id"]
    (dup,) = [b for b in _bugs(kb_project) if b["id"] == second]
    assert dup["duplicate_of"] == first and dup["status"] == "duplicate"


def test_migrate_adds_a_fingerprint_to_an_old_bug(kb_project: Path, base_layer: None) -> None:
    log = kb_project / "crash.log"
    log.write_text("ModuleNotFoundError: No module named 'mmcv._ext'\n", encoding="utf-8")
    bug_id = json.loads(run("new-bug", "--from-log", str(log), "--json")[1].splitlines()[-1])["id"]
    (path,) = (kb_project / "kb" / "bugs").glob(f"{bug_id}*.md")
    lines = path.read_text(encoding="utf-8").split("\n")
    start = lines.index("fingerprint:")
    end = start + 1
    while lines[end].startswith((" ", "- ")):
        end += 1
    path.write_text("\n".join(lines[:start] + lines[end:]), encoding="utf-8")  # as older kbgen wrote it
    assert next(b for b in _bugs(kb_project) if b["id"] == bug_id)["fingerprint"] is None
    code, out = run("migrate")
    assert code == 0 and "upgraded fingerprint" in out, out
    (bug,) = [b for b in _bugs(kb_project) if b["id"] == bug_id]
    assert bug["fingerprint"]["names"] == ["name:mmcv._ext"]
