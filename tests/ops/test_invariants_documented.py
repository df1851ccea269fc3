"""docs/design.md lists every invariant with the test that checks it (issue 40's acceptance).

Every run invariant (``harness.reporting.invariants.CHECKS``: ``ops local run --check``, chaos, faults, spike) and
every exploration invariant (``tests/explore/invariants.py``'s ``INVARIANTS``) is the first cell of a
table row of docs/design.md that names a test function (`` `test_...` ``), and each test so named is
defined under tests/. The exploration's names are read from its source (tests.ops may not import
tests.explore: the ``tests-layers`` import contract).
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

from harness.reporting.invariants import CHECKS

ROOT = Path(__file__).resolve().parents[2]
DESIGN = ROOT / "docs" / "design.md"
EXPLORE_INVARIANTS = ROOT / "tests" / "explore" / "invariants.py"
ROW = re.compile(r"^\|\s*`(?P<name>[a-z0-9_]+)`\s*\|(?P<rest>.*)\|\s*$")
TEST_NAME = re.compile(r"`(test_[A-Za-z0-9_]+)`")


def exploration_invariants() -> list[str]:
    """The keys of ``INVARIANTS = {...}`` in tests/explore/invariants.py, read from its syntax tree."""
    for node in ast.parse(EXPLORE_INVARIANTS.read_text()).body:
        target: ast.expr | None = None
        if isinstance(node, ast.AnnAssign):
            target = node.target
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and target.id == "INVARIANTS" and isinstance(value, ast.Dict):
            return [k.value for k in value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    raise AssertionError(f"no INVARIANTS dict in {EXPLORE_INVARIANTS}")


@functools.cache
def documented_tests() -> dict[str, list[str]]:
    """``{invariant: [test names]}`` from docs/design.md's table rows whose first cell is `` `name` ``."""
    rows: dict[str, list[str]] = {}
    for line in DESIGN.read_text().splitlines():
        match = ROW.match(line)
        if match:
            rows.setdefault(match["name"], []).extend(TEST_NAME.findall(match["rest"]))
    return rows


@functools.cache
def defined_tests() -> set[str]:
    """Every ``def test_...(`` under tests/."""
    found: set[str] = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        found.update(re.findall(r"^\s*def (test_[A-Za-z0-9_]+)\(", path.read_text(), re.MULTILINE))
    return found


RUN = sorted(CHECKS)
EXPLORED = exploration_invariants()


def test_invariants_documented_both_lists_are_read() -> None:
    assert len(RUN) >= 18 and "no_lost_sale_unless_paged" in RUN
    assert {"money", "parcel", "stock", "lost_sale", "announced"} <= set(EXPLORED)


@pytest.mark.parametrize("name", RUN + EXPLORED)
def test_invariants_documented_row_names_an_existing_test(name: str) -> None:
    tests = documented_tests().get(name)
    assert tests, f"docs/design.md has no table row for `{name}` naming its test (`test_...`)"
    missing = [t for t in tests if t not in defined_tests()]
    assert not missing, f"`{name}`'s row in docs/design.md names tests not defined under tests/: {missing}"
