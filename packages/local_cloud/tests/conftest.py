"""The emulator's own tests (run from the repository root: ``make harness-tests``): fake credentials, a
fixed region, no real AWS endpoint reachable, and the ``aws`` fixture (moto for one test)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from moto import mock_aws
from patch_guard import no_patch_outlives_its_test  # noqa: F401 (autouse, registered by being here)

os.environ.update(
    {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SECURITY_TOKEN": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
    }
)
os.environ.pop("AWS_PROFILE", None)


@pytest.fixture
def aws() -> Iterator[None]:
    with mock_aws():
        yield
