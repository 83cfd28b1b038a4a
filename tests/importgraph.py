"""kbgen's import graph, read from the source (no import is run): the modules each module imports,
the loops in a graph, and the same graph by part of kbgen (a sub-package, or a top-level module).

``tests/test_layout.py`` keeps the graph free of loops. Run it to see the parts, lowest first::

    python tests/importgraph.py          # each part: modules, lines, and the parts it imports
    python tests/importgraph.py --dot    # the same as a Graphviz graph
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "kbgen"


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports() -> dict[str, set[str]]:
    """Module -> the kbgen modules it imports anywhere: at the top, inside functions, and under
    ``if TYPE_CHECKING:`` alike (a loop of type-only imports is a loop to a reader)."""
    paths = {module_name(p): p for p in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name in paths)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                found.update(f"{base}.{a.name}" if f"{base}.{a.name}" in paths else base for a in node.names)
        graph[name] = {m for m in found if m in paths and m != name}
    return graph


def loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or round about (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    loops: list[list[str]] = []

    def visit(name: str) -> None:
        index[name] = low[name] = len(index)
        stack.append(name)
        for other in sorted(graph[name]):
            if other not in index:
                visit(other)
                low[name] = min(low[name], low[other])
            elif other in stack:
                low[name] = min(low[name], index[other])
        if low[name] == index[name]:
            group = stack[stack.index(name) :]
            del stack[stack.index(name) :]
            if len(group) > 1:
                loops.append(sorted(group))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return loops


def part(module: str) -> str:
    """The part of kbgen a module belongs to: its sub-package (``kbgen.site``), or itself when it
    is a module of kbgen's top level (``kbgen.models``)."""
    return ".".join(module.split(".")[:2])


def parts_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """``graph`` with each part of kbgen taken whole; a part's imports of itself are left out."""
    parts: dict[str, set[str]] = {}
    for name, deps in graph.items():
        parts.setdefault(part(name), set()).update(part(m) for m in deps if part(m) != part(name))
    for deps in list(parts.values()):
        for dep in deps:
            parts.setdefault(dep, set())
    return parts


def _layers(graph: dict[str, set[str]]) -> list[str]:
    """The parts, each after everything it imports (the graph has no loop)."""
    done: list[str] = []
    while len(done) < len(graph):
        ready = sorted(n for n, deps in graph.items() if n not in done and deps <= set(done))
        if not ready:
            return done + sorted(set(graph) - set(done))
        done += ready
    return done


def main(argv: list[str]) -> int:
    graph = imports()
    parts = parts_graph(graph)
    sizes: dict[str, tuple[int, int]] = {}
    for path in SRC.rglob("*.py"):
        name = part(module_name(path))
        count, lines = sizes.get(name, (0, 0))
        sizes[name] = (count + 1, lines + len(path.read_text(encoding="utf-8").splitlines()))
    if "--dot" in argv:
        print("digraph kbgen {\n  rankdir=BT;")
        for name in _layers(parts):
            for dep in sorted(parts[name]):
                print(f'  "{name}" -> "{dep}";')
        print("}")
        return 0
    for name in _layers(parts):
        count, lines = sizes[name]
        uses = ", ".join(d.removeprefix("kbgen.") for d in sorted(parts[name])) or "-"
        short = name.removeprefix("kbgen.")
        print(f"{short:<14} {count:>3} modules {lines:>6} lines  imports: {uses}")
    total = sum(c for c, _ in sizes.values()), sum(n for _, n in sizes.values())
    print(f"{len(parts)} parts, {total[0]} modules, {total[1]} lines; loops: {loops(parts) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
