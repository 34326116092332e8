"""No import cycles in the product (app/ and engine/): every module stands above the ones it imports.

Read from the source with `ast`, so nothing is imported and no Qt, torch or server starts. Every
import counts, wherever it is written: at the top, inside a function (a lazy import is still an
arrow), and under `if TYPE_CHECKING:` (a type a module needs is part of what it stands on).
Not counted: the package `__init__` that Python runs before a submodule (`engine/__init__.py` re-exports
the engine's public face from its submodules; loading it first is not an arrow from them back up).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("app", "engine")


def product_modules() -> dict[str, Path]:
    """Dotted name -> file, for every module of the product (a package is its __init__.py)."""
    modules = {}
    for top in PRODUCT:
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The product modules that `name` (at `path`) imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str | None] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(_known(alias.name, modules) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = parts[: len(parts) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:  # `from pkg import module` imports the module, not only pkg
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in modules else _known(base, modules))
    found.discard(None)
    found.discard(name)
    return found  # type: ignore[return-value]


def _known(dotted: str, modules: dict[str, Path]) -> str | None:
    """The product module `dotted` loads (its longest known prefix), or None outside the product."""
    parts = dotted.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def import_graph() -> dict[str, set[str]]:
    modules = product_modules()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each group of modules that import each other round, as a shortest closed path through its
    first module: [a, b, c, a]."""
    return sorted(_closed_path(graph, group) for group in tangles(graph))


def tangles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The groups of two or more modules that import each other round (Tarjan's strongly connected
    components)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(v: str) -> None:  # the product has a few hundred modules: recursion depth is no concern
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(group)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def _closed_path(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """A shortest cycle through the group's first module (breadth first)."""
    start = min(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for v in frontier:
            for w in sorted(graph.get(v, set()) & group):
                if w == start:
                    return paths[v] + [start]
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    following.append(w)
        frontier = following
    raise AssertionError(f"no cycle through {start}")  # a strongly connected group always has one


def test_the_product_has_no_import_cycle():
    graph = import_graph()
    found = [(_closed_path(graph, group), sorted(group)) for group in tangles(graph)]
    assert not found, "import cycles (cut each by moving what both sides need into a module below both):\n" + (
        "\n".join(f"{' -> '.join(path)}   (tangled: {', '.join(group)})" for path, group in found))


def test_the_walk_sees_every_kind_of_import():
    """The graph holds the arrows the rules above promise (an empty graph would pass the test above)."""
    graph = import_graph()
    assert "engine.errors" in graph["engine.session"]  # from .errors import (...) at the top
    assert "app.bridge" in graph["app.models.loader"]  # from app.bridge import GuiRoute
    assert "app.devtools.self_test" in graph["app.__main__"]  # inside a function
    assert "engine" in graph["app.application"]  # the engine's public face
    assert {"engine.capacity", "engine.state_file"} <= graph["engine.worker"]  # from . import capacity, state_file
    assert "engine.errors" in graph["engine.remote.session"]  # from ..errors import ...


def test_a_cycle_is_reported_with_its_path():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b", "c"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}) == [["a", "b", "a"], ["c", "d", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
