"""Fixtures shared by the ops tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from moto import mock_aws

from local_cloud.patches import no_patch_outlives


@pytest.fixture
def aws() -> Iterator[None]:
    with mock_aws():
        yield


@pytest.fixture(autouse=True)
def _no_patch_outlives_its_test(request: pytest.FixtureRequest) -> Iterator[None]:
    with no_patch_outlives(request.node.nodeid):
        yield
