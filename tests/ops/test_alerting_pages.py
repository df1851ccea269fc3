"""The app's alarm topic (``stacks/order_constructs/alerting.py``) on the emulator's alarm actions: CloudWatch
may publish to it, and SetAlarmState (``ops smoke``'s page-path check) runs its actions at once. The alarm
actions themselves are tested in ``packages/local_cloud/tests/test_alarm_actions.py``, whose one-topic
stack and ``page`` fixture these tests reuse."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from local_cloud.alarm_actions import AlarmActions
from local_cloud.alarms import AlarmEvaluator
from local_cloud.capture import LineCapture
from local_cloud.clients import aws
from local_cloud.clock import SimClock
from local_cloud.deploy import LocalDeployment
from local_cloud.environment import local_aws
from stacks.order_constructs.alerting import Alerting, AlertingProps
from tests.ops.emulator_fixtures import load

_alarm_actions = load("test_alarm_actions")
_synth = _alarm_actions._synth
page = _alarm_actions.page


def test_alarm_actions_alerting_topic_delivers(page: Callable[..., tuple[AlarmActions, list]]) -> None:
    actions, received = page(lambda s: Alerting(s, "Alerting", props=AlertingProps()).topic)
    (notice,) = actions.history
    assert notice.delivered, notice.refusal
    (message,) = received
    assert message["NewStateValue"] == "ALARM" and message["OldStateValue"] == "INSUFFICIENT_DATA"


def test_alarm_actions_set_alarm_state_runs_the_actions(tmp_path: Path) -> None:
    """SetAlarmState (ops smoke's page-path check) makes CloudWatch run the new state's actions at once."""
    clock = SimClock()
    with local_aws(clock):
        deployment = LocalDeployment(
            _synth(tmp_path, lambda s: Alerting(s, "Alerting", props=AlertingProps()).topic), clock
        ).deploy()
        actions = AlarmActions(deployment)
        evaluator = AlarmEvaluator(deployment.alarms, deployment.queues, LineCapture(), actions)
        (name,) = deployment.alarms
        aws("cloudwatch").set_alarm_state(AlarmName=name, StateValue="ALARM", StateReason="forced by a test")
        evaluator.adopt_set_states(clock.now())
        (notice,) = actions.history
        assert (notice.state, notice.reason, notice.delivered) == ("ALARM", "forced by a test", True)
