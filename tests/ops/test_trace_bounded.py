"""``ops trace``'s log read is one Logs Insights query over a time window (StartQuery, then GetQueryResults),
never FilterLogEvents paging through every group's whole history; an order ID finds its lines and
executions by name (issue 41, Build 1)."""

from __future__ import annotations

import json
from typing import Any

import boto3

from ops.target import Target
from ops.trace import trace
from tests.ops.test_trace import GROUPS, put_lines

REGION = "us-east-1"


def _counting(target: Target) -> dict[str, int]:
    calls: dict[str, int] = {}

    def count(model: Any, **_: Any) -> None:
        calls[model.name] = calls.get(model.name, 0) + 1

    target.client("logs").meta.events.register("before-call.cloudwatch-logs.*", count)
    target.client("stepfunctions").meta.events.register("before-call.sfn.*", count)
    return calls


def _history(group: str, lines: int) -> None:
    """Many other orders' lines (a long history): none of them is read by name."""
    put_lines(group, [{"level": "INFO", "message": "other", "correlation_id": f"cid-{n}"} for n in range(lines)])


def test_trace_reads_logs_with_one_insights_query_whatever_the_history(aws: None) -> None:
    for group in GROUPS:
        _history(group, 3000)
    put_lines(GROUPS[0], [{"level": "INFO", "message": "received", "correlation_id": "cid-x", "order_id": "o-1"}])
    target = Target({"LogGroupNames": ",".join(GROUPS)}, region=REGION)
    calls = _counting(target)
    events = trace(target, "cid-x", since_seconds=3600)
    assert [e.text for e in events] == ['INFO received {"order_id": "o-1"}']
    assert calls.get("StartQuery") == 1 and "FilterLogEvents" not in calls
    assert calls.get("GetQueryResults", 0) <= 3


def test_trace_by_order_id_finds_its_lines_and_executions_by_name(aws: None) -> None:
    sfn = boto3.client("stepfunctions", region_name=REGION)
    definition = {"StartAt": "Noop", "States": {"Noop": {"Type": "Pass", "End": True}}}
    arn = sfn.create_state_machine(
        name="saga", definition=json.dumps(definition), roleArn="arn:aws:iam::123456789012:role/x"
    )["stateMachineArn"]
    for n in range(40):
        sfn.start_execution(stateMachineArn=arn, name=f"order-other-{n}-attempt-1", input="{}")
    sfn.start_execution(stateMachineArn=arn, name="order-o-1-attempt-1", input="{}")
    put_lines(GROUPS[0], [{"level": "INFO", "message": "other", "correlation_id": "cid-z", "order_id": "o-2"}])
    put_lines(GROUPS[1], [{"level": "INFO", "message": "charged", "correlation_id": "cid-y", "order_id": "o-1"}])
    target = Target({"LogGroupNames": ",".join(GROUPS), "StateMachineArn": arn}, region=REGION)
    calls = _counting(target)
    events = trace(target, "o-1", since_seconds=3600)
    assert ("log:" + GROUPS[1], 'INFO charged {"order_id": "o-1"}') in [(e.source, e.text) for e in events]
    assert any(e.source == "execution:order-o-1-attempt-1" for e in events)
    assert "ListExecutions" not in calls and calls.get("StartQuery") == 1
