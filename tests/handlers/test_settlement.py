"""Settled, not sampled (issue 40, point 5): each effect of an attempt has a settlement record on the
order, followed until the provider reports a final state; a late failure parks the order with its cause."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from lambda_resilience.aws import to_item
from order_domain import clock, settlement
from order_domain.attention import NeedsAttentionNotifier
from order_domain.orders import OrderRepository
from order_domain.settlement import Observation

from .conftest import REGION, NeedsAttentionQueue, Tables


def _order(tables: Tables, status: str, order_id: str = "o-1", attempt: int = 1) -> OrderRepository:
    ddb = boto3.client("dynamodb", region_name=REGION)
    item = {
        "order_id": order_id,
        "status": status,
        "payment_attempt": attempt,
        "updated_at": clock.iso(),
        "correlation_id": "c-1",
        "history": [{"status": status, "at": clock.iso(), "attempt": attempt}],
        "order": {"order_id": order_id, "payment_token": "tok_visa"},
    }
    ddb.put_item(TableName=tables.orders, Item=to_item(item))
    return OrderRepository(tables.orders, client=ddb)


def _apply(orders: OrderRepository, queue: NeedsAttentionQueue, obs: Observation) -> str:
    notifier = NeedsAttentionNotifier(queue.url, client=boto3.client("sqs", region_name=REGION))
    return settlement.apply(orders, obs, notifier=notifier)


def _obs(status: str, at: int, event_id: str | None = None, effect: str = "refund") -> Observation:
    return Observation("o-1", effect, 1, status, at, event_id=event_id, reason="processing_error")


def _index_rows(tables: Tables) -> list[dict[str, Any]]:
    ddb = boto3.client("dynamodb", region_name=REGION)
    return ddb.scan(TableName=tables.orders, IndexName=settlement.UNSETTLED_INDEX)["Items"]


def test_settlement_refund_failing_days_later_parks_a_compensated_order(
    tables: Tables, needs_attention_queue: NeedsAttentionQueue
) -> None:
    orders = _order(tables, "COMPENSATED")
    assert _apply(orders, needs_attention_queue, _obs("pending", 100)) == settlement.APPLIED
    assert _apply(orders, needs_attention_queue, _obs("succeeded", 200)) == settlement.APPLIED
    assert orders.get("o-1")["status"] == "COMPENSATED"
    assert _apply(orders, needs_attention_queue, _obs("failed", 200 + 5 * 86400)) == settlement.PARKED
    item = orders.get("o-1")
    assert item["status"] == "NEEDS_ATTENTION"
    last = item["history"][-1]
    assert last["status"] == "NEEDS_ATTENTION" and last["by"] == "settlement" and "refund failed" in last["cause"]
    assert item["last_error"]["Error"] == "LateSettlementFailure"
    (message,) = [m["body"] for m in needs_attention_queue.messages()]
    assert message["order_id"] == "o-1" and message["source"] == "settlement"
    assert "tok_visa" not in str(item["history"]) and "tok_visa" not in str(message)


def test_settlement_older_event_never_overwrites_a_newer_state(
    tables: Tables, needs_attention_queue: NeedsAttentionQueue
) -> None:
    orders = _order(tables, "COMPENSATED")
    assert _apply(orders, needs_attention_queue, _obs("succeeded", 200, "evt_2")) == settlement.APPLIED
    assert _apply(orders, needs_attention_queue, _obs("pending", 100, "evt_1")) == settlement.OLDER
    record = orders.get("o-1")["settlement"]["refund#1"]
    assert record["status"] == "succeeded" and record["state"] == settlement.FINAL


def test_settlement_same_event_twice_is_applied_once(
    tables: Tables, needs_attention_queue: NeedsAttentionQueue
) -> None:
    orders = _order(tables, "COMPLETED")
    failed = _obs("disputed", 500, "evt_9", effect="charge")
    assert _apply(orders, needs_attention_queue, failed) == settlement.PARKED
    assert _apply(orders, needs_attention_queue, failed) == settlement.DUPLICATE
    assert len(needs_attention_queue.messages()) == 1
    assert [h.get("by") for h in orders.get("o-1")["history"]].count("settlement") == 1


def test_settlement_pending_effect_is_in_the_unsettled_index_until_final(
    tables: Tables, needs_attention_queue: NeedsAttentionQueue
) -> None:
    orders = _order(tables, "COMPENSATED")
    _apply(orders, needs_attention_queue, _obs("pending", 100))
    assert [r["order_id"]["S"] for r in _index_rows(tables)] == ["o-1"]
    _apply(orders, needs_attention_queue, _obs("succeeded", 200))
    assert _index_rows(tables) == []


def test_settlement_late_failure_on_a_running_order_waits_in_the_index_then_parks(
    tables: Tables, needs_attention_queue: NeedsAttentionQueue
) -> None:
    orders = _order(tables, "COMPENSATING")
    assert _apply(orders, needs_attention_queue, _obs("failed", 100)) == settlement.APPLIED
    assert orders.get("o-1")["status"] == "COMPENSATING" and len(_index_rows(tables)) == 1
    boto3.client("dynamodb", region_name=REGION).update_item(
        TableName=tables.orders,
        Key=to_item({"order_id": "o-1"}),
        UpdateExpression="SET #s = :s",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues=to_item({":s": "COMPENSATED"}),
    )
    notifier = NeedsAttentionNotifier(needs_attention_queue.url, client=boto3.client("sqs", region_name=REGION))
    assert settlement.park_unannounced(orders, "o-1", notifier=notifier) == settlement.PARKED
    assert orders.get("o-1")["status"] == "NEEDS_ATTENTION" and _index_rows(tables) == []


@pytest.mark.parametrize(
    ("effect", "status", "final", "failure"),
    [
        ("refund", "pending", False, False),
        ("refund", "succeeded", True, False),
        ("refund", "failed", True, True),
        ("charge", "failed", True, True),
        ("charge", "disputed", True, True),
        ("shipment", "in_transit", False, False),
        ("shipment", "returned", True, True),
    ],
)
def test_settlement_states_of_each_effect(effect: str, status: str, final: bool, failure: bool) -> None:
    obs = Observation("o", effect, 1, status, 1)
    assert settlement.is_final(obs) is final and settlement.is_late_failure(obs) is failure
