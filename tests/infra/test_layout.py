"""The layout rules of the infrastructure code, checked on its source (AST scans).

- No product module (``app.py``, ``stacks/``, ``packages/constructs_lib``, ``lambdas/``, ``packages/lambda_resilience``)
  is longer than 400 lines, and none of its functions longer than 60; nor is any module or function of the
  workshop (``ops/``, ``harness/``, ``tools/``, ``packages/local_cloud/src``). Complexity (branches,
  statements, returns, McCabe) is ruff's rule in ``make lint`` (pyproject.toml).
- The order functions' environment variable names are written once, in ``lambdas/order_domain/env.py``:
  every other module (the app, stacks, constructs, Lambda code, packages, ops, tools, examples and
  the tests) uses its constants.

That ``constructs_lib`` is generic (it imports neither the app's stacks nor its Lambda code) is an import-linter
contract (pyproject.toml, ``make lint``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import order_domain.env as env_names
from tests.infra.conftest import REPO_ROOT

MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 400
#: The product's code (its tests are not held to the length rules).
PRODUCT_CODE = tuple(
    REPO_ROOT / name
    for name in (
        "app.py",
        "stacks",
        "packages/constructs_lib/src",
        "lambdas",
        "packages/lambda_resilience/src",
        "packages/iam_conditions/src",
    )
)
#: The workshop is held to the same lengths as the product (the developers' guide states them for the whole
#: project): the operator CLI (``python -m ops``, run against production), the app's scenarios (``harness/``),
#: the tools and the emulator (``packages/local_cloud/src``).
WORKSHOP_CODE = tuple(REPO_ROOT / name for name in ("ops", "harness", "tools", "packages/local_cloud/src"))
ENV_SCAN = tuple(
    REPO_ROOT / name
    for name in (
        "app.py",
        "stacks",
        "lambdas",
        "packages",
        "ops",
        "harness",
        "tools",
        "examples",
        "tests",
    )
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


def _long_functions(source: str) -> dict[str, int]:
    return {
        f"{f.name} (line {f.lineno})": lines
        for f in _functions(ast.parse(source))
        if (lines := (f.end_lineno or f.lineno) - f.lineno + 1) > MAX_FUNCTION_LINES
    }


def _too_long(files: list[Path]) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """(modules over the limit: lines, {module: functions over the limit: lines})."""
    long_modules = {
        str(p.relative_to(REPO_ROOT)): n for p in files if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    long_functions = {str(p.relative_to(REPO_ROOT)): f for p in files if (f := _long_functions(p.read_text()))}
    return long_modules, long_functions


def test_layout_product_modules_at_most_400_lines_and_functions_at_most_60() -> None:
    files = _python_files(*PRODUCT_CODE)
    assert REPO_ROOT / "packages/constructs_lib/src/constructs_lib/generic_saga.py" in files and len(files) > 100
    long_modules, long_functions = _too_long(files)
    assert long_modules == {}, f"modules over {MAX_MODULE_LINES} lines"
    assert long_functions == {}, f"functions over {MAX_FUNCTION_LINES} lines"


def test_layout_workshop_modules_at_most_400_lines_and_functions_at_most_60() -> None:
    files = _python_files(*WORKSHOP_CODE)
    expected = ("ops/cli.py", "harness/cli.py", "tools/bench.py", "packages/local_cloud/src/local_cloud/iam_enforce.py")
    assert {REPO_ROOT / name for name in expected} <= set(files) and len(files) > 100
    long_modules, long_functions = _too_long(files)
    assert long_modules == {}, f"modules over {MAX_MODULE_LINES} lines"
    assert long_functions == {}, f"functions over {MAX_FUNCTION_LINES} lines"


def test_layout_length_check_can_fail() -> None:
    body = "\n".join(f"    x = {i}" for i in range(MAX_FUNCTION_LINES))
    assert _long_functions(f"def f():\n{body}\n") == {"f (line 1)": MAX_FUNCTION_LINES + 1}
    assert _long_functions("def g():\n    return 1\n") == {}


def test_layout_env_names_written_only_in_env_module() -> None:
    found = []
    for path in _python_files(*ENV_SCAN):
        if path.resolve() == ENV_MODULE:
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Constant) and node.value in ENV_NAMES:
                found.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}: {node.value!r}")
    assert found == [], "use the constants of order_domain.env instead:\n" + "\n".join(found)
