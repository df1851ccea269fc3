"""One synthesized alarm (its template properties) evaluated by the emulator as CloudWatch would, minute by
minute, while a scheduled emitter (the sweeper, every 5 minutes) publishes one datapoint per run, or nothing
(None: it did not run)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stacks.order_constructs.sweeper import SWEEP_RATE


class _Notices:
    """The alarm's ALARM notifications' simulated times."""

    def __init__(self) -> None:
        self.alarms: list[float] = []

    def execute(self, alarm: dict[str, Any], old: str, new: str, reason: str, at: float | None = None) -> list[Any]:
        if new == "ALARM":
            self.alarms.append(at or 0.0)
        return []


def alarm_notifications(props: dict[str, Any], metric_name: str, per_run: Sequence[float | None]) -> list[float]:
    """When the alarm of ``props`` (its synthesized properties) went to ALARM while each run published its
    value of ``per_run`` (None: no run) on ``metric_name`` of the alarm's namespace and dimensions."""
    from local_cloud.alarms import AlarmEvaluator
    from local_cloud.capture import LineCapture
    from local_cloud.clock import SimClock
    from local_cloud.environment import local_aws
    from local_cloud.metrics import MetricStore, metric_key

    alarm = {k: v for k, v in props.items() if not isinstance(v, (dict, list)) or k == "Dimensions"}
    alarm.pop("AlarmDescription", None)
    alarm["AlarmName"] = "under-test"
    clock = SimClock()
    with local_aws(clock):
        import boto3

        boto3.client("cloudwatch", region_name="us-east-1").put_metric_alarm(**alarm)
        store, notices = MetricStore({}, [], LineCapture(), clock), _Notices()
        evaluator = AlarmEvaluator({"under-test": alarm}, {}, LineCapture(), notices, store=store, clock=clock)  # type: ignore[arg-type]
        key = metric_key(alarm["Namespace"], metric_name, alarm["Dimensions"])
        for value in per_run:
            if value is not None:
                store.add(key, clock.now(), float(value))
            for _ in range(int(SWEEP_RATE.to_minutes())):
                clock.advance(60)
                evaluator.evaluate()
    return notices.alarms
