"""An alarm's evaluation window slides: each minute CloudWatch evaluates the last ``Period x EvaluationPeriods``
seconds, not periods aligned on the clock ("SlidingWindow - the default. The window advances each time the
alarm is evaluated, forming a rolling time window":
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-evaluation-window.html)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from local_cloud.alarms import AlarmEvaluator
from local_cloud.capture import LineCapture
from local_cloud.clock import SimClock
from local_cloud.environment import local_aws
from local_cloud.metrics import MetricStore, metric_key

#: A heartbeat: Sum of runs < 1 over 10 minutes; no datapoint -> INSUFFICIENT_DATA.
HEARTBEAT: dict[str, Any] = {
    "AlarmName": "heartbeat",
    "Namespace": "App",
    "MetricName": "Runs",
    "Dimensions": [],
    "Statistic": "Sum",
    "Period": 600,
    "EvaluationPeriods": 1,
    "Threshold": 1.0,
    "ComparisonOperator": "LessThanThreshold",
    "TreatMissingData": "missing",
}


class _Pager:
    """The alarm actions as a log: (new state, simulated time) of each transition."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, float]] = []

    def execute(self, alarm: dict[str, Any], old: str, new: str, reason: str, at: float | None = None) -> list[Any]:
        self.sent.append((new, at or 0.0))
        return []


@pytest.fixture
def heartbeat() -> Iterator[tuple[SimClock, MetricStore, AlarmEvaluator, _Pager]]:
    clock = SimClock()
    with local_aws(clock):
        import boto3

        cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
        cloudwatch.put_metric_alarm(**HEARTBEAT)  # a new alarm starts in INSUFFICIENT_DATA (local_cloud.deploy_plan)
        cloudwatch.set_alarm_state(AlarmName="heartbeat", StateValue="INSUFFICIENT_DATA", StateReason="new")
        store = MetricStore({}, [], LineCapture(), clock)
        pager = _Pager()
        evaluator = AlarmEvaluator(
            {"heartbeat": HEARTBEAT},
            {},
            LineCapture(),
            pager,  # type: ignore[arg-type]
            store=store,
            clock=clock,
        )
        yield clock, store, evaluator, pager


@pytest.mark.parametrize("every_minute", [True, False], ids=["evaluated-each-minute", "caught-up-after-a-jump"])
def test_alarm_window_slides_a_missed_heartbeat_is_seen_within_a_minute_of_the_window(
    heartbeat: tuple[SimClock, MetricStore, AlarmEvaluator, _Pager], every_minute: bool
) -> None:
    """Evaluated each minute, or caught up at once after the clock jumped (the local run skips idle
    time): the transition happens at the first minute the window no longer holds the run."""
    clock, store, evaluator, pager = heartbeat
    # The last run lands 30 s after a 10-minute boundary: aligned periods would hold it until the
    # boundary after next (up to 20 minutes); a sliding window lets it go 10 minutes after the run.
    clock.advance(600 - clock.now() % 600 + 30)
    last_run = clock.now()
    store.add(metric_key("App", "Runs", {}), last_run, 1.0)
    clock.advance(60)
    evaluator.evaluate()
    if every_minute:
        for _ in range(25):
            clock.advance(60)
            evaluator.evaluate()
    else:
        clock.advance(25 * 60)
        evaluator.evaluate()
    assert [s for s, _ in pager.sent] == ["OK", "INSUFFICIENT_DATA"], pager.sent
    lapsed = pager.sent[1][1]
    assert last_run + 600 < lapsed <= last_run + 600 + 61  # (wall time moves the clock a little too)
