"""``kbgen init``: the files a project needs to keep a KB, written without overwriting anything.

The plan is a list of ``(path, content)``; :func:`apply` writes the missing files, leaves the ones
already there alone (``force`` replaces them, after the caller showed the diff), adds the
``kbgen-validate`` hook to an existing ``.pre-commit-config.yaml`` and ``site/`` to ``.gitignore``.

Every existing file is read bounded and only when regular, and nothing is written through a
symbolic link, at the end of a path or on the way (:mod:`kbgen.nofollow`): such a place is a
"skip" action, reported and left alone, ``--force`` or not.
"""

from __future__ import annotations

import difflib
import io
import os
import stat
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbgen import nofollow
from kbgen.errors import KbgenError
from kbgen.fileio import Unreadable, new_file_mode
from kbgen.models import Bug, Severity
from kbgen.yamlio import FrontmatterError, check_structure

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
    status: str  # "create", "same", "differs", "replace", "hook", "ignore", "skip"
    diff: str = ""
    data: bytes = b""  # what apply writes there
    found: os.stat_result | None = None  # the file read, which a replacement must still find
    reason: str = ""  # why a "skip" is left alone


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


#: the most kbgen init reads of a file already in the project
READ_LIMIT = 1024 * 1024


def check(root: Path) -> list[Action]:
    """What :func:`apply` would do in ``root``, writing nothing. A link, FIFO, device or
    unreadable file where kbgen would read or write is a "skip" action, named once."""
    actions: list[Action] = []
    for rel, content in plan().items():
        actions.append(_file_action(root, rel, content.encode("utf-8")))
    for extra in (_hook_action(root), _ignore_action(root)):
        if extra is not None:
            actions.append(extra)
    seen: set[str] = set()
    unique = []
    for action in actions:
        if action.status != "skip" or action.path not in seen:
            unique.append(action)
        seen.add(action.path)
    return unique


def _read(root: Path, rel: str) -> tuple[bytes, os.stat_result] | None:
    """``rel``'s bytes below ``root``, no link followed on the way (None when missing)."""
    *parts, name = rel.split("/")
    with nofollow.folder(root, parts, create=False) as fd:
        return None if fd is None else nofollow.read_file(fd, name, READ_LIMIT)


def _look(root: Path, rel: str) -> Action | tuple[bytes, os.stat_result] | None:
    """:func:`_read`, with a refusal turned into a "skip" action."""
    try:
        return _read(root, rel)
    except nofollow.Blocked as exc:
        return Action(exc.where, "skip", reason=exc.message)
    except Unreadable as exc:
        return Action(rel, "skip", reason=exc.message)


def _file_action(root: Path, rel: str, content: bytes) -> Action:
    found = _look(root, rel)
    if isinstance(found, Action):
        return found
    if found is None:
        return Action(rel, "create", data=content)
    current, info = found
    if current == content:
        return Action(rel, "same")
    lines = difflib.unified_diff(
        current.decode("utf-8", errors="replace").splitlines(keepends=True),
        content.decode("utf-8").splitlines(keepends=True),
        rel,
        f"{rel} (kbgen init)",
    )
    return Action(rel, "differs", "".join(lines), data=content, found=info)


def apply(root: Path, actions: list[Action], *, force: bool) -> list[Action]:
    """Write what ``actions`` plans; returns the actions taken, and a "skip" for each write that
    found a link, or another file than the one :func:`check` read, in its place."""
    done = []
    for action in actions:
        if action.status == "differs" and force:
            taken = Action(action.path, "replace")
        elif action.status in ("create", "hook", "ignore"):
            taken = Action(action.path, action.status)
        else:
            continue
        reason = _write(root, action.path, action.data, action.found)
        done.append(taken if reason is None else Action(reason[0], "skip", reason=reason[1]))
    return done


def _write(root: Path, rel: str, data: bytes, found: os.stat_result | None) -> tuple[str, str] | None:
    """Write ``data`` at ``rel`` (a new file, or over ``found``); the place and reason of a refusal."""
    *parts, name = rel.split("/")
    mode = new_file_mode() if found is None else stat.S_IMODE(found.st_mode)
    try:
        with nofollow.folder(root, parts, create=True) as fd:
            assert fd is not None  # made when missing
            nofollow.write_file(fd, name, data, mode, over=found)
    except nofollow.Blocked as exc:
        return exc.where, exc.message
    except FileExistsError:
        return rel, "appeared while kbgen init ran; left alone"
    except nofollow.Changed:
        return rel, "changed while kbgen init ran; left alone"
    except OSError as exc:
        return rel, f"cannot write: {exc.strerror or exc}"
    return None


