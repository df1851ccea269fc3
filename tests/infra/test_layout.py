"""The layout rules of the infrastructure code, checked on its source (AST scans).

- No function in ``stacks/`` (the stack, its constructs) is longer than 60 lines.
- The order functions' environment variable names are written once, in ``lambdas/order_domain/env.py``:
  every other module (the app, stacks, constructs, Lambda code, packages, ops, tools, examples and
  the tests) uses its constants.
- ``constructs_lib`` is generic: it imports neither the app's stacks nor its Lambda code.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import order_domain.env as env_names
from tests.infra.conftest import REPO_ROOT

MAX_FUNCTION_LINES = 60
ENV_SCAN = tuple(
    REPO_ROOT / name
    for name in ("app.py", "stacks", "constructs_lib", "lambdas", "packages", "ops", "tools", "examples", "tests")
)
ENV_MODULE = Path(env_names.__file__).resolve()
#: Every name ``order_domain.env`` defines (its upper-case string constants).
ENV_NAMES = {value for name, value in vars(env_names).items() if name.isupper() and isinstance(value, str) and value}


def _python_files(*roots: Path) -> list[Path]:
    files: list[Path] = []
    for root in roots:
        files.extend([root] if root.is_file() else sorted(root.rglob("*.py")))
    return files


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def test_layout_env_names_known() -> None:
    """The scan below looks for something: the module defines the names the stack sets."""
    assert len(ENV_NAMES) >= 20
    assert {env_names.ORDERS_TABLE_NAME, env_names.STATE_MACHINE_ARN, env_names.REPLAY_TARGETS} <= ENV_NAMES


@pytest.mark.parametrize("path", _python_files(REPO_ROOT / "stacks"), ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_layout_stack_functions_at_most_60_lines(path: Path) -> None:
    tree = ast.parse(path.read_text(), filename=str(path))
    long = {
        f"{f.name} (line {f.lineno})": (f.end_lineno or f.lineno) - f.lineno + 1
        for f in _functions(tree)
        if (f.end_lineno or f.lineno) - f.lineno + 1 > MAX_FUNCTION_LINES
    }
    assert long == {}, f"{path.relative_to(REPO_ROOT)}: functions over {MAX_FUNCTION_LINES} lines"


def test_layout_env_names_written_only_in_env_module() -> None:
    found = []
    for path in _python_files(*ENV_SCAN):
        if path.resolve() == ENV_MODULE:
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Constant) and node.value in ENV_NAMES:
                found.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}: {node.value!r}")
    assert found == [], "use the constants of order_domain.env instead:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "path", _python_files(REPO_ROOT / "constructs_lib"), ids=lambda p: str(p.relative_to(REPO_ROOT))
)
def test_layout_constructs_lib_imports_no_app_code(path: Path) -> None:
    imported: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            imported.add(node.module.split(".")[0])
    assert imported.isdisjoint({"stacks", "order_domain", "sandbox", "lambda_resilience", "ops"})
