"""``ops orders --status NEEDS_ATTENTION|stuck``: through the orders table's ``by-status`` index (Query), never a
scan and never a receive on the needs-attention queue (each receive counts toward its maxReceiveCount);
the calls grow with the orders listed, not with the table (issue 41, Build 1)."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from ops.cli import main
from ops.orders_list import orders_by_status
from ops.target import Target

REGION = "us-east-1"
#: The orders table's GSI as the stack defines it (stacks/order_constructs/data.py).
ORDERS_STATUS_INDEX: dict[str, Any] = {
    "IndexName": "by-status",
    "KeySchema": [
        {"AttributeName": "status", "KeyType": "HASH"},
        {"AttributeName": "updated_at", "KeyType": "RANGE"},
    ],
    "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["correlation_id"]},
}
NOW = 1_764_250_000.0


def _iso(epoch: float) -> str:
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


@pytest.fixture
def target(aws: None) -> Target:
    ddb = boto3.resource("dynamodb", region_name=REGION)
    table = ddb.create_table(
        TableName="orders",
        KeySchema=[{"AttributeName": "order_id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"} for a in ("order_id", "status", "updated_at")],
        GlobalSecondaryIndexes=[ORDERS_STATUS_INDEX],
        BillingMode="PAY_PER_REQUEST",
    )
    statuses = ("COMPLETED", "COMPENSATED", "RECEIVED", "PAYMENT_CHARGED")
    with table.batch_writer() as batch:  # a long history of other orders
        for n in range(600):
            status = statuses[n % len(statuses)]
            at = NOW - (60 if status in ("RECEIVED", "PAYMENT_CHARGED") and n % 3 else 10 * 3600)
            batch.put_item(
                Item={
                    "order_id": f"o-{n}",
                    "status": status,
                    "updated_at": _iso(at - n),
                    "correlation_id": f"cid-{n}",
                    "order": {"payment": {"token": "tok_x"}},
                }
            )
        for n in range(3):
            batch.put_item(
                Item={
                    "order_id": f"parked-{n}",
                    "status": "NEEDS_ATTENTION",
                    "updated_at": _iso(NOW - 100 - n),
                    "correlation_id": f"cid-p{n}",
                    "order": {"customer": {"name": "Ada"}},
                }
            )
    return Target({"OrdersTableName": "orders", "SagaTimeoutSeconds": "3600"}, region=REGION)


def _calls(target: Target) -> dict[str, int]:
    calls: dict[str, int] = {}

    def count(model: Any, **_: Any) -> None:
        calls[model.name] = calls.get(model.name, 0) + 1

    target.client("dynamodb").meta.events.register("before-call.dynamodb.*", count)
    return calls


def test_orders_by_status_needs_attention_one_query(target: Target) -> None:
    calls = _calls(target)
    found = orders_by_status(target, "NEEDS_ATTENTION", now=NOW)
    assert [o["order_id"] for o in found] == ["parked-2", "parked-1", "parked-0"]  # oldest first
    assert set(found[0]) == {"order_id", "status", "updated_at", "correlation_id"}
    assert calls == {"Query": 1}


def test_orders_by_status_stuck_queries_each_open_status_older_than_the_threshold(target: Target) -> None:
    calls = _calls(target)
    found = orders_by_status(target, "stuck", now=NOW, max_items=20)
    assert len(found) == 20 and {o["status"] for o in found} <= {"RECEIVED", "PAYMENT_CHARGED"}
    assert all(o["updated_at"] < _iso(NOW - 3600) for o in found)
    # one Query per non-terminal status (5), each at most one page of max_items
    assert calls == {"Query": 5}


def test_orders_cli_prints_no_customer_data(
    target: Target, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Target, "from_stack", classmethod(lambda cls, *args, **kwargs: target))
    assert main(["orders", "--status", "NEEDS_ATTENTION", "--json"]) == 0
    out = capsys.readouterr().out
    assert len(json.loads(out)) == 3 and "Ada" not in out and "tok_x" not in out
