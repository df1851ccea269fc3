"""``tools/rehearse_incident.py``: one incident (two children of a composite alarm in ALARM), one notification,
heard on the stack's page and ticket topics; the children are reset and the temporary queues removed."""

from __future__ import annotations

import json
from typing import Any

import boto3
from moto import mock_aws

from ops.target import Target
from tools import rehearse_incident

REGION = "us-east-1"


class _CompositeCloudWatch:
    """A composite ``AtRisk`` over ``c1`` and ``c2`` acting on ``topic``, evaluated at each SetAlarmState;
    ``children_notify``: each child also notifies (what the check must catch)."""

    def __init__(self, sns: Any, topic: str, *, children_notify: bool = False) -> None:
        self.sns, self.topic, self.children_notify = sns, topic, children_notify
        self.states = {"c1": "OK", "c2": "OK", "AtRisk": "OK"}

    def _notify(self, name: str, state: str) -> None:
        message = json.dumps({"AlarmName": name, "NewStateValue": state})
        self.sns.publish(TopicArn=self.topic, Message=message)

    def set_alarm_state(self, AlarmName: str, StateValue: str, StateReason: str) -> None:
        self.states[AlarmName] = StateValue
        if self.children_notify and StateValue == "ALARM":
            self._notify(AlarmName, StateValue)
        composite = "ALARM" if "ALARM" in (self.states["c1"], self.states["c2"]) else "OK"
        if composite != self.states["AtRisk"]:
            self.states["AtRisk"] = composite
            if composite == "ALARM":
                self._notify("AtRisk", composite)


def _target(*, children_notify: bool) -> tuple[Target, _CompositeCloudWatch, Any]:
    sns, sqs = boto3.client("sns", region_name=REGION), boto3.client("sqs", region_name=REGION)
    page, ticket = (sns.create_topic(Name=name)["TopicArn"] for name in ("page", "ticket"))
    cloudwatch = _CompositeCloudWatch(sns, page, children_notify=children_notify)
    outputs = {"AlarmTopicArn": page, "TicketTopicArn": ticket}
    return Target(outputs, REGION, _clients={"cloudwatch": cloudwatch, "sns": sns, "sqs": sqs}), cloudwatch, sqs


def test_rehearse_incident_rule_children_names_the_alarms_of_the_rule() -> None:
    rule = (
        '(ALARM("arn:aws:cloudwatch:us-east-1:000000000000:alarm:Stack-DlqDepth") OR '
        'ALARM("arn:aws:cloudwatch:us-east-1:000000000000:alarm:Stack-Errors"))'
    )
    assert rehearse_incident.rule_children(rule) == ["Stack-DlqDepth", "Stack-Errors"]


@mock_aws
def test_rehearse_incident_two_children_in_alarm_notify_once_through_the_composite() -> None:
    target, cloudwatch, sqs = _target(children_notify=False)

    expected, observed = rehearse_incident.check_one_notification(target, "AtRisk", ["c1", "c2"], wait=1)

    assert (expected, observed) == ("AtRisk", "AtRisk")
    assert cloudwatch.states == {"c1": "OK", "c2": "OK", "AtRisk": "OK"}
    assert not sqs.list_queues().get("QueueUrls")


@mock_aws
def test_rehearse_incident_a_child_that_notifies_too_is_reported() -> None:
    target, _, _ = _target(children_notify=True)

    expected, observed = rehearse_incident.check_one_notification(target, "AtRisk", ["c1", "c2"], wait=1)

    assert expected == "AtRisk"
    assert sorted(observed.split(", ")) == ["AtRisk", "c1", "c2"]
