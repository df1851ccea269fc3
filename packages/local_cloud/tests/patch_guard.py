"""The autouse check that no registered patch outlives its test: the emulator's tests take it from their
``conftest.py``, the harness tests (``tests/ops``) from here too, through ``tests/ops/emulator_fixtures.py``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from local_cloud.patches import no_patch_outlives


@pytest.fixture(autouse=True)
def no_patch_outlives_its_test(request: pytest.FixtureRequest) -> Iterator[None]:
    with no_patch_outlives(request.node.nodeid):
        yield
