"""Every alarm action must reach the topic on AWS: the topic policy and key policy let CloudWatch publish.

A topic policy replaces SNS's default one, so ``enforce_ssl=True`` alone (a single Deny) refuses
``cloudwatch.amazonaws.com``: these tests fail on a template shipping that.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Annotations, Match

from constructs_lib.checks import UNDELIVERABLE_ACTION
from constructs_lib.delivery import CLOUDWATCH_PRINCIPAL, Request, allowed
from stacks.order_constructs.alerting import Alerting, AlertingProps
from tests.infra.conftest import SynthResult

STACK = "/ChecksUnderTest"
ALARM_ARN = "arn:aws:cloudwatch:us-east-1:123456789012:alarm:x"


def _alarm_on(stack: Stack, topic: sns.ITopic) -> None:
    alarm = cloudwatch.Alarm(
        stack,
        "Alarm",
        metric=cloudwatch.Metric(namespace="Test", metric_name="M"),
        threshold=0,
        evaluation_periods=1,
    )
    alarm.add_alarm_action(cw_actions.SnsAction(topic))


def test_alarm_delivery_ssl_only_topic_refuses_cloudwatch(checked_stack: Stack) -> None:
    _alarm_on(checked_stack, sns.Topic(checked_stack, "Topic", enforce_ssl=True))
    Annotations.from_stack(checked_stack).has_error(
        f"{STACK}/Alarm/Resource", Match.string_like_regexp(re.escape(UNDELIVERABLE_ACTION) + ".*topic policy")
    )


def test_alarm_delivery_topic_without_policy_is_deliverable(checked_stack: Stack) -> None:
    """No topic policy: SNS's default one lets the owning account's services publish."""
    _alarm_on(checked_stack, sns.Topic(checked_stack, "Topic"))
    Annotations.from_stack(checked_stack).has_no_error("*", Match.string_like_regexp(re.escape(UNDELIVERABLE_ACTION)))


def test_alarm_delivery_alerting_topic_is_deliverable(checked_stack: Stack) -> None:
    alerting = Alerting(checked_stack, "Alerting", props=AlertingProps())
    _alarm_on(checked_stack, alerting.topic)
    Annotations.from_stack(checked_stack).has_no_error("*", Match.string_like_regexp(re.escape(UNDELIVERABLE_ACTION)))


def _topic_policy(result: SynthResult) -> list[dict[str, Any]]:
    """The page topic's policy (the ticket topic's is checked in test_alarm_routing.py)."""
    topic = {"Ref": result.logical_id(result.stack.alarm_topic)}
    (policy,) = [p for p in result.of_type("AWS::SNS::TopicPolicy").values() if topic in p["Properties"]["Topics"]]
    return [policy["Properties"]["PolicyDocument"]]


def test_alarm_delivery_pipeline_has_no_undeliverable_alarm(dev: SynthResult, prod: SynthResult) -> None:
    for result in (dev, prod):
        errors = [m for m in result.validation_report().get("errors", []) if UNDELIVERABLE_ACTION in str(m)]
        assert errors == []
        assert result.of_type("AWS::CloudWatch::Alarm"), "the pipeline has alarms"


def test_alarm_delivery_topic_policy_scoped_and_tls_only(dev: SynthResult) -> None:
    """CloudWatch may publish for this account's alarms only, over TLS; another account's alarm is refused."""
    documents = _topic_policy(dev)
    topic_id = dev.logical_id(dev.stack.alarm_topic)
    account = "<Ref:AWS::AccountId>"
    ours = f"arn:<Ref:AWS::Partition>:cloudwatch:<Ref:AWS::Region>:{account}:alarm:x"
    context = {"aws:SourceArn": ours, "aws:SourceAccount": account, "aws:SecureTransport": "true"}
    publish = Request(CLOUDWATCH_PRINCIPAL, "sns:Publish", f"<Ref:{topic_id}>", context)
    assert allowed(documents, publish)
    plain = {**context, "aws:SecureTransport": "false"}
    assert not allowed(documents, dataclasses.replace(publish, context=plain))
    other = {**context, "aws:SourceAccount": "9" * 12, "aws:SourceArn": ALARM_ARN.replace("123456789012", "9" * 12)}
    assert not allowed(documents, dataclasses.replace(publish, context=other))


def test_alarm_delivery_orders_queue_pages_on_oldest_message_age(dev: SynthResult) -> None:
    """A stalled consumer: the oldest order waiting over 10 minutes pages (ApproximateAgeOfOldestMessage)."""
    ages = [
        a["Properties"]
        for a in dev.of_type("AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("MetricName") == "ApproximateAgeOfOldestMessage"
    ]
    (age,) = ages
    assert (age["Threshold"], age["Period"], age["Statistic"]) == (600, 60, "Maximum")
    assert age["AlarmActions"] == [{"Ref": dev.logical_id(dev.stack.alarm_topic)}]  # a page
    assert "OKActions" not in age  # no notification from a deploy (test_alarm_routing.py)
