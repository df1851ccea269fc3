"""The same small scaled spike without intake's throttle backoff (today's behaviour): valid orders reach the
DLQ (the spike: :mod:`tests.e2e.spike_setup`)."""

from __future__ import annotations

import pytest

from tests.e2e.spike_setup import Spike, spike_fixture

pytestmark = pytest.mark.e2e
today = spike_fixture(backoff=False)


def test_spike_today_dead_letters_valid_orders(today: Spike) -> None:
    report, _ = today
    assert report["throttles"]["stepfunctions:StartExecution"] > 0
    assert report["valid_orders_dead_lettered"] > 0
    assert any("dead-lettered" in p for p in report["check_problems"])
