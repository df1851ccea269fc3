"""What the import contracts (pyproject.toml ``[tool.importlinter]``, ``make lint``) cannot see: the emulator's
own tests (a folder of top-level modules, not a package) import nothing of the app, the former hub modules
import first in a fresh interpreter, and no module edits ``sys.path``. No import cycle among the modules of
``harness`` and ``local_cloud``, ``local_cloud`` importing nothing of the app, and the product's tests and the
tools importing nothing of the emulator are contracts."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LOCAL_CLOUD = REPO / "packages" / "local_cloud" / "src" / "local_cloud"
#: Top-level packages of the app: the emulator imports none of them.
APP_PACKAGES = (
    "order_domain", "sandbox", "lambda_resilience", "stacks", "constructs_lib", "ops", "harness", "tools", "tests",
)  # fmt: skip
#: Directories never scanned: virtualenvs (ours, and `make rehearse`'s MiniStack one in .rehearse/, whose
#: third-party files are not ours to parse), build output, npm, caches.
SKIPPED_DIRS = {
    ".venv", ".rehearse", ".build", "build", "cdk.out", "cdk.out.prod", "node_modules", ".git", "__pycache__",
    "reports", ".pytest_cache", ".mypy_cache", ".ruff_cache",
}  # fmt: skip


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported_modules(source: str, *, typing_too: bool = False) -> set[str]:
    """Every module a module imports (top level or inside functions); ``typing_too``: also those
    under ``if TYPE_CHECKING:``. ``from a import b`` counts as ``a`` and ``a.b``."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node) and not typing_too:
            for branch in node.orelse:
                visit(branch)
            return
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    return found


def python_files(root: Path) -> Iterator[Path]:
    """The ``.py`` files under ``root``, skipping the virtualenv, build output and npm packages."""
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = [d for d in subdirs if d not in SKIPPED_DIRS and not d.endswith(".egg-info")]
        yield from (Path(directory) / f for f in files if f.endswith(".py"))


def _top(module: str) -> str:
    return module.split(".", 1)[0]


# -- fresh interpreters ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "module",
    [
        "harness.reporting.reporter",
        "local_cloud.deploy",
        "local_cloud.emulator",
        "harness.stack.pipeline",
        "harness.run.run",
    ],
)
def test_module_graph_former_hubs_import_first_in_a_fresh_interpreter(module: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", f"import {module}"], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr


# -- boundaries --------------------------------------------------------------------------------------
def test_module_graph_local_cloud_tests_import_nothing_of_the_app() -> None:
    """The emulator's tests, and the fixtures they own, stand with the package (its sources: a contract)."""
    offenders = {
        str(path.relative_to(REPO)): sorted(m for m in imported_modules(path.read_text(), typing_too=True) if m in bad)
        for path in python_files(LOCAL_CLOUD.parents[1] / "tests")
        if (bad := {m for m in imported_modules(path.read_text(), typing_too=True) if _top(m) in APP_PACKAGES})
    }
    assert offenders == {}


def sys_path_uses(source: str) -> list[int]:
    """Lines where code reads or edits ``sys.path`` (``sys.path`` itself, or ``from sys import path``)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr == "path" and isinstance(node.value, ast.Name):
            if node.value.id == "sys":
                lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "sys" and any(a.name == "path" for a in node.names):
            lines.append(node.lineno)
    return lines


def test_module_graph_no_module_edits_sys_path() -> None:
    """Imports resolve through the installed packages (editable in the virtualenv), never a path edit."""
    offenders = {str(p.relative_to(REPO)): lines for p in python_files(REPO) if (lines := sys_path_uses(p.read_text()))}
    assert offenders == {}


def test_module_graph_boundary_checks_can_fail() -> None:
    """The scanners see what they must: an app import, an emulator import, a sys.path edit."""
    assert "order_domain.clock" in imported_modules("def f():\n    from order_domain import clock\n")
    assert "local_cloud.lambda_runtime" in imported_modules("import local_cloud.lambda_runtime\n")
    assert "harness.stack.pipeline" in imported_modules(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import harness.stack.pipeline\n", typing_too=True
    )
    assert sys_path_uses("import sys\nsys.path.insert(0, 'x')\n") == [2]
    assert sys_path_uses("from sys import path\n") == [1]


def test_module_graph_scan_skips_every_directory_git_ignores() -> None:
    """A directory .gitignore names (a virtualenv, build output) holds files that are not ours: the
    scans must not parse them (make rehearse's .rehearse/ venv has a file Python's parser refuses)."""
    ignored = {
        line.strip().strip("/")
        for line in (REPO / ".gitignore").read_text().splitlines()
        if line.strip().endswith("/") and not line.startswith("#") and "*" not in line
    }
    assert ignored and ignored <= SKIPPED_DIRS, sorted(ignored - SKIPPED_DIRS)
