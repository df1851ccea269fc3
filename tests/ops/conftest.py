"""Fixtures shared by the ops tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from moto import mock_aws


@pytest.fixture
def aws() -> Iterator[None]:
    with mock_aws():
        yield
