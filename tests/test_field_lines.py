"""`kbgen validate` names the line of the broken field: the pydantic error's field path (such as
``environments.1.findings.0.status``) is mapped back to the line of the file it was read from
(``Parsed.line_of`` in kbgen.yamlio), whatever the nesting, the list style, and the comments and
blank lines a person put between the keys."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import BUG_ID, bug_path, run

Path_ = tuple[str | int, ...]

SLUGS = st.sampled_from(["gpu", "cpu", "system", "check-labels", "out-of-range-index", "a1"])
WORDS = st.text(alphabet="abcdefgh xyz.:-", min_size=1, max_size=12).map(json.dumps)
ITEMS = {
    "progress": st.fixed_dictionaries(
        {"id": SLUGS, "title": WORDS}, optional={"state": st.sampled_from(["pending", "passed", "failed"])}
    ),
    "fixes_tried": st.fixed_dictionaries(
        {"fix": SLUGS, "outcome": st.sampled_from(["worked", "failed", "pending"])}
    ),
    "findings": st.fixed_dictionaries(
        {"probe": SLUGS, "status": st.sampled_from(["pass", "fail", "warn"])}, optional={"message": WORDS}
    ),
}
#: the value that breaks each field, and the message pydantic's error becomes
BROKEN = {
    "state": ("halfway", "must be one of"),
    "outcome": ("maybe", "must be one of"),
    "status": ("great", "must be one of"),
    "severity": ("urgent", "must be one of"),
    "id": ('"Not A Slug!"', "must be a "),  # a bug id at the top, a lowercase id in a step
    "fix": ('"Not A Slug!"', "must be a lowercase id of letters, digits and '-'"),
    "probe": ('"Not A Slug!"', "must be a lowercase id of letters, digits and '-'"),
    "suspected_causes": ('"Not A Slug!"', "must be a lowercase id of letters, digits and '-'"),
    "host": ('""', "must not be empty"),
}
#: a key that is required where it is, so that leaving it out is an error of its mapping
REQUIRED = {"id", "title", "fix", "probe", "status"}


@st.composite
def bug_data(draw: st.DrawFn) -> dict[str, Any]:
    """A bug's frontmatter as ordered data: the fixed keys, then nested lists in any order."""
    data: dict[str, Any] = {
        "id": BUG_ID,
        "title": '"Illegal memory access in BCE loss"',
        "created": "2025-11-09T23:04:00+09:00",
        "updated": "2025-11-09T23:04:00+09:00",
        "severity": draw(st.sampled_from(["low", "high"])),
    }
    nested: dict[str, Any] = {
        "suspected_causes": draw(st.lists(SLUGS, min_size=1, max_size=3)),
        "progress": draw(st.lists(ITEMS["progress"], min_size=1, max_size=3)),
        "fixes_tried": draw(st.lists(ITEMS["fixes_tried"], min_size=1, max_size=2)),
        "environments": [
            {"host": host, "findings": draw(st.lists(ITEMS["findings"], min_size=1, max_size=3))}
            for host in draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3, unique=True))
        ],
    }
    for key in draw(st.permutations(list(nested))):
        data[key] = nested[key]
    return data


def leaves(node: Any, path: Path_ = ()) -> list[Path_]:
    """The path of every scalar value in ``node``."""
    if isinstance(node, dict):
        return [p for key, value in node.items() for p in leaves(value, (*path, key))]
    if isinstance(node, list):
        return [p for i, value in enumerate(node) for p in leaves(value, (*path, i))]
    return [path]


def last_key(path: Path_) -> str:
    return next(str(part) for part in reversed(path) if isinstance(part, str))


def getitem(data: Any, path: Path_) -> Any:
    for part in path:
        data = data[part]
    return data


