"""Fixtures shared by the ops tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.moto_session import mocked_aws
from tests.ops.emulator_fixtures import load

#: Autouse, registered by being here: fails the test that leaves a registered patch target changed.
no_patch_outlives_its_test = load("patch_guard").no_patch_outlives_its_test


@pytest.fixture
def aws() -> Iterator[None]:
    with mocked_aws():
        yield
