"""local_cloud.alarm_actions: alarm actions run as CloudWatch runs them, refused where AWS refuses them.

Each test synthesizes a one-topic stack, deploys it into the emulator and moves its alarm to ALARM:
the notification reaches the topic's SQS subscriber only when the topic policy and key policy
let ``cloudwatch.amazonaws.com`` publish.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subs
from aws_cdk import aws_sqs as sqs

from local_cloud.alarm_actions import AlarmActions
from local_cloud.alarms import AlarmEvaluator
from local_cloud.capture import LineCapture
from local_cloud.clients import aws
from local_cloud.clock import SimClock
from local_cloud.deploy import LocalDeployment
from local_cloud.environment import local_aws
from local_cloud.template import CloudAssembly

STACK = "PagerUnderTest"
TopicFactory = Callable[[Stack], sns.ITopic]


def _synth(tmp_path: Path, topic: TopicFactory) -> CloudAssembly:
    app = App(outdir=str(tmp_path))
    stack = Stack(app, STACK)
    alarm_topic = topic(stack)
    pages = sqs.Queue(stack, "Pages")
    alarm_topic.add_subscription(subs.SqsSubscription(pages, raw_message_delivery=True))
    alarm = cloudwatch.Alarm(
        stack, "Alarm", metric=cloudwatch.Metric(namespace="Test", metric_name="M"), threshold=0, evaluation_periods=1
    )
    alarm.add_alarm_action(cw_actions.SnsAction(alarm_topic))
    app.synth()
    return CloudAssembly(tmp_path, STACK)


@pytest.fixture
def page(tmp_path: Path) -> Iterator[Callable[[TopicFactory], tuple[AlarmActions, list[dict[str, object]]]]]:
    clock = SimClock()
    with local_aws(clock):

        def run(topic: TopicFactory) -> tuple[AlarmActions, list[dict[str, object]]]:
            deployment = LocalDeployment(_synth(tmp_path, topic), clock).deploy()
            actions = AlarmActions(deployment)
            evaluator = AlarmEvaluator(deployment.alarms, deployment.queues, LineCapture(), actions)
            (name,) = deployment.alarms
            evaluator.transition(name, "ALARM", "forced")
            (queue,) = deployment.queues.values()
            got = aws("sqs").receive_message(QueueUrl=queue["url"], MaxNumberOfMessages=10).get("Messages", [])
            return actions, [json.loads(m["Body"]) for m in got]

        yield run


def test_alarm_actions_ssl_only_topic_refuses_cloudwatch(page: Callable[..., tuple[AlarmActions, list]]) -> None:
    actions, received = page(lambda s: sns.Topic(s, "Topic", enforce_ssl=True))
    (notice,) = actions.history
    assert not notice.delivered and "no resource-based policy allows" in str(notice.refusal)
    assert received == []


def test_alarm_actions_default_topic_policy_delivers(page: Callable[..., tuple[AlarmActions, list]]) -> None:
    actions, received = page(lambda s: sns.Topic(s, "Topic"))
    assert [n.delivered for n in actions.history] == [True]
    assert [m["NewStateValue"] for m in received] == ["ALARM"]


def test_alarm_actions_key_policy_without_cloudwatch_refuses(page: Callable[..., tuple[AlarmActions, list]]) -> None:
    from aws_cdk import aws_kms as kms

    actions, received = page(lambda s: sns.Topic(s, "Topic", master_key=kms.Key(s, "Key")))
    (notice,) = actions.history
    assert "kms:GenerateDataKey" in str(notice.refusal) and received == []


def test_sim_clock_at_wall_is_the_simulated_time_at_that_instant(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto stamps an execution's stopDate with the wall clock; the execution metrics go at the simulated
    time of that instant (the offset then, not the offset when the metrics are read)."""
    import local_cloud.clock as clock_module

    wall = [1_000.0]
    monkeypatch.setattr(clock_module.time, "time", lambda: wall[0])
    clock = SimClock(clock_module.WallTime())  # a faked wall clock (the work-time part: test_clock.py)
    wall[0] = 1_010.0
    clock.advance(600.0)  # from wall 1,010 on, simulated = wall + 600
    wall[0] = 1_020.0
    clock.advance(3_000.0)  # from wall 1,020 on, simulated = wall + 3,600
    assert clock.at_wall(1_005.0) == 1_005.0
    assert clock.at_wall(1_015.0) == 1_615.0
    assert clock.at_wall(1_030.0) == 4_630.0
    assert clock.now() == 4_620.0