@dataclass
class Writer:
    """Writes YAML line by line and remembers the file line of every key and list item."""

    draw: st.DrawFn
    lines: list[str] = field(default_factory=lambda: ["---"])
    where: dict[Path_, int] = field(default_factory=dict)

    def add(self, text: str, *paths: Path_) -> None:
        self.lines.append(text)
        for path in paths:
            self.where[path] = len(self.lines)

    def noise(self, indent: int) -> None:
        for _ in range(self.draw(st.integers(0, 2))):
            self.lines.append(self.draw(st.sampled_from(["", " " * indent + "# a note a person left"])))

    def mapping(self, data: dict[str, Any], path: Path_, indent: int, lead: str | None = None) -> None:
        for n, (key, value) in enumerate(data.items()):
            prefix = lead if n == 0 and lead is not None else " " * indent
            if isinstance(value, list):
                self.add(f"{prefix}{key}:", (*path, key))
                inner = indent + self.draw(st.sampled_from([0, 2]))
                for i, item in enumerate(value):
                    self.noise(inner)
                    self.item(item, (*path, key, i), inner)
            else:
                self.add(f"{prefix}{key}: {value}", (*path, key))
            self.noise(indent)

    def item(self, item: Any, path: Path_, indent: int) -> None:
        dash = " " * indent + "-"
        if not isinstance(item, dict):
            self.add(f"{dash} {item}", path)
            return
        styles = ["inline", "alone"] + ([] if any(isinstance(v, list) for v in item.values()) else ["flow"])
        style = self.draw(st.sampled_from(styles))
        if style == "flow":
            pairs = ", ".join(f"{k}: {v}" for k, v in item.items())
            self.add(f"{dash} {{{pairs}}}", path, *((*path, k) for k in item))
            return
        if style == "alone":
            self.add(dash)
            self.noise(indent + 2)
            self.mapping(item, path, indent + 2)
        else:
            self.mapping(item, path, indent + 2, lead=f"{dash} ")
        self.where[path] = self.where[(*path, next(iter(item)))]  # an item starts at its first key


@st.composite
def broken_bug(draw: st.DrawFn) -> tuple[str, str, int, str]:
    """(file text, the broken field's path, its line, the message) for one broken field."""
    data = draw(bug_data())
    how = draw(st.sampled_from(["value", "unknown key", "missing key"]))
    if how == "value":
        target = draw(st.sampled_from([p for p in leaves(data) if last_key(p) in BROKEN]))
        value, message = BROKEN[last_key(target)]
        getitem(data, target[:-1])[target[-1]] = value
        where = target
    else:
        parent = draw(
            st.sampled_from(sorted({p[:-1] for p in leaves(data) if isinstance(p[-1], str)}, key=str))
        )
        mapping = getitem(data, parent)
        if how == "unknown key":
            mapping["colour"] = "blue"
            target, where, message = (*parent, "colour"), (*parent, "colour"), "unknown key"
        else:
            required = [k for k in mapping if k in REQUIRED and len(mapping) > 1] if parent else []
            if not required:
                mapping["colour"] = "blue"
                target, where, message = (*parent, "colour"), (*parent, "colour"), "unknown key"
            else:
                key = draw(st.sampled_from(required))
                del mapping[key]
                target, where, message = (*parent, key), parent, "required key is missing"
    writer = Writer(draw)
    writer.noise(0)
    writer.mapping(data, (), 0)
    text = "\n".join([*writer.lines, "---", "## What happened", "", "Training died in the loss.", ""])
    return text, ".".join(str(p) for p in target), writer.where[where], message


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(broken_bug())
def test_validate_reports_the_line_of_the_broken_field(
    kb_project: Path, case: tuple[str, str, int, str]
) -> None:
    text, field_path, line, message = case
    bug_path(kb_project).write_text(text)
    code, out = run("validate", "--format", "json")
    assert code == 1, text
    problems = json.loads(out)["problems"]
    assert [(p["path"], p["field"], p["line"]) for p in problems] == [
        (f"kb/bugs/{BUG_ID}.md", field_path, line)
    ], text
    assert problems[0]["message"].startswith(message), problems[0]
