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


class _NoQueueOrStateApi:
    """A client whose GetQueueAttributes and SetAlarmState fail the test."""

    def __init__(self, client: Any) -> None:
        self.meta = client.meta

    def get_queue_attributes(self, **_: Any) -> Any:
        raise AssertionError("the evaluator called GetQueueAttributes for a queue moto here holds")

    def set_alarm_state(self, **_: Any) -> Any:
        raise AssertionError("the evaluator called SetAlarmState for an alarm moto here holds")


def test_moto_state_depth_and_state_changes_without_api_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each evaluation sampled every alarmed queue's depth with GetQueueAttributes and stored each state change
    with SetAlarmState: both are now moto's own records (visible messages only, as the API counts them)."""
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = sqs.create_queue(QueueName="q")["QueueUrl"]
        for n in range(3):
            sqs.send_message(QueueUrl=url, MessageBody=str(n))
        sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1)  # one in flight: not counted
        api_depth = int(
            sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])["Attributes"][
                "ApproximateNumberOfMessages"
            ]
        )
        cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
        cloudwatch.put_metric_alarm(**ALARM)
        evaluator = AlarmEvaluator({"Depth": ALARM}, {"q": {"name": "q", "url": url}}, capture=None)  # type: ignore[arg-type]
        monkeypatch.setattr(alarms_module, "aws", lambda _service: _NoQueueOrStateApi(sqs))
        assert evaluator.sqs_depth(ALARM) == api_depth == 2
        evaluator.transition("Depth", "ALARM", "2 messages")
        assert cloudwatch.describe_alarms(AlarmNames=["Depth"])["MetricAlarms"][0]["StateValue"] == "ALARM"
