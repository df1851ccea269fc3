"""One notification per incident, none from a deploy: each alarm's severity routes it to the page or
the ticket topic, no alarm notifies on OK, and the sweeper's alarms span two sweeps."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from constructs_lib.delivery import CLOUDWATCH_PRINCIPAL, Request, allowed
from stacks.order_constructs.sweeper import SWEEP_RATE
from tests.infra.conftest import SynthResult, present

ACCOUNT = "<Ref:AWS::AccountId>"
ALARM = f"arn:<Ref:AWS::Partition>:cloudwatch:<Ref:AWS::Region>:{ACCOUNT}:alarm:x"


def _alarms(synth: SynthResult) -> dict[str, dict[str, Any]]:
    return {k: a["Properties"] for k, a in synth.of_type("AWS::CloudWatch::Alarm").items()}


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_alarm_routing_no_alarm_notifies_on_ok(stage: str, request: pytest.FixtureRequest) -> None:
    """A deploy creates alarms in INSUFFICIENT_DATA and each moves to OK at its first evaluation,
    running its OK actions: ~28 OK e-mails per deploy. No OK action, no deploy notification."""
    synth: SynthResult = request.getfixturevalue(stage)
    with_ok = [k for k, a in _alarms(synth).items() if a.get("OKActions")]
    assert with_ok == []


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_alarm_routing_only_the_heartbeat_notifies_on_insufficient_data(
    stage: str, request: pytest.FixtureRequest
) -> None:
    synth: SynthResult = request.getfixturevalue(stage)
    notifying = {k for k, a in _alarms(synth).items() if a.get("InsufficientDataActions")}
    assert notifying == {synth.logical_id(synth.stack.sweeper_heartbeat_alarm)}


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_alarm_routing_each_severity_to_its_own_topic(stage: str, request: pytest.FixtureRequest) -> None:
    synth: SynthResult = request.getfixturevalue(stage)
    page = [{"Ref": synth.logical_id(synth.stack.alarm_topic)}]
    ticket = [{"Ref": synth.logical_id(synth.stack.ticket_topic)}]
    assert page != ticket
    severities = set()
    composites = {k: a["Properties"] for k, a in synth.of_type("AWS::CloudWatch::CompositeAlarm").items()}
    for logical_id, alarm in [*_alarms(synth).items(), *composites.items()]:
        severity = alarm["AlarmDescription"].split("]", 1)[0].lstrip("[")
        severities.add(severity)
        expected = page if severity == "page" else ticket
        if any(n in alarm["AlarmDescription"] for n in ("Notifies through the composite alarm", "Notifies nobody")):
            expected = []  # one incident, one notification: its composite's (tests/infra/test_incident_alarms.py)
        assert alarm.get("AlarmActions", []) == expected, logical_id
        assert alarm.get("InsufficientDataActions", expected) == expected, logical_id
    assert severities == {"page", "ticket"}


def test_alarm_routing_both_topics_let_cloudwatch_publish(prod: SynthResult) -> None:
    """Both topics carry the policy CloudWatch needs (decision 0020), scoped to this account's alarms."""
    topics = {prod.logical_id(prod.stack.alarm_topic), prod.logical_id(prod.stack.ticket_topic)}
    policies = prod.of_type("AWS::SNS::TopicPolicy").values()
    for topic in topics:
        documents = [p["Properties"]["PolicyDocument"] for p in policies if {"Ref": topic} in p["Properties"]["Topics"]]
        context = {"aws:SourceArn": ALARM, "aws:SourceAccount": ACCOUNT, "aws:SecureTransport": "true"}
        publish = Request(CLOUDWATCH_PRINCIPAL, "sns:Publish", f"<Ref:{topic}>", context)
        assert allowed(documents, publish), topic
        other = {**context, "aws:SourceAccount": "9" * 12}
        assert not allowed(documents, dataclasses.replace(publish, context=other)), topic


def test_alarm_routing_ticket_topic_has_the_email_subscription(prod: SynthResult) -> None:
    ticket = {"Ref": prod.logical_id(prod.stack.ticket_topic)}
    subscriptions = [s["Properties"] for s in prod.of_type("AWS::SNS::Subscription").values()]
    assert [s["Endpoint"] for s in subscriptions if s["TopicArn"] == ticket] == ["ops@example.com"]


@pytest.mark.parametrize("attr", ["stuck_alarm", "mismatch_alarm", "sweeper_heartbeat_alarm", "parked_alarm"])
def test_alarm_periods_sweeper_alarms_span_two_sweeps(dev: SynthResult, attr: str) -> None:
    """A metric emitted every 5 minutes, watched over 5 minutes, has periods with no run in them
    (the schedule's offset): the alarm flaps. Each sweeper alarm's period holds at least two runs."""
    alarm = dev.properties(dev.logical_id(present(getattr(dev.stack, attr))))
    assert alarm["Period"] >= 2 * SWEEP_RATE.to_seconds()


def test_alarm_routing_a_parked_order_pages_once(dev: SynthResult) -> None:
    """One parked order moved four alarms (executions failed, the needs-attention queue's arrivals and
    depth, parked orders): only the arrival pages; the others are tickets (a refused input, the other
    cause of a failed execution, has no side effect to undo)."""
    stack = dev.stack
    echoes = (stack.saga.alarms["failed"], stack.needs_attention.queue_alarm, stack.parked_alarm)
    severity = {
        dev.logical_id(a): dev.properties(dev.logical_id(a))["AlarmDescription"].split("]")[0]
        for a in (*echoes, stack.needs_attention.queue_arrivals_alarm)
    }
    assert [s for s in severity.values() if s == "[page"] == ["[page"]
    assert severity[dev.logical_id(stack.needs_attention.queue_arrivals_alarm)] == "[page"
