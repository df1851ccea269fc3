"""The saga's alarms: executions failed (parked or refused), timed out, aborted or throttled, each
paging at its first occurrence."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from constructs_lib.alarms import first_occurrence_alarm


def execution_alarms(
    scope: Construct, machine: sfn.StateMachine, *, topic: sns.ITopic, period: Duration, label: str
) -> dict[str, cloudwatch.Alarm]:
    """``{"failed" | "timed_out" | "aborted" | "throttled": alarm}``, each notifying ``topic``."""
    alarms: dict[str, cloudwatch.Alarm] = {}
    for key, name, metric, what in (
        ("failed", "ExecutionsFailedAlarm", machine.metric_failed, "executions failed (parked or refused)"),
        ("timed_out", "ExecutionsTimedOutAlarm", machine.metric_timed_out, "executions timed out (half-done)"),
        (
            "aborted",
            "ExecutionsAbortedAlarm",
            machine.metric_aborted,
            "executions aborted (stopped by an operator or a deploy: possibly half-done)",
        ),
        ("throttled", "ExecutionThrottledAlarm", machine.metric_throttled, "executions throttled"),
    ):
        alarms[key] = first_occurrence_alarm(
            scope, name, metric(period=period, statistic="Sum"), f"{label}: {what}", topic
        )
    return alarms
