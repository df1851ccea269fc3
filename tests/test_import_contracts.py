"""The import rules are import-linter contracts (pyproject.toml, ``[tool.importlinter]``), run by ``make lint``.

These tests check what the contracts cannot: that every top-level package of the repository is one the
contracts look at, and that ``make unit`` collects the product's tests only.
"""

from __future__ import annotations

import subprocess
import sys
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


def test_import_contracts_harness_layers_name_every_group() -> None:
    """The harness is a few named groups under one entry point (``python -m harness``), in a fixed order: the
    layers contract names each of its packages and modules once, and holds the entry point on top."""
    layers = _contract("harness-layers")
    assert layers["containers"] == ["harness"] and layers["exhaustive"] is True
    named = [name.strip() for layer in layers["layers"] for name in layer.split(":")]
    harness = REPO / "harness"
    children = {p.stem for p in harness.glob("*.py") if p.stem != "__init__"}
    children |= {d.name for d in harness.iterdir() if (d / "__init__.py").is_file()}
    assert sorted(named) == sorted(children)
    assert named[:2] == ["__main__", "cli"] and named[-1] == "workload"
    assert {p.stem for p in harness.glob("*.py")} == {"__init__", "__main__", "cli", "cli_run"}


def test_import_contracts_no_package_is_git_ignored() -> None:
    """A package in a folder .gitignore names (``reports/``, the run output) is skipped by git, ruff and the
    module-graph scans: every package's ``__init__.py`` is one git tracks."""
    tops = [d for root in PACKAGE_ROOTS for d in root.iterdir() if (d / "__init__.py").is_file()]
    inits = [str(p.relative_to(REPO)) for top in tops if top.name not in NOT_PYTHON for p in top.rglob("__init__.py")]
    assert "harness/reporting/__init__.py" in inits
    ignored = subprocess.run(["git", "check-ignore", *inits], cwd=REPO, capture_output=True, text=True, check=False)
    assert ignored.stdout.split() == []


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
        "--ignore=tests/explore",
    ]
    test_dirs = {p.name for p in (REPO / "tests").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    sources = set(_contract("product-without-workshop")["source_modules"])
    assert {f"tests.{d}" for d in test_dirs - {"ops", "e2e", "explore"}} <= sources


# -- the contract type the rules rely on sees what the walkers saw ------------------------------------------------
CONFIG_UNDER_TEST = """
[tool.importlinter]
root_packages = ["prod", "work"]

[[tool.importlinter.contracts]]
id = "entry-without-work"
name = "prod.a imports nothing of work"
type = "forbidden"
source_modules = ["prod.a"]
forbidden_modules = ["work"]
"""


def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    (root / "pyproject.toml").write_text(CONFIG_UNDER_TEST)
    command = [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"]
    return subprocess.run(command, cwd=root, capture_output=True, text=True, timeout=120, check=False)


def test_import_contracts_forbidden_finds_a_lazy_relative_and_typing_only_chain(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "prod/__init__.py": "",
            "prod/a.py": "def f():\n    from . import b\n",
            "prod/b.py": "from prod.sub import c\n",
            "prod/sub/__init__.py": "",
            "prod/sub/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import work.capacity\n",
            "work/__init__.py": "",
            "work/capacity.py": "",
        },
    )
    result = _lint_imports(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    # a -> (lazy, relative) prod.b -> prod.sub.c -> (typing only) work.capacity
    chain = ["prod.a -> prod.b", "prod.b -> prod.sub.c", "prod.sub.c -> work.capacity"]
    assert all(link in result.stdout for link in chain), result.stdout


def test_import_contracts_forbidden_passes_a_clean_tree(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "prod/__init__.py": "",
            "prod/a.py": "import json\nfrom prod import b\n",
            "prod/b.py": "",
            "work/__init__.py": "",
        },
    )
    result = _lint_imports(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
