"""The local emulator's modules import each other without a cycle (runtime imports, lazy ones included)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
OPS_LOCAL = REPO / "ops" / "local"


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def runtime_imports(source: str) -> set[str]:
    """``ops.local`` modules a module imports when it runs (top level or inside functions), not for typing."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for branch in node.orelse:
                visit(branch)
            return
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "ops.local":
                found.update(f"ops.local.{alias.name}" for alias in node.names)
            elif node.module.startswith("ops.local."):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("ops.local."))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    return found


def import_graph() -> dict[str, set[str]]:
    graph = {}
    for path in sorted(OPS_LOCAL.glob("*.py")):
        name = f"ops.local.{path.stem}" if path.stem != "__init__" else "ops.local"
        graph[name] = {m for m in runtime_imports(path.read_text()) if m != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path (first module repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def dfs(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (cycle := dfs(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := dfs(node)):
            return cycle
    return None


def test_module_graph_has_no_import_cycle() -> None:
    graph = import_graph()
    assert "ops.local.run" in graph and "ops.local.reporter" in graph
    assert find_cycle(graph) is None


def test_module_graph_finder_reports_a_cycle() -> None:
    """The checker itself can fail: a two-module cycle is found."""
    assert find_cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]


def test_module_graph_report_no_longer_imports_run() -> None:
    """The former run <-> report cycle: the readers take their clients from local_cloud.clients."""
    graph = import_graph()
    assert "ops.local.run" not in graph["ops.local.report"]
    assert "ops.local.run" not in graph["ops.local.reporter"]


@pytest.mark.parametrize("module", ["ops.local.reporter", "local_cloud.deploy", "ops.local.pipeline", "ops.local.run"])
def test_module_graph_former_hubs_import_first_in_a_fresh_interpreter(module: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", f"import {module}"], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
