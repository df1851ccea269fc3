"""A second incident while an alarm is already in ALARM is still announced.

CloudWatch notifies on a state change only: a DLQ depth alarm in ALARM says nothing about the next
dead-lettered message. ``ResilientQueue``'s arrivals alarm (``DIFF(depth) > 0``) pages for each one.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from aws_cdk import App, Stack

from constructs_lib.queue import ResilientQueue, ResilientQueueProps
from local_cloud.alarm_actions import AlarmActions
from local_cloud.alarms import AlarmEvaluator
from local_cloud.capture import LineCapture
from local_cloud.clients import aws
from local_cloud.clock import SimClock
from local_cloud.deploy import LocalDeployment
from local_cloud.environment import local_aws
from local_cloud.metrics import MetricStore
from local_cloud.template import CloudAssembly
from stacks.order_constructs.alerting import Alerting, AlertingProps

STACK = "SecondIncident"


@pytest.fixture
def dlq_pager(tmp_path: Path) -> Iterator[tuple[LocalDeployment, AlarmEvaluator, AlarmActions]]:
    app = App(outdir=str(tmp_path))
    stack = Stack(app, STACK)
    topic = Alerting(stack, "Alerting", props=AlertingProps()).topic
    ResilientQueue(stack, "Work", props=ResilientQueueProps(alarm_topic=topic))
    app.synth()
    clock = SimClock()
    with local_aws(clock):
        deployment = LocalDeployment(CloudAssembly(tmp_path, STACK), clock).deploy()
        actions = AlarmActions(deployment)
        capture = LineCapture()
        store = MetricStore({}, [], capture, clock)
        evaluator = AlarmEvaluator(deployment.alarms, deployment.queues, capture, actions, store=store, clock=clock)
        yield deployment, evaluator, actions


def _dead_letter(deployment: LocalDeployment) -> None:
    (dlq,) = [q for lid, q in deployment.queues.items() if lid in deployment.dlq_ids]
    aws("sqs").send_message(QueueUrl=dlq["url"], MessageBody='{"order_id": "o-1"}')


def test_second_incident_dlq_message_while_in_alarm_pages_again(
    dlq_pager: tuple[LocalDeployment, AlarmEvaluator, AlarmActions],
) -> None:
    deployment, evaluator, actions = dlq_pager
    clock = deployment.clock
    evaluator.evaluate()
    _dead_letter(deployment)
    clock.advance(60)
    evaluator.evaluate()
    first = [n for n in actions.history if n.state == "ALARM"]
    assert first and all(n.delivered for n in first)
    for _ in range(10):  # ten quiet minutes: the depth alarm stays in ALARM (the message is still there)
        clock.advance(60)
        evaluator.evaluate()
    assert any("DlqDepth" in name for name, s in evaluator.states.items() if s == "ALARM")
    before = len([n for n in actions.history if n.state == "ALARM"])

    _dead_letter(deployment)  # the second incident
    clock.advance(60)
    evaluator.evaluate()
    second = [n for n in actions.history if n.state == "ALARM"][before:]
    assert [n.alarm for n in second if n.delivered], "the second dead-lettered message paged nobody"
    # at: the evaluation instant + 1 us (AlarmEvaluator._boundaries); the clock may stand still meanwhile
    assert second[0].at - (clock.now() - 60) <= 60 + 1e-6
