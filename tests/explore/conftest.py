"""The exploration's world (moto, the clock and the dispatcher patches) lives for one test module only:
the harness's other tests in the same pytest-xdist worker never see it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.explore.world import close_world


@pytest.fixture(autouse=True, scope="module")
def _world_per_module() -> Iterator[None]:
    yield
    close_world()
