"""local_cloud.moto_state: the evaluator reads what moto here holds instead of calling CloudWatch's APIs."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from moto import mock_aws

from local_cloud import alarms as alarms_module
from local_cloud.alarms import AlarmEvaluator

ALARM = {
    "AlarmName": "Depth",
    "Namespace": "AWS/SQS",
    "MetricName": "ApproximateNumberOfMessagesVisible",
    "Dimensions": [{"Name": "QueueName", "Value": "q"}],
    "Statistic": "Maximum",
    "Period": 60,
    "EvaluationPeriods": 1,
    "Threshold": 0.0,
    "ComparisonOperator": "GreaterThanThreshold",
}


class _NoDescribe:
    """The CloudWatch client, but DescribeAlarms fails the test."""

    def __init__(self, client: Any) -> None:
        self.meta = client.meta

    def get_paginator(self, name: str) -> Any:
        raise AssertionError(f"the evaluator called {name} for what moto here already holds")


def test_moto_state_set_alarm_state_adopted_without_describe_alarms(monkeypatch: pytest.MonkeyPatch) -> None:
    """An operator's SetAlarmState is adopted at the next evaluation, read from moto's own alarm (CloudWatch
    does not call DescribeAlarms on itself; paginating it every simulated minute cost about 2.5% of a chaos
    shard's CPU)."""
    with mock_aws():
        cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
        cloudwatch.put_metric_alarm(**ALARM)
        evaluator = AlarmEvaluator({"Depth": ALARM}, {}, capture=None)  # type: ignore[arg-type]
        evaluator.states["Depth"] = "OK"
        cloudwatch.set_alarm_state(AlarmName="Depth", StateValue="ALARM", StateReason="forced by an operator")
        monkeypatch.setattr(alarms_module, "aws", lambda _service: _NoDescribe(cloudwatch))
        evaluator.adopt_set_states(now=0.0)
        assert evaluator.states["Depth"] == "ALARM"


def test_moto_state_alarm_unknown_to_moto_read_through_describe_alarms() -> None:
    """An alarm moto here does not hold (a moto server elsewhere) is read through DescribeAlarms."""
    with mock_aws():
        cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
        evaluator = AlarmEvaluator({"Depth": ALARM}, {}, capture=None)  # type: ignore[arg-type]
        assert evaluator._alarm_states() == {}
        cloudwatch.put_metric_alarm(**ALARM)
        described = cloudwatch.describe_alarms(AlarmNames=["Depth"])["MetricAlarms"][0]
        assert evaluator._alarm_states() == {"Depth": (described["StateValue"], described["StateReason"])}
