"""The sweeper's heartbeat and parked-orders alarms as CloudWatch evaluates them (docs/decisions/0023).

The alarms are the template's (``stacks/order_constructs/sweeper.py``, asserted in tests/infra); the
datapoints are what each sweeper run publishes (``SweeperRuns`` = 1, ``ParkedOrders``: tests/handlers).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from local_cloud.alarms import AlarmEvaluator
from local_cloud.capture import LineCapture
from local_cloud.clock import SimClock
from local_cloud.environment import local_aws
from local_cloud.metrics import MetricStore, metric_key

TOPIC = "arn:aws:sns:us-east-1:123456789012:pages"
DIMS = [{"Name": "service", "Value": "sweeper"}]
HEARTBEAT: dict[str, Any] = {
    "AlarmName": "heartbeat",
    "Namespace": "OrderPipeline",
    "MetricName": "SweeperRuns",
    "Dimensions": DIMS,
    "Statistic": "Sum",
    "Period": 600,
    "EvaluationPeriods": 1,
    "Threshold": 1.0,
    "ComparisonOperator": "LessThanThreshold",
    "TreatMissingData": "missing",
    "AlarmActions": [TOPIC],
    "OKActions": [TOPIC],
    "InsufficientDataActions": [TOPIC],
}
PARKED: dict[str, Any] = {
    **HEARTBEAT,
    "AlarmName": "parked",
    "MetricName": "ParkedOrders",
    "Statistic": "Maximum",
    "Threshold": 0.0,
    "ComparisonOperator": "GreaterThanThreshold",
    "TreatMissingData": "notBreaching",
    "InsufficientDataActions": [],
}


class _Pager:
    """The alarm actions as a page log: (alarm, new state, simulated time) of each notification sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, float]] = []

    def execute(self, alarm: dict[str, Any], old: str, new: str, reason: str, at: float | None = None) -> list[Any]:
        actions = {"ALARM": "AlarmActions", "OK": "OKActions"}.get(new, "InsufficientDataActions")
        if alarm.get(actions):
            self.sent.append((alarm["AlarmName"], new, at or 0.0))
        return []


@pytest.fixture
def sweeper_alarms() -> Iterator[tuple[SimClock, MetricStore, AlarmEvaluator, _Pager]]:
    clock = SimClock()
    with local_aws(clock):
        import boto3

        cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
        for alarm in (HEARTBEAT, PARKED):  # as the deployment creates them (local_cloud.deploy_plan)
            cloudwatch.put_metric_alarm(**alarm)
            cloudwatch.set_alarm_state(AlarmName=alarm["AlarmName"], StateValue="INSUFFICIENT_DATA", StateReason="new")
        capture = LineCapture()
        store = MetricStore({}, [], capture, clock)
        pager = _Pager()
        evaluator = AlarmEvaluator(
            {"heartbeat": HEARTBEAT, "parked": PARKED},
            {},
            capture,
            pager,  # type: ignore[arg-type]
            store=store,
            clock=clock,
        )
        yield clock, store, evaluator, pager


def _sweep(clock: SimClock, store: MetricStore, parked: int) -> None:
    store.add(metric_key("OrderPipeline", "SweeperRuns", {"service": "sweeper"}), clock.now(), 1.0)
    store.add(metric_key("OrderPipeline", "ParkedOrders", {"service": "sweeper"}), clock.now(), float(parked))


def _minutes(clock: SimClock, evaluator: AlarmEvaluator, n: int, sweep: Any = None) -> None:
    for minute in range(n):
        if sweep is not None and minute % 5 == 0:
            sweep()
        clock.advance(60)
        evaluator.evaluate()


def test_sweeper_heartbeat_fresh_deploy_pages_nobody_then_a_stopped_sweeper_pages(
    sweeper_alarms: tuple[SimClock, MetricStore, AlarmEvaluator, _Pager],
) -> None:
    clock, store, evaluator, pager = sweeper_alarms
    _minutes(clock, evaluator, 4)  # deployed, the schedule's first run is 5 minutes away: no page
    assert [a for a, _, _ in pager.sent if a == "heartbeat"] == []
    _minutes(clock, evaluator, 30, lambda: _sweep(clock, store, 0))
    assert [s for _, s, _ in pager.sent if s != "OK"] == []
    last_run = clock.now() - 60 * ((30 - 1) % 5 + 1)
    _minutes(clock, evaluator, 25)  # the schedule stopped
    (page,) = [(a, at) for a, s, at in pager.sent if s == "INSUFFICIENT_DATA"]
    assert page[0] == "heartbeat"
    assert page[1] - last_run <= 2 * HEARTBEAT["Period"]  # within its window: at most two periods


def test_sweeper_parked_order_whose_message_expired_is_still_announced(
    sweeper_alarms: tuple[SimClock, MetricStore, AlarmEvaluator, _Pager],
) -> None:
    """The needs-attention message expired with the queue's retention; the order is still NEEDS_ATTENTION,
    so every sweep counts it and the alarm stays in ALARM until an operator repairs it."""
    clock, store, evaluator, pager = sweeper_alarms
    _minutes(clock, evaluator, 60, lambda: _sweep(clock, store, 1))
    assert evaluator.states["parked"] == "ALARM"
    assert [s for a, s, _ in pager.sent if a == "parked" and s != "OK"] == ["ALARM"]
    _minutes(clock, evaluator, 30, lambda: _sweep(clock, store, 0))  # repaired
    assert evaluator.states["parked"] == "OK"
