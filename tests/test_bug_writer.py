"""One way to write a bug file: `new-bug`, `import` and the updates (`status`, `step`, ...) write
the frontmatter with the same writer, and `templates/bug.md.j2` holds only the body."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from kbgen.bugs.roundtrip import compose, key_order
from kbgen.cli import cli
from kbgen.models import Bug
from kbgen.store import find_project, load_kb

ERROR = "cuda-illegal-memory-access"

# Values a YAML writer or a Markdown file can get wrong: document markers, YAML syntax, words
# YAML 1.1 reads as booleans or numbers, several lines, and text beyond ASCII.
HOSTILE = [
    "---",
    "yes",
    "null",
    "1:20",
    "0x1F",
    "2025-11-21",
    "- not a list",
    "key: value # not a comment",
    "[a, b] {c: d}",
    "'single' and \"double\" quotes",
    "&anchor *alias !!python/object:os.system %TAG @at `tick`",
    "ünïcødé 日本語 ✓ 🚀",
    "first line\n---\nkey: value\n  indented line\n\nafter a blank line",
    "first line\n...\n- item",
]


def run(*args: str) -> Result:
    result = CliRunner().invoke(cli, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def record(bug_id: str) -> Bug:
    kb = load_kb(find_project())
    assert kb.problems == [], [p.format() for p in kb.problems]
    return kb.bugs[bug_id].record


def frontmatter_lines(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[0] == "---"
    return lines[1 : lines.index("---", 1)]


def key_block(path: Path, key: str) -> list[str]:
    """The lines of one top-level key in a file's frontmatter."""
    lines = frontmatter_lines(path)
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{key}:"))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith(" ")), len(lines))
    return lines[start:end]


def new_bug(*args: str) -> tuple[str, Path]:
    result = run("new-bug", "--date", "2025-11-21", *args)
    assert result.exit_code == 0, result.output
    bug_id, rel = result.stdout.split()
    return bug_id, Path(rel)


def import_report(root: Path, meta: dict[str, object], body: str = "## What happened\n\nIt broke.\n") -> str:
    report = root / "report.md"
    report.write_text(f"---\n{yaml.safe_dump(meta, allow_unicode=True)}---\n{body}", encoding="utf-8")
    result = run("import", str(report))
    assert result.exit_code == 0, result.output
    written = result.output.split(" wrote kb/bugs/", 1)[1]
    return written[: len("BUG-20251121-001")]


def keys_of(path: Path) -> list[str]:
    return [line.split(":", 1)[0] for line in frontmatter_lines(path) if line[:1].isalpha()]


# --------------------------------------------------------------------------- the writer


#: a bug with every field of the model set; a field added to Bug must be added here too
FULL = {
    "id": "BUG-20251121-001",
    "title": "Illegal memory access in BCE loss",
    "created": dt.datetime(2025, 11, 21, 10, 0, tzinfo=dt.timezone.utc),
    "updated": dt.datetime(2025, 11, 21, 11, 30, 15, 250000, tzinfo=dt.timezone.utc),
    "status": "investigating",
    "severity": "high",
    "error": "cuda-illegal-memory-access",
    "suspected_causes": ["out-of-range-index"],
    "confirmed_causes": ["out-of-range-index"],
    "fixes_tried": [
        {"fix": "clamp-labels", "outcome": "partial", "note": "yes", "date": dt.date(2025, 11, 21)}
    ],
    "message": "RuntimeError: CUDA error\r\nsecond line\u2028third",
    "environments": [
        {
            "host": "gpu-01",
            "python": "3.11.9",
            "facts": {"torch": "2.8.0", "cuda": "12.8", "gpus": 2, "ok": True},
        }
    ],
    "progress": [{"id": "check-gpu", "title": "GPU works", "probe": "gpu", "decided_by": "manual"}],
    "repro": "gpu",
    "related": ["BUG-20251109-002"],
    "duplicate_of": "BUG-20251109-002",
    "tags": ["loss", "no", "3.10", "a, b", "[x]", "{y}", "#c", "k: v", "- d", "?", "ü"],
    "assignee": "mina",
    "aliases": ["BUG-20251120-004"],
    "origin": {
        "number": 412,
        "url": "https://github.com/acme/trainer/issues/412",
        "author": "mina",
        "labels": ["gpu-failure", "triage"],
    },
    "fingerprint": {
        "version": 1,
        "exception": "AcceleratorError",
        "message": "CUDA error: an illegal memory access was encountered",
        "names": ["libtorch_cuda"],
        "user_frames": ["bce_loss.py:forward"],
        "library_frames": ["torch/nn/modules/module.py:_call_impl"],
    },
    "occurrences": [
        {
            "at": dt.datetime(2025, 11, 22, 8, 0, tzinfo=dt.timezone.utc),
            "host": "gpu-02",
            "command": "python train.py --epochs 3",
            "exit_status": 1,
            "by": "mina",
        }
    ],
    "history": [
        {"at": dt.datetime(2025, 11, 21, 10, 0, tzinfo=dt.timezone.utc), "kind": "created", "by": "~"}
    ],
}


