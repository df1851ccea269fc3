"""The import rules are import-linter contracts (pyproject.toml, ``[tool.importlinter]``), run by ``make lint``.

These tests check what the contracts cannot: that every top-level package of the repository is one the
contracts look at, and that ``make unit`` collects the product's tests only.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CONFIG = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
#: Where our packages live: the repository root, the two ``src`` folders and ``lambdas/`` (the layer packages).
PACKAGE_ROOTS = (
    REPO,
    REPO / "lambdas",
    *(p / "src" for p in sorted((REPO / "packages").iterdir()) if (p / "src").is_dir()),
)
NOT_PYTHON = {"node_modules", "cdk.out", "cdk.out.prod", "docs", "packages", "reports"}


def _contract(contract_id: str) -> dict[str, Any]:
    (contract,) = [c for c in CONFIG["contracts"] if c["id"] == contract_id]
    return contract


def test_import_contracts_cover_every_top_level_package() -> None:
    """A new package (a folder with ``__init__.py``) is a root package of the contracts, or it escapes them."""
    found = {
        d.name
        for root in PACKAGE_ROOTS
        for d in root.iterdir()
        if d.is_dir() and (d / "__init__.py").is_file() and d.name not in NOT_PYTHON
    }
    assert {"stacks", "constructs_lib", "local_cloud", "iam_conditions", "order_domain"} <= found
    assert found <= set(CONFIG["root_packages"]), sorted(found - set(CONFIG["root_packages"]))


def test_import_contracts_product_and_workshop_are_disjoint() -> None:
    product = _contract("product-without-workshop")
    assert {"stacks", "constructs_lib", "lambdas", "iam_conditions"} <= set(product["source_modules"])
    assert {"local_cloud", "harness", "tools"} <= set(product["forbidden_modules"])


def test_import_contracts_make_lint_runs_them() -> None:
    makefile = (REPO / "Makefile").read_text()
    lint = makefile.split("\nlint:", 1)[1].split("\n\n", 1)[0]
    assert "lint-imports" in lint


def test_import_contracts_make_unit_runs_the_product_tests_only() -> None:
    """``make unit`` collects the product's test folders (those the contracts hold to the product's rule)."""
    makefile = (REPO / "Makefile").read_text()
    (line,) = [line for line in makefile.splitlines() if line.startswith("PRODUCT_TESTS :=")]
    assert line.split(":=", 1)[1].split() == [
        "tests",
        "packages/iam_conditions/tests",
        "--ignore=tests/ops",
        "--ignore=tests/e2e",
    ]
    test_dirs = {p.name for p in (REPO / "tests").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    sources = set(_contract("product-without-workshop")["source_modules"])
    assert {f"tests.{d}" for d in test_dirs - {"ops", "e2e"}} <= sources
