"""The same small scaled spike without intake's throttle backoff (today's behaviour): valid orders reach the
DLQ (the spike: :mod:`tests.e2e.spike_setup`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.spike_setup import spike

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def today(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    return spike(tmp_path_factory.mktemp("spike"), backoff=False)


def test_spike_today_dead_letters_valid_orders(today: tuple[dict[str, Any], Path]) -> None:
    report, _ = today
    assert report["throttles"]["stepfunctions:StartExecution"] > 0
    assert report["valid_orders_dead_lettered"] > 0
    assert any("dead-lettered" in p for p in report["check_problems"])