def test_every_field_of_the_model_is_written_in_one_order_and_reads_back_equal() -> None:
    assert set(FULL) == set(Bug.model_fields), "give the new Bug field a value in FULL"
    bug = Bug.model_validate(FULL)
    text = compose(bug, "\n## What happened\n")
    again = Bug.model_validate(yaml.safe_load(text.split("---\n")[1]))
    assert again.model_dump() == bug.model_dump()
    written = [line.split(":", 1)[0] for line in text.split("---\n")[1].splitlines() if line[:1].isalpha()]
    assert written == key_order(Bug)
    assert written[:4] == ["id", "title", "status", "severity"]
    assert "tags: [loss, 'no', '3.10', 'a, b', '[x]', '{y}', '#c', 'k: v', '- d', '?', ü]" in text.split("\n")
    assert text.endswith("---\n\n## What happened\n")


# --------------------------------------------------------------------------- the three paths


def test_a_field_is_written_the_same_by_new_bug_import_and_status(kb_project: Path) -> None:
    value = "key: value\n---\nü"
    made, made_path = new_bug(
        "--title", "Loss NaN", "--assignee", value, "--tag", "yes", "--severity", "high"
    )
    imported = import_report(
        kb_project, {"title": "Loss NaN", "assignee": value, "tags": ["yes"], "severity": "high"}
    )
    imported_path = next((kb_project / "kb/bugs").glob(f"{imported}-*.md"))
    for key in ("title", "assignee", "tags", "severity", "status"):
        assert key_block(made_path, key) == key_block(imported_path, key), key
    # the same key order whichever command wrote the file
    assert keys_of(made_path) == [k for k in key_order(Bug) if k in keys_of(made_path)]
    assert keys_of(imported_path) == [k for k in key_order(Bug) if k in keys_of(imported_path)]
    for bug_id, path in ((made, made_path), (imported, imported_path)):
        result = run("status", bug_id, "investigating", "--note", value)
        assert result.exit_code == 0, result.output
        assert key_block(path, "assignee") == key_block(made_path, "assignee")
        bug = record(bug_id)
        assert (bug.assignee, bug.history[-1].note, bug.tags) == (value, value, ["yes"])
    assert key_block(made_path, "status") == key_block(imported_path, "status") == ["status: investigating"]


def test_keys_an_update_adds_go_where_new_bug_would_write_them(kb_project: Path) -> None:
    bug_id, path = new_bug("--title", "Loss NaN", "--error", ERROR, "--tag", "loss", "--message", "boom")
    # a comment a person wrote above a key stays with that key
    text = path.read_text(encoding="utf-8").replace("\nmessage:", "\n# from the first crash\nmessage:")
    path.write_text(text, encoding="utf-8")
    result = run("status", bug_id, "fixed", "--cause", "out-of-range-index", "--fix", "clamp-labels")
    assert result.exit_code == 0, result.output
    keys = keys_of(path)
    assert {"confirmed_causes", "fixes_tried"} < set(keys)
    assert keys == [k for k in key_order(Bug) if k in keys]
    assert keys[-1] == "history"
    lines = frontmatter_lines(path)
    assert lines[lines.index("# from the first crash") + 1] == "message: boom"
    assert lines[lines.index("# from the first crash") - 1].startswith("    ")  # the end of fixes_tried
    bug = record(bug_id)
    assert (bug.confirmed_causes, bug.fixes_tried[0].fix) == (["out-of-range-index"], "clamp-labels")


@pytest.mark.parametrize("value", HOSTILE, ids=range(len(HOSTILE)))
def test_a_hostile_value_reads_back_equal_from_each_path(kb_project: Path, value: str) -> None:
    one_line = "\n" not in value
    title = value if one_line else "Multi-line value"
    made, _ = new_bug("--title", title, "--assignee", value, "--message", value, "--error", ERROR)
    bug = record(made)
    assert (bug.title, bug.assignee, bug.message) == (title, value, value)

    imported = import_report(kb_project, {"title": title, "assignee": value})
    bug = record(imported)
    assert (bug.title, bug.assignee) == (title, value)

    for bug_id in (made, imported):
        result = run("status", bug_id, "investigating", "--note", value)
        assert result.exit_code == 0, result.output
        bug = record(bug_id)
        assert (bug.assignee, bug.history[-1].note) == (value, value)
    result = run("step", made, "check-gpu", "done", "--note", value)
    assert result.exit_code == 0, result.output
    assert record(made).progress[0].evidence == value
    assert run("validate").exit_code == 0


