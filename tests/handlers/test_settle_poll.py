"""The sweeper's fallback for settlement: a bounded poll of the sparse ``unsettled`` index (never a scan) that
follows each pending effect until the provider reports it final, and parks an ended order that failed late."""

from __future__ import annotations

from typing import Any

import boto3

from lambda_resilience.aws import to_item
from order_domain import clock, settlement
from order_domain.attention import NeedsAttentionNotifier
from order_domain.orders import OrderRepository
from order_domain.ports import Refund, parse_refund
from order_domain.settle_poll import SettlementPoll

from .conftest import REGION, NeedsAttentionQueue, Tables


class NoScan:
    """The orders table's client, refusing a Scan (the poll must read the index only)."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def scan(self, **_: Any) -> Any:
        raise AssertionError("the poll scanned the table")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


class Refunds:
    """A payment provider's refund lookup: every refund settled as ``status`` at ``at``."""

    def __init__(self, status: str | None, at: int = 10) -> None:
        self.status, self.at = status, at
        self.asked: list[str] = []

    def find_refund(self, key: str) -> Refund | None:
        self.asked.append(key)
        return Refund("pending", 100, settlement=self.status, settled_at=self.at)


def _pending_refund(tables: Tables, order_id: str, status: str = "COMPENSATED") -> OrderRepository:
    ddb = boto3.client("dynamodb", region_name=REGION)
    item = {"order_id": order_id, "status": status, "payment_attempt": 1, "updated_at": clock.iso(), "history": []}
    ddb.put_item(TableName=tables.orders, Item=to_item(item))
    orders = OrderRepository(tables.orders, client=NoScan(ddb))
    settlement.apply(orders, settlement.step_sighting(order_id, settlement.REFUND, 1), notifier=None)
    return orders


def _poll(orders: OrderRepository, queue: NeedsAttentionQueue, refunds: Refunds, **kw: Any) -> Any:
    notifier = NeedsAttentionNotifier(queue.url, client=boto3.client("sqs", region_name=REGION))
    poll = SettlementPoll(orders, notifier, refunds, logger=_Log(), **kw)
    return poll.poll(lambda: 100.0, now=clock.now() + settlement.POLL_AFTER_SECONDS + 1)


class _Log:
    def __getattr__(self, _: str) -> Any:
        return lambda *a, **k: None


def test_settle_poll_refund_failed_days_later_parks_the_order(
    tables: Tables, needs_attention_queue: NeedsAttentionQueue
) -> None:
    orders = _pending_refund(tables, "o-1")
    refunds = Refunds("failed")
    result = _poll(orders, needs_attention_queue, refunds)
    assert refunds.asked == ["o-1#refund-payment#attempt-1"]
    assert result.parked == ["o-1"] and orders.get("o-1")["status"] == "NEEDS_ATTENTION"
    assert "refund failed" in orders.get("o-1")["history"][-1]["cause"]


def test_settle_poll_follows_a_pending_refund_until_final(
    tables: Tables, needs_attention_queue: NeedsAttentionQueue
) -> None:
    orders = _pending_refund(tables, "o-2")
    assert _poll(orders, needs_attention_queue, Refunds(None)).polled == ["o-2"]
    item = orders.get("o-2")
    assert item["settlement"]["refund#1"]["state"] == "pending" and item["settle_due"] > clock.iso()
    assert _poll(orders, needs_attention_queue, Refunds(None)).polled == []  # not due again yet
    orders.client.update_item(
        TableName=tables.orders,
        Key=to_item({"order_id": "o-2"}),
        UpdateExpression="SET settle_due = :d",
        ExpressionAttributeValues=to_item({":d": clock.iso(0)}),
    )
    assert _poll(orders, needs_attention_queue, Refunds("succeeded")).settled == ["o-2"]
    item = orders.get("o-2")
    assert item["status"] == "COMPENSATED" and "settle_due" not in item


def test_settle_poll_is_bounded_and_defers_the_rest(tables: Tables, needs_attention_queue: NeedsAttentionQueue) -> None:
    for order_id in ("o-a", "o-b", "o-c"):
        orders = _pending_refund(tables, order_id)
    result = _poll(orders, needs_attention_queue, Refunds("succeeded"), max_orders=2)
    assert len(result.settled) == 2 and len(result.deferred) == 1


def test_settle_poll_refund_answer_carries_its_settlement() -> None:
    refund = parse_refund({"status": "pending", "amount_cents": 5, "settlement": "failed", "settled_at": 7})
    assert (refund.settlement, refund.settled_at) == ("failed", 7)
    assert parse_refund({"status": "refunded", "amount_cents": 5}).settlement is None
