"""Every automatic replay leaves a record a person can read (``ops dlq history``), read by key, never a scan.

The records live in the failures table under one item per UTC hour; reading a window costs
BatchGetItem calls for that window's hours, whatever the table holds (issue 41, Build 1 and 6).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from lambda_resilience.replay_history import HOUR, read_history, record_run

TABLE = "failures"
NOW = 1_764_250_000.0  # 2025-11-27T13:26:40Z


@pytest.fixture
def table() -> Iterator[Any]:
    with mock_aws():
        ddb = boto3.client("dynamodb", region_name="us-east-1")
        ddb.create_table(
            TableName=TABLE,
            KeySchema=[{"AttributeName": "message_id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "message_id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        yield ddb


class Counting:
    """``client(service)`` that counts the DynamoDB calls by operation."""

    def __init__(self, ddb: Any) -> None:
        self.ddb = ddb
        self.calls: dict[str, int] = {}
        ddb.meta.events.register("before-call.dynamodb.*", self._count)

    def _count(self, model: Any, **_: Any) -> None:
        self.calls[model.name] = self.calls.get(model.name, 0) + 1

    def __call__(self, service: str) -> Any:
        assert service == "dynamodb"
        return self.ddb


def _replayed(order: str) -> dict[str, Any]:
    return {
        "message_id": f"m-{order}",
        "order_id": order,
        "attempt": 1,
        "correlation_id": f"cid-{order}",
        "category": "transient",
        "replay_count": 0,
    }


def test_replay_history_reads_back_each_run_in_the_window(table: Any) -> None:
    client = Counting(table)
    record_run(client, TABLE, dlq="orders-dlq", replayed=[_replayed("order-1")], skipped=2, now=NOW - 3 * HOUR)
    record_run(client, TABLE, dlq="orders-dlq", replayed=[_replayed("order-2")], skipped=0, now=NOW - 60)
    runs = read_history(client, TABLE, since_seconds=2 * HOUR, now=NOW)
    assert [r["replayed"][0]["order_id"] for r in runs] == ["order-2"]
    (run,) = runs
    assert run["dlq"] == "orders-dlq" and run["skipped"] == 0 and run["at"] == "2025-11-27T13:25:40Z"
    older = read_history(client, TABLE, since_seconds=4 * HOUR, now=NOW)
    assert [r["replayed"][0]["order_id"] for r in older] == ["order-1", "order-2"]
    assert older[0]["replayed"][0] == _replayed("order-1") and older[0]["skipped"] == 2


def test_replay_history_calls_do_not_grow_with_history(table: Any) -> None:
    """Five hundred hours of runs in the table: reading the last day costs one BatchGetItem."""
    client = Counting(table)
    for hour in range(500):
        record_run(client, TABLE, dlq="orders-dlq", replayed=[_replayed(f"o{hour}")], skipped=0, now=NOW - hour * HOUR)
    client.calls.clear()
    runs = read_history(client, TABLE, since_seconds=24 * HOUR, now=NOW)
    assert len(runs) == 25  # this hour and the 24 before it
    assert client.calls == {"BatchGetItem": 1}
    client.calls.clear()
    read_history(client, TABLE, since_seconds=14 * 24 * HOUR, now=NOW)
    assert client.calls == {"BatchGetItem": 4}  # 337 hours, 100 keys a call


def test_replay_history_holds_no_customer_data(table: Any) -> None:
    client = Counting(table)
    leaky = {**_replayed("order-9"), "card_token": "tok_x", "name": "Ada"}
    record_run(client, TABLE, dlq="orders-dlq", replayed=[leaky], skipped=0, now=NOW)
    text = json.dumps(read_history(client, TABLE, since_seconds=HOUR, now=NOW))
    assert "tok_x" not in text and "Ada" not in text and "order-9" in text
