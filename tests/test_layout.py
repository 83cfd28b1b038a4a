"""Guards that keep the code base the shape a newcomer can read: module size, CLI choices that
are the models' own values, and a probe runner that travels to nodes with nothing but Python."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import click
import pytest

from kbgen.cli import bug as bug_cli
from kbgen.cli import core as core_cli
from kbgen.fleet.ship import PACKAGE, RUNNER_FILES
from kbgen.vocab import AttemptOutcome, Severity, Status, StepState

SRC = Path(__file__).resolve().parent.parent / "src" / "kbgen"
MAX_LINES = 400
#: the oldest Python a node may run the shipped runner with (probes/worker.py says so too)
OLDEST_NODE_PYTHON = (3, 8)


def _choices(command: click.Command, name: str) -> list[str]:
    param = next(p for p in command.params if p.name == name)
    assert isinstance(param.type, click.Choice)
    return [str(c) for c in param.type.choices]


def test_no_module_is_longer_than_the_limit() -> None:
    long = {
        str(path.relative_to(SRC)): n
        for path in SRC.rglob("*.py")
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}, f"split these modules (over {MAX_LINES} lines): {long}"


def test_cli_choices_are_the_models_values() -> None:
    assert _choices(core_cli.new_bug, "severity") == [s.value for s in Severity]
    assert _choices(bug_cli.status, "new_status") == [s.value for s in Status]
    assert _choices(bug_cli.fix, "outcome") == [o.value for o in AttemptOutcome]
    states = _choices(bug_cli.step, "state")
    assert sorted(states) == sorted("done" if s is StepState.passed else s.value for s in StepState)


@pytest.mark.parametrize("name", RUNNER_FILES)
def test_the_shipped_runner_needs_only_the_standard_library(name: str) -> None:
    """`kbgen fleet probe --ship` sends these files to nodes that have no kbgen and maybe no
    pip: each may import the standard library and the other shipped files, nothing else."""
    source = (PACKAGE / name).read_text(encoding="utf-8")
    tree = ast.parse(source, feature_version=OLDEST_NODE_PYTHON)
    shipped = {"kbgen", *("kbgen." + f[: -len(".py")].replace("/", ".") for f in RUNNER_FILES)}
    shipped |= {m.removesuffix(".__init__") for m in shipped}
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
        for inner in ast.walk(node)
    }
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue  # read by type checkers only, never run on the node
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        else:
            continue
        for module in modules:
            top = module.split(".")[0]
            assert top in sys.stdlib_module_names or module in shipped or top == "torch", (name, module)