def test_new_bug_output_keeps_its_shape(kb_project: Path) -> None:
    """The file new-bug writes, byte for byte: the frontmatter from the fields, the body from
    the shipped template."""
    _, path = new_bug("--title", "OOM: in val loop", "--error", "cuda-illegal-memory-access", "--tag", "oom")
    assert path.read_text(encoding="utf-8").startswith(
        "---\n"
        "id: BUG-20251121-001\n"
        "title: 'OOM: in val loop'\n"
        "status: open\n"
        "severity: medium\n"
        "error: cuda-illegal-memory-access\n"
        "created: 2025-11-21T10:00:00+00:00\n"
        "updated: 2025-11-21T10:00:00+00:00\n"
        "tags: [oom]\n"
        "progress:\n"
        "  - id: check-gpu\n"
        "    title: GPU is visible and works\n"
        "    probe: gpu\n"
        "    decided_by: manual\n"
        "    state: pending\n"
        "history:\n"
        "  - at: 2025-11-21T10:00:00+00:00\n"
        "    kind: created\n"
        "    by: tester\n"
        "---\n"
        "\n"
        "## What happened\n"
    )
    assert path.read_text(encoding="utf-8").endswith(
        "ticks the others. -->\n\n<!-- Troubleshooting steps for this error type: "
        "the cuda-illegal-memory-access page of the KB site. -->\n"
    )


# --------------------------------------------------------------------------- the body template


#: bug.md.j2 as projects copied it before it held only the body: the frontmatter listed the
#: fields by hand through a `yaml` filter kbgen no longer has
OLD_TEMPLATE = """\
{#- The file `kbgen new-bug` writes. Edit freely: keep the frontmatter keys kbgen knows
    (see `kbgen schema`), and put guidance in HTML comments so nothing unfilled renders. -#}
---
id: {{ bug.id }}
title: {{ bug.title | yaml }}
status: {{ bug.status.value }}
severity: {{ bug.severity.value }}
{%- if bug.tags %}
tags: {{ bug.tags | yaml }}
{%- endif %}
history:
{%- for event in bug.history %}
  - at: {{ event.at | yaml }}
    kind: {{ event.kind.value }}
{%- endfor %}
---

## What happened

<!-- prompt: our team's own question about {{ bug.id }} -->

## Team checklist

- [ ] logs attached
{%- if error %}

<!-- the {{ error.id }} page -->
{%- endif %}
"""


def test_an_old_project_template_with_frontmatter_keeps_working(kb_project: Path) -> None:
    (kb_project / "templates").mkdir()
    (kb_project / "templates/bug.md.j2").write_text(OLD_TEMPLATE, encoding="utf-8")
    result = run("new-bug", "--title", "Loss NaN", "--tag", "loss", "--date", "2025-11-21", "--error", ERROR)
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        "warning: templates/bug.md.j2:3: lines 3-16 are a frontmatter block kbgen no longer uses "
        "(it writes the frontmatter from the bug's fields); delete them to keep only the body\n"
    )
    bug_id, rel = result.stdout.split()
    text = Path(rel).read_text(encoding="utf-8")
    assert text.count("---\n") == 2  # one frontmatter block, the writer's
    assert text.split("---\n", 2)[2] == (
        "\n## What happened\n\n<!-- prompt: our team's own question about BUG-20251121-001 -->\n\n"
        "## Team checklist\n\n- [ ] logs attached\n\n<!-- the cuda-illegal-memory-access page -->\n"
    )
    assert record(bug_id).tags == ["loss"]
    # once the block is deleted, the same body and no warning
    body_only = "\n".join(OLD_TEMPLATE.split("\n")[:2] + OLD_TEMPLATE.split("\n")[16:])
    (kb_project / "templates/bug.md.j2").write_text(body_only, encoding="utf-8")
    result = run("new-bug", "--title", "Loss NaN again", "--date", "2025-11-21", "--error", ERROR)
    assert result.exit_code == 0 and result.stderr == ""
    body = text.split("---\n", 2)[2].replace(bug_id, result.stdout.split()[0])
    assert Path(result.stdout.split()[1]).read_text(encoding="utf-8").endswith("---\n" + body)


def test_a_broken_project_template_names_its_line_and_writes_nothing(kb_project: Path) -> None:
    (kb_project / "templates").mkdir()
    (kb_project / "templates/bug.md.j2").write_text("## What happened\n\n{{ bug.titel }}\n", encoding="utf-8")
    result = run("new-bug", "--title", "Loss NaN", "--date", "2025-11-21")
    assert result.exit_code == 1
    assert result.output.startswith("Error: templates/bug.md.j2:3: ")
    assert "titel" in result.output and "Traceback" not in result.output
    assert sorted(p.name for p in (kb_project / "kb/bugs").glob("*.md")) == ["BUG-20251109-002.md"]


def test_new_bug_and_the_site_share_one_template_search_path(kb_project: Path) -> None:
    """A project's templates/ overrides kbgen's for new-bug as it does for the site's pages."""
    from kbgen import templating
    from kbgen.bugs.body import body_template
    from kbgen.site import render

    (kb_project / "templates").mkdir()
    (kb_project / "templates/bug.md.j2").write_text("## Ours\n", encoding="utf-8")
    loaded = body_template(kb_project)
    env = render.make_environment(templating.template_dirs(kb_project))
    assert Path(loaded.template.filename) == Path(env.get_template("bug.md.j2").filename)
    assert Path(loaded.template.filename).parent == (kb_project / "templates").resolve()
    _, path = new_bug("--title", "Loss NaN")
    assert path.read_text(encoding="utf-8").endswith("---\n\n## Ours\n")
