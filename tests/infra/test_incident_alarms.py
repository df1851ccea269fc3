"""One incident, one notification: the order path's alarms notify through one composite alarm
(decision 0030): a parked order's four alarms (its needs-attention arrival and depth, ParkedOrders,
ExecutionsFailed) keep no action, the composite pages once."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.infra.conftest import SynthResult


def _rule_targets(rule: Any) -> set[str]:
    """Logical IDs whose ``Arn`` the rule reads (``Fn::GetAtt`` inside its ``Fn::Join``)."""
    text = json.dumps(rule)
    found: set[str] = set()
    for part in text.split('"Fn::GetAtt": [')[1:]:
        found.add(part.split('"')[1])
    return found


def _composites(synth: SynthResult) -> dict[str, dict[str, Any]]:
    return {k: a["Properties"] for k, a in synth.of_type("AWS::CloudWatch::CompositeAlarm").items()}


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_incident_alarms_a_parked_order_notifies_through_one_composite(
    stage: str, request: pytest.FixtureRequest
) -> None:
    synth: SynthResult = request.getfixturevalue(stage)
    alarms = synth.of_type("AWS::CloudWatch::Alarm")
    parked = {
        k
        for k in alarms
        if any(
            s in k
            for s in (
                "NeedsAttentionQueueQueueArrivals",
                "ParkedOrders",
                "ExecutionsFailed",
            )
        )
    }
    assert len(parked) == 3  # the queue's depth is a silent level (it outlives the repairs: decision 0030)
    page = [{"Ref": synth.logical_id(synth.stack.alarm_topic)}]
    covering = [c for c in _composites(synth).values() if parked <= _rule_targets(c["AlarmRule"])]
    assert len(covering) == 1, "one composite covers a parked order's alarms"
    assert covering[0]["AlarmActions"] == page
    assert not covering[0].get("OKActions") and not covering[0].get("InsufficientDataActions")
    for logical_id in parked:
        assert not alarms[logical_id]["Properties"].get("AlarmActions"), logical_id


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_incident_alarms_every_silent_alarm_is_covered_by_a_notifying_composite(
    stage: str, request: pytest.FixtureRequest
) -> None:
    synth: SynthResult = request.getfixturevalue(stage)
    covered = {t for c in _composites(synth).values() if c.get("AlarmActions") for t in _rule_targets(c["AlarmRule"])}
    silent = {k for k, a in synth.of_type("AWS::CloudWatch::Alarm").items() if not a["Properties"].get("AlarmActions")}
    levels = {k for k in silent if "Notifies nobody" in synth.properties(k)["AlarmDescription"]}
    assert silent, "the order path's alarms notify through the composite"
    assert levels == {synth.logical_id(synth.stack.needs_attention.queue_alarm)}  # paged by its arrivals alarm
    assert silent - levels <= covered
    assert not levels & covered  # a level in the composite would hold it in ALARM after every repair
    assert len(covered) <= 100  # "as many as 100 underlying alarms" (PutCompositeAlarm)
