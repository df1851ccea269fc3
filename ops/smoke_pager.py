"""``ops smoke``'s page-path check: a forced alarm's notification reaches the alarm topic's subscribers.

On any deployment (a real account included): subscribe a temporary SQS queue to the stack's alarm
topic (``AlarmTopicArn`` output), force one of the stack's alarms into ALARM with ``SetAlarmState``
(CloudWatch runs its actions at once:
https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_SetAlarmState.html), wait for
the notification on the queue, set the alarm back to OK, then remove the subscription and the queue.
What it proves: CloudWatch may publish to the topic (topic policy, key policy), and the topic delivers.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from ops.target import Target

#: How long to wait for the notification (CloudWatch publishes within seconds of the state change;
#: ``ops local up`` evaluates every 5 s).
PAGE_WAIT_SECONDS = 60.0
REASON = "ops smoke: page-path check (forced; reset at once)"


def _queue_policy(queue_arn: str, topic_arn: str) -> str:
    """Let the topic, and only it, send to the temporary queue (SNS needs this to deliver)."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": "sns.amazonaws.com"},
                    "Action": "sqs:SendMessage",
                    "Resource": queue_arn,
                    "Condition": {"ArnEquals": {"aws:SourceArn": topic_arn}},
                }
            ],
        }
    )


def _first_alarm(target: Target, topic_arn: str) -> str | None:
    """One of the stack's alarms (an ALARM action on its topic), by name."""
    for page in target.client("cloudwatch").get_paginator("describe_alarms").paginate():
        for alarm in page.get("MetricAlarms", []):
            if topic_arn in alarm.get("AlarmActions", []):
                return str(alarm["AlarmName"])
    return None


def check_page_path(
    target: Target, run_id: str, sleep: Callable[[float], None] = time.sleep, wait: float = PAGE_WAIT_SECONDS
) -> tuple[str, str]:
    """(expected, observed) of the page-path check; observed names what went wrong."""
    topic = target.outputs.get("AlarmTopicArn")
    if not topic:
        return "page delivered", "no AlarmTopicArn output"
    alarm = _first_alarm(target, topic)
    if alarm is None:
        return "page delivered", "no alarm acts on the topic"
    sqs, sns, cloudwatch = target.client("sqs"), target.client("sns"), target.client("cloudwatch")
    url = sqs.create_queue(QueueName=f"smoke-{run_id}-pager")["QueueUrl"]
    subscription: str | None = None
    try:
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        sqs.set_queue_attributes(QueueUrl=url, Attributes={"Policy": _queue_policy(arn, topic)})
        subscription = sns.subscribe(
            TopicArn=topic, Protocol="sqs", Endpoint=arn, Attributes={"RawMessageDelivery": "true"}
        )["SubscriptionArn"]
        cloudwatch.set_alarm_state(AlarmName=alarm, StateValue="ALARM", StateReason=REASON)
        observed = _wait_for_page(sqs, url, alarm, sleep, wait)
    finally:
        cloudwatch.set_alarm_state(AlarmName=alarm, StateValue="OK", StateReason=REASON)
        if subscription:
            sns.unsubscribe(SubscriptionArn=subscription)
        sqs.delete_queue(QueueUrl=url)
    return "page delivered", observed


def _wait_for_page(sqs: Any, url: str, alarm: str, sleep: Callable[[float], None], wait: float) -> str:
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        for message in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", []):
            try:
                body = json.loads(message["Body"])
                if body.get("Type") == "Notification":  # an endpoint that ignores RawMessageDelivery
                    body = json.loads(body["Message"])
            except (ValueError, KeyError, TypeError, AttributeError):
                continue
            if body.get("AlarmName") == alarm and body.get("NewStateValue") == "ALARM":
                return "page delivered"
        sleep(1.0)
    return f"no notification for {alarm} within {wait:g} s"
