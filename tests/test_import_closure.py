"""The product stands without its workshop: nothing of the harness is reachable from the product.

The product is the CDK app (``app.py``, ``stacks/``, ``constructs_lib/``), the Lambda code
(``lambdas/``), the middleware (``packages/lambda_resilience``) and the product's tests
(``tests/infra``, ``tests/handlers``, ``tests/middleware`` and the top-level ``tests/*.py``). The
harness is the emulator (``packages/local_cloud``), the operator CLI and the app's scenarios
(``ops/``, and ``harness/`` once the scenarios move there), the tools (``tools/``) and the
harness's tests (``tests/ops``, ``tests/e2e``).

The check follows the whole import closure: every import a product module makes (top level,
inside functions, under ``if TYPE_CHECKING:``, and ``importlib.import_module("literal")``), then
every import of what that resolves to, and so on, so ``stacks -> a product module -> ops.x ->
local_cloud.y`` is found as well as a direct import. The same walk from the emulator's package (its
sources and its own tests, ``packages/local_cloud/tests``) reaches nothing of the app.

Why an AST walk rather than :mod:`modulefinder`: modulefinder compiles and follows every
third-party package too (aws_cdk, jsii, boto3: slow) and does not follow
``importlib.import_module("...")``; the walk below resolves our own modules exactly (the same search
path as the virtualenv: the repository, the two ``src`` folders and ``lambdas/``) and treats every
other import as a leaf.
"""

from __future__ import annotations

import ast
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: Where our modules are imported from (pyproject's pythonpath and the editable installs).
SEARCH_PATH = (
    REPO,
    REPO / "packages" / "lambda_resilience" / "src",
    REPO / "packages" / "local_cloud" / "src",
    REPO / "lambdas",
)
#: The product's files: every module of these folders (recursively) and these files.
PRODUCT_DIRS = (
    "stacks",
    "constructs_lib",
    "lambdas",
    "packages/lambda_resilience/src",
    "tests/infra",
    "tests/handlers",
    "tests/middleware",
)
PRODUCT_FILES = ("app.py", *(str(p.relative_to(REPO)) for p in sorted((REPO / "tests").glob("*.py"))))
#: The harness, by top-level package, and by folder (whatever name a module is reached under).
HARNESS_PACKAGES = frozenset({"ops", "harness", "local_cloud", "tools"})
HARNESS_DIRS = (
    REPO / "ops",
    REPO / "harness",
    REPO / "packages" / "local_cloud",
    REPO / "tools",
    REPO / "tests" / "ops",
    REPO / "tests" / "e2e",
    REPO / "tests" / "explore",
)
SKIPPED_DIRS = {"__pycache__", ".venv", "cdk.out", "node_modules", ".build"}
#: The emulator's package: its sources and its own tests, which run with the package, its pinned
#: dependencies and the fixtures they own (``import clocks`` resolves to ``tests/clocks.py`` there).
EMULATOR = REPO / "packages" / "local_cloud"
EMULATOR_SEARCH_PATH = (EMULATOR / "tests", *SEARCH_PATH)


@dataclass(frozen=True)
class Module:
    name: str
    path: Path | None  # None: a namespace package (a folder without __init__.py)

    @property
    def is_package(self) -> bool:
        return self.path is None or self.path.name == "__init__.py"


class Resolver:
    """Dotted names -> our files, on ``search_path``; anything not found there is third party."""

    def __init__(self, search_path: Iterable[Path]) -> None:
        self.search_path = tuple(search_path)

    def find(self, name: str) -> Module | None:
        parts = name.split(".")
        for root in self.search_path:
            base = root.joinpath(*parts)
            if (base / "__init__.py").is_file():
                return Module(name, base / "__init__.py")
            if base.with_suffix(".py").is_file():
                return Module(name, base.with_suffix(".py"))
            if base.is_dir() and len(parts) > 1:  # a namespace sub-package (never a bare top-level folder)
                return Module(name, None)
        return None

    def name_of(self, path: Path) -> str:
        """The dotted name ``path`` is imported as (relative to the deepest search-path root holding it)."""
        roots = [r for r in self.search_path if path.is_relative_to(r)]
        rel = path.relative_to(max(roots, key=lambda r: len(r.parts))).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        return ".".join(parts)


def imported_names(module: Module, source: str) -> Iterator[str]:
    """Every dotted name ``module`` imports, its parent packages included (importing ``a.b.c`` runs
    ``a`` and ``a.b``); ``from a import b`` yields ``a`` and ``a.b`` (a submodule or an attribute)."""
    package = module.name.split(".") if module.is_package else module.name.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            stem = ".".join([*base, *([node.module] if node.module else [])])
            names = [stem, *(f"{stem}.{a.name}" for a in node.names if a.name != "*")] if stem else []
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, (ast.Attribute, ast.Name))
            and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id)
            in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names = [node.args[0].value]
        for name in names:
            parts = name.split(".")
            yield from (".".join(parts[: i + 1]) for i in range(len(parts)))


def python_files(root: Path) -> Iterator[Path]:
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = [d for d in subdirs if d not in SKIPPED_DIRS and not d.endswith(".egg-info")]
        yield from (Path(directory) / f for f in sorted(files) if f.endswith(".py"))


def is_harness(name: str, module: Module | None) -> bool:
    if name.split(".", 1)[0] in HARNESS_PACKAGES:
        return True
    return module is not None and module.path is not None and any(module.path.is_relative_to(d) for d in HARNESS_DIRS)


