"""``ops order <order-id>``: one order's status, attempts, timeline, correlation IDs and executions, read by
key (GetItem, DescribeExecution by the executions' deterministic names): the calls do not grow with the
table's or the state machine's history, and nothing of the customer is shown (issue 41, Build 1)."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from ops.cli import main
from ops.order_view import order_view
from ops.target import Target

REGION = "us-east-1"
CUSTOMER = {"payment": {"token": "tok_visa_secret"}, "customer": {"name": "Ada Lovelace", "address": "12 Byron St"}}


def _item(order_id: str, attempts: int) -> dict[str, Any]:
    history = [{"status": "RECEIVED", "at": "2026-11-27T10:00:00Z", "attempt": 1}]
    history += [{"status": "COMPENSATED", "at": "2026-11-27T10:01:00Z", "attempt": 1, "correlation_id": "cid-1"}]
    if attempts > 1:
        history += [{"status": "COMPLETED", "at": "2026-11-27T11:00:00Z", "attempt": 2, "correlation_id": "cid-2"}]
    item = {
        "order_id": order_id,
        "status": "COMPLETED" if attempts > 1 else "COMPENSATED",
        "payment_attempt": attempts,
        "correlation_id": f"cid-{attempts}",
        "order": {"order_id": order_id, **CUSTOMER},
        "owner": "arn:aws:iam::123456789012:role/shop",
        "history": history,
        "attempts": [{"attempt": n, "received_at": "2026-11-27T10:00:00Z", "correlation_id": f"cid-{n}"}
                     for n in range(1, attempts + 1)],
    }  # fmt: skip
    return item


@pytest.fixture
def target(aws: None) -> Target:
    ddb = boto3.resource("dynamodb", region_name=REGION)
    table = ddb.create_table(
        TableName="orders",
        KeySchema=[{"AttributeName": "order_id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "order_id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    sfn = boto3.client("stepfunctions", region_name=REGION)
    definition = {"StartAt": "Noop", "States": {"Noop": {"Type": "Pass", "End": True}}}
    arn = sfn.create_state_machine(
        name="saga", definition=json.dumps(definition), roleArn="arn:aws:iam::123456789012:role/x"
    )["stateMachineArn"]
    with table.batch_writer() as batch:  # a large history: 300 other orders, 80 other executions
        for n in range(300):
            batch.put_item(Item=_item(f"other-{n}", 1))
    for n in range(80):
        sfn.start_execution(stateMachineArn=arn, name=f"order-other-{n}-attempt-1", input="{}")
    # order_domain.saga_start.execution_name: "order-" + the order ID + "-attempt-<N>"
    table.put_item(Item=_item("order-42", 2))
    for name in ("order-order-42-attempt-1", "order-order-42-attempt-2", "order-order-42-attempt-1-repair-1"):
        sfn.start_execution(stateMachineArn=arn, name=name, input="{}")
    return Target({"OrdersTableName": "orders", "StateMachineArn": arn}, region=REGION)


def _count(target: Target) -> dict[str, int]:
    calls: dict[str, int] = {}

    def count(model: Any, **_: Any) -> None:
        calls[model.name] = calls.get(model.name, 0) + 1

    for service in ("dynamodb", "stepfunctions"):
        target.client(service).meta.events.register(f"before-call.{service.replace('stepfunctions', 'sfn')}.*", count)
    return calls


def test_order_view_shows_status_attempts_timeline_and_executions_by_name(target: Target) -> None:
    calls = _count(target)
    view = order_view(target, "order-42")
    assert (view["status"], view["attempts"]) == ("COMPLETED", 2)
    assert view["correlation_ids"] == ["cid-1", "cid-2"]
    assert [(e["status"], e["attempt"]) for e in view["timeline"]] == [
        ("RECEIVED", 1), ("COMPENSATED", 1), ("COMPLETED", 2)
    ]  # fmt: skip
    assert [e["name"] for e in view["executions"]] == [
        "order-order-42-attempt-1", "order-order-42-attempt-1-repair-1", "order-order-42-attempt-2"
    ]  # fmt: skip
    sfn = boto3.client("stepfunctions", region_name=REGION)
    assert all(e["status"] == sfn.describe_execution(executionArn=e["arn"])["status"] for e in view["executions"])
    # One GetItem, then per attempt: the execution, repair-0 (ops repair's first name), the repairs from 1 on,
    # the first of those that does not exist: 7 here, whatever the state machine's history.
    assert calls == {"GetItem": 1, "DescribeExecution": 7}
    assert "ListExecutions" not in calls and "Scan" not in calls


def test_order_view_shows_no_customer_data(
    target: Target, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Target, "from_stack", classmethod(lambda cls, *args, **kwargs: target))
    assert main(["order", "order-42", "--json"]) == 0
    as_json = capsys.readouterr().out
    assert json.loads(as_json)["status"] == "COMPLETED"
    assert main(["order", "order-42"]) == 0
    as_text = capsys.readouterr().out
    assert "order-order-42-attempt-2" in as_text and "cid-2" in as_text
    for secret in ("tok_visa_secret", "Ada Lovelace", "12 Byron St", "role/shop"):
        assert secret not in as_json and secret not in as_text


def test_order_view_unknown_order_is_an_operator_error(target: Target) -> None:
    from ops.order_view import UnknownOrder

    with pytest.raises(UnknownOrder, match="no order 'nope' in table orders"):
        order_view(target, "nope")


def test_order_view_finds_a_repair_of_an_attempt_that_never_started(target: Target) -> None:
    """``ops repair`` names its first repair of an attempt ``...-repair-0`` (ops/repair.py ``_next_name``); an
    order whose saga never started (intake died, the sweeper parked it) has only that execution."""
    boto3.resource("dynamodb", region_name=REGION).Table("orders").put_item(Item=_item("order-7", 1))
    sfn = boto3.client("stepfunctions", region_name=REGION)
    sfn.start_execution(
        stateMachineArn=target.output("StateMachineArn"), name="order-order-7-attempt-1-repair-0", input="{}"
    )
    assert [e["name"] for e in order_view(target, "order-7")["executions"]] == ["order-order-7-attempt-1-repair-0"]
