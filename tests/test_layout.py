"""Guards that keep the code base the shape a newcomer can read: no import loop between modules or
between parts of kbgen (``python tests/importgraph.py`` prints the parts), the records below the
site, a bug written without the site, module size, CLI choices that are the models' own values,
and a probe runner that travels to nodes with nothing but Python."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import click
import pytest

from importgraph import SRC, imports, loops, parts_graph
from kbgen.cli import bug as bug_cli
from kbgen.cli import records as records_cli
from kbgen.fleet.ship import PACKAGE, RUNNER_FILES
from kbgen.vocab import AttemptOutcome, Severity, Status, StepState

MAX_LINES = 400
#: the oldest Python a node may run the shipped runner with (probes/worker.py says so too)
OLDEST_NODE_PYTHON = (3, 8)


#: modules below the site: what they hold is shown by the site, never the other way round
BELOW_SITE = (
    "kbgen.fleet",
    "kbgen.kinds",
    "kbgen.links",
    "kbgen.models",
    "kbgen.store",
    "kbgen.store.leftovers",
)


def test_no_modules_import_each_other_in_a_loop() -> None:
    found = loops(imports())
    assert found == [], f"these modules import each other (type-only imports count): {found}"


def test_no_parts_import_each_other_in_a_loop() -> None:
    """Sub-packages and top-level modules, each taken whole, import each other in no loop either:
    a module deep in one package that imports another package that imports the first back is
    the tangle that makes a newcomer's change go wrong."""
    graph = parts_graph(imports())
    assert loops(graph) == [], "these parts of kbgen import each other"


def test_the_loop_finder_finds_a_loop() -> None:
    """The guards above are only as good as the loop finder: it must see a loop made on purpose."""
    assert loops({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert loops({"a": {"b"}, "b": set()}) == []


def test_writing_a_bug_loads_neither_the_site_nor_mkdocs(tmp_path: Path) -> None:
    """`kbgen new-bug` renders bug.md.j2 with kbgen.templating: the site (and mkdocs) stay unloaded."""
    kb = tmp_path / "kb"
    (kb / "bugs").mkdir(parents=True)
    argv = ["--kb", str(kb), "new-bug", "--title", "Loss is NaN", "--severity", "low"]
    code = (
        "import sys\nfrom kbgen.cli import cli\n"
        f"try:\n    cli.main({argv!r}, prog_name='kbgen')\n"
        "except SystemExit as done:\n    assert not done.code, done.code\n"
        "print(sorted(m for m in sys.modules if m.startswith(('kbgen.site', 'mkdocs'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert list((kb / "bugs").glob("BUG-*.md")), done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_the_records_and_the_fleet_never_import_the_site() -> None:
    upward = {
        name: sorted(m for m in deps if m.startswith("kbgen.site"))
        for name, deps in imports().items()
        if name.startswith(BELOW_SITE) and any(m.startswith("kbgen.site") for m in deps)
    }
    assert upward == {}


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
    assert _choices(records_cli.new_bug, "severity") == [s.value for s in Severity]
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
