"""mypy skips the aws_cdk modules the code does not import (pyproject.toml [tool.mypy]): every one it imports
must stay checked, or its classes would silently become Any."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
#: What `make typecheck` checks (Makefile: typecheck).
CHECKED = ("app.py", "stacks", "ops", "harness", "tools", "lambdas", "examples", "packages", "tests")
LEFT_OUT = {".venv", "build", "cdk.out", "node_modules", ".build"}


def _cdk_modules_imported() -> set[str]:
    found: set[str] = set()
    for root in CHECKED:
        path = REPO_ROOT / root
        for source in [path] if path.is_file() else path.rglob("*.py"):
            if LEFT_OUT & set(source.relative_to(REPO_ROOT).parts):
                continue
            for node in ast.walk(ast.parse(source.read_text())):
                if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "aws_cdk":
                    found.add(node.module)
                    if node.module == "aws_cdk":
                        found |= {f"aws_cdk.{a.name}" for a in node.names if a.name[0].islower()}
                elif isinstance(node, ast.Import):
                    found |= {a.name for a in node.names if a.name.split(".")[0] == "aws_cdk"}
    return found


def _overrides() -> list[dict[str, Any]]:
    return list(tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["overrides"])


def test_mypy_config_checks_every_cdk_module_the_code_imports() -> None:
    (skipped,) = [o for o in _overrides() if o.get("follow_imports") == "skip"]
    (checked,) = [o for o in _overrides() if o.get("follow_imports") == "normal"]
    assert skipped["module"] == ["aws_cdk.*"]
    imported = _cdk_modules_imported()
    assert "aws_cdk.aws_lambda" in imported  # the walk finds the imports
    assert imported <= set(checked["module"]), (
        f"add to pyproject.toml's checked aws_cdk modules: {sorted(imported - set(checked['module']))}"
    )
