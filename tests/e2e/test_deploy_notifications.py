"""No notification from a deploy: the dev template deployed on the emulator, its alarms evaluated for
a quarter of an hour with no traffic, sends nothing to either topic (decision 0030).

A deploy creates every alarm in INSUFFICIENT_DATA and each moves to OK at its first evaluation
(https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricAlarm.html): with OK
actions, that was one e-mail per alarm."""

from __future__ import annotations

from local_cloud.alarm_actions import AlarmActions
from local_cloud.alarms import AlarmEvaluator
from local_cloud.capture import LineCapture
from local_cloud.clock import SimClock
from local_cloud.composite_alarms import Composites
from local_cloud.deploy import LocalDeployment
from local_cloud.environment import local_aws
from local_cloud.metrics import MetricStore
from local_cloud.template import CloudAssembly


def test_deploy_notifications_a_fresh_deploy_sends_none(assembly: CloudAssembly) -> None:
    clock = SimClock()
    with local_aws(clock):
        deployment = LocalDeployment(assembly, clock).deploy()
        actions = AlarmActions(deployment)
        capture = LineCapture()
        store = MetricStore({}, [], capture, clock)
        composites = Composites(deployment.composite_alarms, deployment.alarms)
        evaluator = AlarmEvaluator(
            deployment.alarms, deployment.queues, capture, actions, store=store, clock=clock, composites=composites
        )
        for _ in range(15):
            evaluator.evaluate()
            clock.advance(60)
        states = set(evaluator.states.values())
    assert "OK" in states  # the alarms did leave INSUFFICIENT_DATA: the transitions a deploy causes happened
    assert composites.states and set(composites.states.values()) == {"OK"}  # OrdersAtRisk too, silently
    assert [(n.alarm, n.state) for n in actions.history] == []