def outside(root: Path) -> Callable[[str, Module | None], bool]:
    """A module of ours that is not under ``root`` (for the emulator: anything of the app)."""

    def check(name: str, module: Module | None) -> bool:
        return module is not None and module.path is not None and not module.path.is_relative_to(root)

    return check


def harness_reached(
    start: Iterable[Path], resolver: Resolver, forbidden: Callable[[str, Module | None], bool] = is_harness
) -> dict[str, list[str]]:
    """Each ``forbidden`` module (by default: of the harness) reachable from ``start``, with the import
    chain that reaches it."""
    queue: deque[tuple[Module, list[str]]] = deque()
    seen: set[str] = set()
    for path in start:
        module = Module(resolver.name_of(path), path)
        seen.add(module.name)
        queue.append((module, [str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)]))
    reached: dict[str, list[str]] = {}
    while queue:
        module, chain = queue.popleft()
        if module.path is None:
            continue
        for name in imported_names(module, module.path.read_text()):
            if name in seen:
                continue
            seen.add(name)
            found = resolver.find(name)
            if forbidden(name, found):
                reached[name] = [*chain, name]
            elif found is not None:
                queue.append((found, [*chain, name]))
    return reached


def product_files() -> list[Path]:
    files = [REPO / f for f in PRODUCT_FILES]
    for directory in PRODUCT_DIRS:
        files.extend(python_files(REPO / directory))
    return files


# -- the product -------------------------------------------------------------------------------------
def test_import_closure_of_the_product_reaches_nothing_of_the_harness() -> None:
    files = product_files()
    assert (
        REPO / "stacks" / "order_constructs" / "api.py" in files
        and REPO / "tests" / "handlers" / "conftest.py" in files
    )
    reached = harness_reached(files, Resolver(SEARCH_PATH))
    assert reached == {}, "\n".join(" -> ".join(chain) for chain in reached.values())


# -- the emulator ---------------------------------------------------------------------------------------
def test_import_closure_of_the_emulator_and_its_tests_reaches_nothing_of_the_app() -> None:
    """``packages/local_cloud`` (sources and tests) stands alone: nothing of the app (stacks, lambdas,
    the layer packages, the harness, ops, tools, the repository's tests) is reachable from it."""
    files = list(python_files(EMULATOR))
    assert EMULATOR / "tests" / "test_patch_canaries.py" in files and EMULATOR / "tests" / "conftest.py" in files
    reached = harness_reached(files, Resolver(EMULATOR_SEARCH_PATH), outside(EMULATOR))
    assert reached == {}, "\n".join(" -> ".join(chain) for chain in reached.values())


# -- the checker can fail ------------------------------------------------------------------------------
def _tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_import_closure_finds_a_transitive_and_a_relative_import(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "prod/__init__.py": "",
            "prod/a.py": "def f():\n    from . import b\n",
            "prod/b.py": "from prod.sub import c\n",
            "prod/sub/__init__.py": "",
            "prod/sub/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import ops.capacity\n",
            "prod/d.py": "import importlib\nimportlib.import_module('local_cloud.limits')\n",
        },
    )
    reached = harness_reached([tmp_path / "prod" / "a.py", tmp_path / "prod" / "d.py"], Resolver([tmp_path]))
    # a -> (lazy, relative) prod.b -> prod.sub.c -> (typing only) ops.capacity; d -> import_module(...)
    assert reached["ops.capacity"][1:] == ["prod.b", "prod.sub.c", "ops.capacity"]
    assert reached["local_cloud.limits"][1:] == ["local_cloud.limits"]
    assert set(reached) == {"ops", "ops.capacity", "local_cloud", "local_cloud.limits"}


def test_import_closure_of_a_clean_tree_is_empty(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {"prod/__init__.py": "", "prod/a.py": "import json\nfrom prod import b\n", "prod/b.py": "import boto3\n"},
    )
    assert harness_reached([tmp_path / "prod" / "a.py"], Resolver([tmp_path])) == {}


def test_import_closure_make_unit_runs_the_product_tests_only() -> None:
    """``make unit`` collects the folders this closure covers, nothing of the harness's tests."""
    makefile = (REPO / "Makefile").read_text()
    (line,) = [line for line in makefile.splitlines() if line.startswith("PRODUCT_TESTS :=")]
    assert line.split(":=", 1)[1].split() == [
        "tests",
        "--ignore=tests/ops",
        "--ignore=tests/e2e",
        "--ignore=tests/explore",
    ]
    test_dirs = {p.name for p in (REPO / "tests").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert test_dirs - {"ops", "e2e", "explore"} == {d.split("/", 1)[1] for d in PRODUCT_DIRS if d.startswith("tests/")}


def test_import_closure_finds_an_emulator_test_reaching_the_app_through_a_fixture(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "emu/tests/test_a.py": "import helper\n",
            "emu/tests/helper.py": "def f():\n    from stacks.order import api\n",
            "emu/tests/clean.py": "import json\nimport helper_ok\n",
            "emu/tests/helper_ok.py": "import boto3\n",
            "stacks/order/api.py": "",
        },
    )
    resolver = Resolver([tmp_path / "emu" / "tests", tmp_path])
    forbidden = outside(tmp_path / "emu")
    reached = harness_reached([tmp_path / "emu" / "tests" / "test_a.py"], resolver, forbidden)
    assert reached["stacks.order.api"][1:] == ["helper", "stacks.order.api"]
    assert harness_reached([tmp_path / "emu" / "tests" / "clean.py"], resolver, forbidden) == {}
