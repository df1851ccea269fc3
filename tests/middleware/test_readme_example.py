"""The package README's lambda_resilience example runs as written (against moto)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from lambda_resilience.aws import reset_clients

README = Path(__file__).resolve().parents[2] / "packages" / "lambda_resilience" / "README.md"
BLOCK = re.compile(
    r"<!-- lambda_resilience example: begin -->\s*```python\n(?P<code>.*?)```\s*"
    r"<!-- lambda_resilience example: end -->",
    re.DOTALL,
)


@pytest.fixture
def fresh_clients() -> Iterator[None]:
    reset_clients()
    yield
    reset_clients()


def test_readme_example_runs_against_moto(fresh_clients: None) -> None:
    match = BLOCK.search(README.read_text())
    assert match is not None, "README lost its lambda_resilience example block"
    namespace: dict[str, object] = {"__name__": "readme_example"}
    exec(compile(match.group("code"), str(README), "exec"), namespace)  # its own asserts must hold
    assert namespace["sent"] == ["inv-1"]
