"""``ops smoke``'s page-path check: a forced alarm's notification reaches the alarm topic's subscribers.

On any deployment (a real account included): subscribe a temporary SQS queue to the stack's alarm
topic (``AlarmTopicArn`` output), force one of the stack's alarms into ALARM with ``SetAlarmState``
(CloudWatch runs its actions at once:
https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_SetAlarmState.html), wait for
the notification on the queue, set the alarm back to OK, then remove the subscription and the queue.
What it proves: CloudWatch may publish to the topic (topic policy, key policy), and the topic delivers.

The subscription is held from before the smoke's first order (:class:`PageWatch`): a notification heard
before the forced one is a page the smoke's own orders caused, and fails the smoke (issue 27: its orders
never page).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ops.target import Target

if TYPE_CHECKING:
    from ops.smoke_model import SmokeReport

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


class PageWatch:
    """A temporary SQS subscription to the stack's alarm topic, held for the whole smoke.

    What it hears before the forced alarm are the pages the smoke's own orders caused (none expected:
    business outcomes never page, and a malformed order is refused at the edge, not dead-lettered).
    Then :meth:`forced_page` is the page-path check. Pages CloudWatch raises after the smoke ended (its next
    evaluation, up to a minute later on AWS) are not heard: the smoke cannot wait for every evaluation.
    """

    def __init__(self, target: Target, run_id: str) -> None:
        self.target = target
        self.run_id = run_id
        self.topic = target.outputs.get("AlarmTopicArn")
        self.url: str | None = None
        self.subscription: str | None = None
        self.heard: list[tuple[str, str]] = []  # (alarm, new state) of each notification received

    def __enter__(self) -> PageWatch:
        if not self.topic:
            return self
        sqs, sns = self.target.client("sqs"), self.target.client("sns")
        self.url = sqs.create_queue(QueueName=f"smoke-{self.run_id}-pager")["QueueUrl"]
        try:
            arn = sqs.get_queue_attributes(QueueUrl=self.url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            sqs.set_queue_attributes(QueueUrl=self.url, Attributes={"Policy": _queue_policy(arn, self.topic)})
            self.subscription = sns.subscribe(
                TopicArn=self.topic, Protocol="sqs", Endpoint=arn, Attributes={"RawMessageDelivery": "true"}
            )["SubscriptionArn"]
        except Exception:
            self.__exit__()
            raise
        return self

    def __exit__(self, *_: object) -> None:
        if self.subscription:
            self.target.client("sns").unsubscribe(SubscriptionArn=self.subscription)
            self.subscription = None
        if self.url:
            self.target.client("sqs").delete_queue(QueueUrl=self.url)
            self.url = None

    def listen(self, wait_seconds: int = 0) -> list[tuple[str, str]]:
        """Read what reached the subscription since the last call; every (alarm, state) heard so far."""
        if self.url is None:
            return self.heard
        sqs = self.target.client("sqs")
        while True:
            messages = sqs.receive_message(QueueUrl=self.url, MaxNumberOfMessages=10, WaitTimeSeconds=wait_seconds).get(
                "Messages", []
            )
            for message in messages:
                notice = _notification(message["Body"])
                if notice is not None:
                    self.heard.append(notice)
                sqs.delete_message(QueueUrl=self.url, ReceiptHandle=message["ReceiptHandle"])
            if not messages:
                return self.heard
            wait_seconds = 0

    def pages(self) -> list[str]:
        """The alarms whose ALARM notification was heard so far (pages), in order."""
        return [alarm for alarm, state in self.listen() if state == "ALARM"]

    def forced_page(
        self, sleep: Callable[[float], None] = time.sleep, wait: float = PAGE_WAIT_SECONDS
    ) -> tuple[str, str]:
        """(expected, observed) of the page-path check: force one alarm into ALARM, hear it, reset it."""
        if not self.topic:
            return "page delivered", "no AlarmTopicArn output"
        alarm = _first_alarm(self.target, self.topic)
        if alarm is None:
            return "page delivered", "no alarm acts on the topic"
        cloudwatch = self.target.client("cloudwatch")
        before = len(self.listen())
        try:
            cloudwatch.set_alarm_state(AlarmName=alarm, StateValue="ALARM", StateReason=REASON)
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline:
                if (alarm, "ALARM") in self.listen(wait_seconds=1)[before:]:
                    return "page delivered", "page delivered"
                sleep(1.0)
            return "page delivered", f"no notification for {alarm} within {wait:g} s"
        finally:
            cloudwatch.set_alarm_state(AlarmName=alarm, StateValue="OK", StateReason=REASON)


def _notification(body: str) -> tuple[str, str] | None:
    """(alarm, new state) of a CloudWatch alarm notification; None for anything else."""
    try:
        message = json.loads(body)
        if message.get("Type") == "Notification":  # an endpoint that ignores RawMessageDelivery
            message = json.loads(message["Message"])
        return str(message["AlarmName"]), str(message["NewStateValue"])
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def check_page_path(
    target: Target, run_id: str, sleep: Callable[[float], None] = time.sleep, wait: float = PAGE_WAIT_SECONDS
) -> tuple[str, str]:
    """(expected, observed) of the page-path check on its own (subscribe, force, hear, reset, unsubscribe)."""
    with PageWatch(target, run_id) as watch:
        return watch.forced_page(sleep, wait)


def check_subscribers(target: Target, report: SmokeReport) -> None:
    """One check per alarm topic: a confirmed subscription, a person's, not the smoke's own queue
    (:mod:`ops.pager_check`). Run before :class:`PageWatch` subscribes: its queue would hide a dead page path."""
    from ops.pager_check import HOW_TO_CONFIRM, check_topics

    for topic in check_topics(target):
        report.check(
            f"page path: {topic.severity} topic has a confirmed subscription", "yes", "yes" if topic.ok else "no"
        )
        if not topic.ok:
            report.notes.append(
                f"{topic.severity} topic {topic.topic_arn}: {topic.observed()}; "
                + HOW_TO_CONFIRM.format(topic=topic.topic_arn)
            )
