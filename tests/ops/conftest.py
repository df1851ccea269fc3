"""Fixtures shared by the ops tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.moto_session import mocked_aws
from tests.ops.emulator_fixtures import load

#: ``python -m ops <argv>``: its exit status.
OpsCli = Callable[[list[str]], int]

#: Autouse, registered by being here: fails the test that leaves a registered patch target changed.
no_patch_outlives_its_test = load("patch_guard").no_patch_outlives_its_test


@pytest.fixture
def aws() -> Iterator[None]:
    with mocked_aws():
        yield


@pytest.fixture
def ops_on_moto() -> OpsCli:
    """``python -m ops <argv>`` against the stack on moto. moto is one server: a short poll sees every message,
    so the DLQ reads short-poll (``Target.sqs_wait_seconds=0``) where real SQS needs a long poll of 1 s or more
    (``test_dlq_list_shows_every_category`` keeps the CLI's default)."""
    from ops.cli import main
    from ops.target import DEFAULT_STACK, Target

    def run(argv: list[str]) -> int:
        return main(argv, target=Target.from_stack(DEFAULT_STACK, sqs_wait_seconds=0))

    return run