# --------------------------------------------------------------------------- pre-commit hook

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
    """Add the hook to an existing ``.pre-commit-config.yaml`` that has no hook of that id."""
    found = _look(root, PRE_COMMIT)
    if found is None or isinstance(found, Action):
        return found
    current, info = found
    try:
        text = current.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = current.count(b"\n", 0, exc.start) + 1
        why = f"line {line}: not UTF-8 text; add the {HOOK_ID} hook by hand"
        return Action(PRE_COMMIT, "skip", reason=why)
    try:
        new = _with_hook(text)
    except KbgenError as exc:
        return Action(PRE_COMMIT, "skip", reason=f"{exc.message}; add the {HOOK_ID} hook by hand")
    return None if new is None else Action(PRE_COMMIT, "hook", data=new.encode("utf-8"), found=info)


def _with_hook(text: str) -> str | None:
    """``text`` with the hook appended to ``repos:``, its comments and layout kept (ruamel round
    trip); None when a ``repos[].hooks[].id`` already is the hook's."""
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.error import YAMLError

    try:  # ruamel's reader recurses once per level: refuse deep nesting and aliased trees first
        check_structure(text, 1)
    except FrontmatterError as exc:
        raise KbgenError(f"line {exc.line}: {exc}") from None
    yaml = YAML()
    yaml.indent(mapping=2, sequence=4, offset=2)
    out = io.StringIO()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a reused anchor and the like: still one document
            data = yaml.load(text)
            if data is None:
                data = CommentedMap()
            if not isinstance(data, dict):
                raise KbgenError("not a mapping with a `repos:` list")
            repos = data.setdefault("repos", CommentedSeq())
            if not isinstance(repos, list):
                raise KbgenError("`repos:` is not a list")
            if any(_is_hook(hook) for repo in repos if isinstance(repo, dict) for hook in _hooks(repo)):
                return None
            repos.append(HOOK_ENTRY)
            yaml.dump(data, out)
    except RecursionError:  # deeper than libyaml's own limit, which check_structure leaves to it
        raise KbgenError("values are nested too deeply") from None
    except (YAMLError, ValueError, TypeError, OverflowError) as exc:
        raise KbgenError(f"not valid YAML ({exc})") from None
    return out.getvalue()


def _hooks(repo: dict[Any, Any]) -> list[Any]:
    hooks = repo.get("hooks")
    return hooks if isinstance(hooks, list) else []


def _is_hook(hook: Any) -> bool:
    return isinstance(hook, dict) and isinstance(hook.get("id"), str) and hook["id"] == HOOK_ID


# --------------------------------------------------------------------------- .gitignore

GITIGNORE = ".gitignore"
#: files `mkdocs build` writes into site/: git ignores the built site when it ignores all of them
SITE_FILES = ["site/index.html", "site/404.html", "site/sitemap.xml", "site/search/search_index.json"]


def _ignore_action(root: Path) -> Action | None:
    """Add ``site/`` (the built site) to the project's ``.gitignore``, making one if missing."""
    found = _look(root, GITIGNORE)
    if isinstance(found, Action):
        return found
    if found is None:
        return Action(GITIGNORE, "create", data=b"site/\n")
    current, info = found
    if _ignores_site(current.decode("utf-8", errors="surrogateescape")):
        return None
    newline = b"\r\n" if b"\r\n" in current else b"\n"
    sep = b"" if not current or current.endswith(b"\n") else newline
    return Action(GITIGNORE, "ignore", data=current + sep + b"site/" + newline, found=info)


def _ignores_site(text: str) -> bool:
    """Would git ignore the built site by these patterns? (pathspec reads them as git does)."""
    import pathspec

    lines = text.splitlines()
    try:
        spec = pathspec.GitIgnoreSpec.from_lines(lines)
    except ValueError:  # a line git ignores but pathspec refuses: drop such lines one by one
        spec = pathspec.GitIgnoreSpec.from_lines([line for line in lines if _valid_pattern(line)])
    return all(spec.match_file(path) for path in SITE_FILES)


def _valid_pattern(line: str) -> bool:
    import pathspec

    try:
        pathspec.GitIgnoreSpec.from_lines([line])
    except ValueError:
        return False
    return True
