"""Every way text reaches a record, a report or a terminal goes through redaction.

Each test feeds a command the secrets a careless teammate would paste and checks what the command
wrote and printed, as the user meets it.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run
from probes_fixtures import probe_file

HF = "hf_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9"
GLPAT = "glpat-" + "xY9zW8vU7tS6rQ5pO4nM"
PEM_BODY = "MIIEowIBAAKCAQEAuV3x1q2w3e4r5t6y7u8i9o0pPaSsDdFfGgHhJjKkLlZzXxCc"
SECRETS = [HF, GLPAT, "Sup3rS3cret", "hunter2pw", PEM_BODY, "/home/alice"]
LEAKY = (
    f"HF_TOKEN={HF} ok\n"
    f'config {{"password": "hunter2pw"}} and --password Sup3rS3cret\n'
    f"remote {GLPAT} at /home/alice/proj/train.py\n"
    f"-----BEGIN PRIVATE KEY-----\n{PEM_BODY}\n-----END PRIVATE KEY-----\n"
)


def assert_clean(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, secret


def bug_files(project: Path) -> str:
    return "".join(p.read_text(encoding="utf-8") for p in sorted((project / "kb" / "bugs").glob("*.md")))


def test_new_bug_title_and_message_are_redacted(kb_project: Path) -> None:
    code, out = run("new-bug", "--title", f"Loader fails with token {HF}", "--message", LEAKY)
    assert code == 0, out
    written = bug_files(kb_project)
    assert_clean(written + out)
    assert "Loader fails with token <redacted>" in written
    assert "~/proj/train.py" in written


def test_status_note_is_redacted(kb_project: Path) -> None:
    code, out = run("status", "BUG-20251109-002", "investigating", "--note", f"tried {HF} and {GLPAT}")
    assert code == 0, out
    written = bug_files(kb_project)
    assert_clean(written)
    assert "tried <redacted> and <redacted>" in written


def test_imported_report_keeps_no_secret(kb_project: Path) -> None:
    report = kb_project / "report.md"
    report.write_text(
        f"---\ntitle: Crash with {HF}\nassignee: ann\n---\n## Error message\n\n```\n{LEAKY}```\n\n"
        f"## Notes\n\nAWS: {{'AWS_SECRET_ACCESS_KEY': 'wJalrXUtnFEMIK7MDENG'}}\n",
        encoding="utf-8",
    )
    code, out = run("import", str(report))
    assert code == 0, out
    written = bug_files(kb_project)
    assert_clean(written + out)
    assert "wJalrXUtnFEMIK7MDENG" not in written
    assert "assignee: ann" in written  # ordinary fields untouched
    assert "secrets or home paths redacted" in written  # the history says why the text differs
    assert run("validate", "--strict")[0] == 0


def test_triage_text_and_json_show_no_secret(kb_project: Path) -> None:
    log = kb_project / "train.log"
    log.write_text(
        f"start {HF}\n"
        f"RuntimeError: CUDA error: an illegal memory access was encountered token={HF} /home/alice/x.py\n",
        encoding="utf-8",
    )
    _, text = run("triage", str(log))
    assert "cuda-illegal-memory-access" in text
    _, raw = run("triage", "--json", str(log))
    data = json.loads(raw)
    assert data["matches"][0]["error"] == "cuda-illegal-memory-access"
    assert_clean(text + raw)


def test_new_bug_from_a_long_log_line_cuts_after_redacting(kb_project: Path) -> None:
    # The token sits where a cut at the line limit would fall: cut first, and its tail would survive.
    log = kb_project / "long.log"
    error = "RuntimeError: CUDA error: an illegal memory access was encountered "
    filler = "x " * ((1990 - len(error)) // 2)  # the line limit is 2000 characters
    log.write_text(f"{error}{filler}{HF}{filler}\n", encoding="utf-8")
    code, out = run("new-bug", "--from-log", str(log))
    assert code == 0, out
    written = bug_files(kb_project)
    for part in (HF[:12], HF[-12:]):
        assert part not in written


def test_probe_output_facts_and_messages_are_redacted(kb_project: Path) -> None:
    leaky = probe_file(
        "leaky",
        f"""
        import os, sys
        os.environ["MY_API_TOKEN"] = "{HF}"
        print(dict(os.environ))
        sys.stderr.write({LEAKY!r})
        return {{"status": "fail", "message": "cannot pull with {GLPAT}",
                 "facts": {{"env": str(dict(os.environ)), "MY_API_TOKEN": "{HF}", "db": "postgres://u:hunter2pw@db/x"}}}}
        """,
    )
    crash = probe_file("crashy", f"import os\nprint({LEAKY!r}, flush=True)\nos.abort()")
    (kb_project / "kb" / "probes" / "leaky.py").write_text(leaky)
    (kb_project / "kb" / "probes" / "crashy.py").write_text(crash)
    _, raw = run("probe", "--json", "leaky", "crashy")
    data = json.loads(raw)
    results = {r["id"]: r for r in data["results"]}
    assert results["leaky"]["status"] == "fail"
    assert results["leaky"]["facts"]["MY_API_TOKEN"] == "<redacted>"
    assert results["crashy"]["status"] == "crash"
    assert "HF_TOKEN=<redacted> ok" in (results["crashy"]["stderr_tail"] or "")
    assert_clean(raw.replace("/home/alice", ""))  # probe paths stay unless --redact-paths
    _, text = run("probe", "leaky", "crashy")
    assert_clean(text.replace("/home/alice", ""))


def test_validate_warns_about_a_pasted_secret_and_strict_fails(kb_project: Path) -> None:
    path = kb_project / "kb" / "bugs" / "BUG-20251109-002.md"
    path.write_text(path.read_text(encoding="utf-8") + f"\nThe run used HF_TOKEN={HF}.\n", encoding="utf-8")
    code, out = run("validate")
    assert code == 0
    lines = path.read_text(encoding="utf-8").splitlines()
    line = next(i for i, text in enumerate(lines, 1) if HF in text)
    assert f"kb/bugs/BUG-20251109-002.md:{line}: warning: looks like" in out
    assert HF not in out  # the report itself must not repeat the secret
    code, out = run("validate", "--strict")
    assert code == 1
