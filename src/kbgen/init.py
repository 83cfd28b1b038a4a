"""``kbgen init``: the files a project needs to keep a KB, written without overwriting anything.

The plan is a list of ``(path, content)``; :func:`apply` writes the missing files, leaves the ones
already there alone (``force`` replaces them, after the caller showed the diff), and adds the
``kbgen-validate`` hook to an existing ``.pre-commit-config.yaml``.
"""

from __future__ import annotations

import difflib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbgen.errors import KbgenError
from kbgen.models import Bug, Severity

SCAFFOLD = Path(__file__).resolve().parent / "scaffold"
PRE_COMMIT = ".pre-commit-config.yaml"
HOOK_ID = "kbgen-validate"
ISSUE_FORM = ".github/ISSUE_TEMPLATE/gpu-failure.yml"
REQUIREMENTS = "kb/requirements.txt"

#: the issue form's fields: (id, label, Bug field it fills or None, kind, description)
FORM_FIELDS: list[tuple[str, str, str | None, str, str]] = [
    ("message", "Error message", "message", "textarea", "The line that names the error, as printed."),
    (
        "error",
        "Error type",
        "error",
        "input",
        "An error type id if you know it (`kbgen triage LOG` names it).",
    ),
    ("severity", "Severity", "severity", "dropdown", "How much work it stops."),
    ("log", "Log", None, "textarea", "The end of the output, from the first line of the traceback."),
    (
        "environment",
        "Environment",
        "environments",
        "textarea",
        "The output of `kbgen probe --json`, run where the failure happened.",
    ),
    ("repro", "Reproducing probe", "repro", "input", "A probe id that reproduces the bug, if there is one."),
]


@dataclass
class Action:
    path: str
    status: str  # "create", "same", "differs", "replace", "hook"
    diff: str = ""


def issue_form() -> dict[str, Any]:
    """The GitHub issue form, generated from the Bug model's fields."""
    body: list[dict[str, Any]] = [
        {
            "type": "markdown",
            "attributes": {"value": "A GPU or CUDA failure. `kbgen import --github` reads it."},
        }
    ]
    for field_id, label, bug_field, kind, description in FORM_FIELDS:
        if bug_field is not None and bug_field not in Bug.model_fields:
            raise KbgenError(f"issue form field {field_id}: Bug has no field {bug_field}")
        attributes: dict[str, Any] = {"label": label, "description": description}
        if kind == "dropdown":
            attributes["options"] = [s.value for s in Severity]
            attributes["default"] = [s.value for s in Severity].index("medium")
        if field_id == "log":
            attributes["render"] = "text"
        if field_id == "environment":
            attributes["render"] = "json"
        required = field_id in ("message", "log")
        body.append(
            {"type": kind, "id": field_id, "attributes": attributes, "validations": {"required": required}}
        )
    return {
        "name": "GPU failure",
        "description": "A CUDA or PyTorch failure: the error, the log and the machine it happened on.",
        "title": "[GPU] ",
        "labels": ["gpu-failure"],
        "body": body,
    }


def requirements() -> str:
    """The one install line the KB workflow reads, pinned to the kbgen that ran init."""
    from kbgen import __version__

    return (SCAFFOLD / "requirements.txt").read_text(encoding="utf-8").replace("{version}", __version__)


def _dump(data: Any) -> str:
    import yaml

    return "# Written by `kbgen init` from kbgen's bug schema.\n" + yaml.safe_dump(
        data, sort_keys=False, allow_unicode=True, width=100
    )


def plan() -> dict[str, str]:
    """Relative path -> content of every file ``kbgen init`` writes."""

    def read(name: str) -> str:
        return (SCAFFOLD / name).read_text(encoding="utf-8")

    return {
        "kb/bugs/.gitkeep": "",
        # a write that was killed between its temporary file and the rename can leave one behind
        "kb/.gitignore": ".*.tmp\n",
        "kb/probes/README.md": read("probes-README.md"),
        REQUIREMENTS: requirements(),
        "mkdocs.yml": read("mkdocs.yml"),
        "docs/getting-started.md": read("getting-started.md"),
        ".github/workflows/kb.yml": read("kb.yml"),
        ISSUE_FORM: _dump(issue_form()),
    }


def check(root: Path) -> list[Action]:
    """What :func:`apply` would do in ``root``, writing nothing."""
    actions = []
    for rel, content in plan().items():
        path = root / rel
        if not path.exists():
            actions.append(Action(rel, "create"))
            continue
        current = path.read_text(encoding="utf-8", errors="replace")
        if current == content:
            actions.append(Action(rel, "same"))
        else:
            lines = difflib.unified_diff(
                current.splitlines(keepends=True),
                content.splitlines(keepends=True),
                rel,
                f"{rel} (kbgen init)",
            )
            actions.append(Action(rel, "differs", "".join(lines)))
    hook = _hook_action(root)
    if hook is not None:
        actions.append(hook)
    return actions


def apply(root: Path, actions: list[Action], *, force: bool) -> list[Action]:
    """Write what ``actions`` plans; returns the actions taken."""
    content = plan()
    done = []
    for action in actions:
        if action.status == "hook":
            _add_hook(root / PRE_COMMIT)
        elif action.status == "create" or (action.status == "differs" and force):
            path = root / action.path
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content[action.path], encoding="utf-8")
            action = Action(action.path, "replace" if action.status == "differs" else "create")
        else:
            continue
        done.append(action)
    return done


HOOK_ENTRY = {
    "repo": "local",
    "hooks": [
        {
            "id": HOOK_ID,
            "name": "kbgen validate",
            "entry": "kbgen validate --strict",
            "language": "system",
            "files": r"^(kb/|mkdocs\.yml$)",
            "pass_filenames": False,
        }
    ],
}


def _hook_action(root: Path) -> Action | None:
    path = root / PRE_COMMIT
    if not path.is_file():
        return None
    if HOOK_ID in path.read_text(encoding="utf-8", errors="replace"):
        return None
    return Action(PRE_COMMIT, "hook")


def _add_hook(path: Path) -> None:
    """Append the hook to ``repos:``, keeping the file's comments and layout (ruamel round trip)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    yaml = YAML()
    yaml.indent(mapping=2, sequence=4, offset=2)
    try:
        data = yaml.load(path.read_text(encoding="utf-8"))
    except YAMLError as exc:
        raise KbgenError(f"{path.name}: not valid YAML; add the {HOOK_ID} hook by hand ({exc})") from None
    if data is None:
        data = {}
    if not isinstance(data, dict) or not isinstance(data.setdefault("repos", []), list):
        raise KbgenError(f"{path.name}: no `repos:` list; add the {HOOK_ID} hook by hand")
    data["repos"].append(HOOK_ENTRY)
    out = io.StringIO()
    yaml.dump(data, out)
    path.write_text(out.getvalue(), encoding="utf-8")
