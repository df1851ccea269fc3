"""Issue 28, class "operators race the sweeper": the sweeper and operators act on an order one at a
time (a conditional lease on the order row), and a compensation nobody asked for leaves a parked
order alone (a redrive racing the sweeper's park never becomes a refund by itself)."""

from __future__ import annotations

import time

import pytest

import lambda_resilience.aws as aws_clients
from order_domain import clock, lease
from order_domain.errors import OrderParked
from order_domain.status import OrderStatus

from .conftest import LedgerView, NeedsAttentionQueue, Tables

SCHEDULED_EVENT = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}
STUCK_AFTER = 1800


@pytest.fixture
def sweeper(load, providers):
    return load("sweeper", STUCK_AFTER_SECONDS=str(STUCK_AFTER))


def _age(tables: Tables, order_id: str, seconds: float) -> str:
    updated = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - seconds))
    aws_clients.client("dynamodb").update_item(
        TableName=tables.orders,
        Key=aws_clients.to_item({"order_id": order_id}),
        UpdateExpression="SET updated_at = :u",
        ExpressionAttributeValues=aws_clients.to_item({":u": updated}),
    )
    return updated


def test_sweeper_leaves_an_order_a_repair_holds_although_its_execution_is_not_listed_yet(
    sweeper,
    order_factory,
    seed_order,
    orders,
    tables: Tables,
    needs_attention_queue: NeedsAttentionQueue,
    lambda_context,
):
    """``ops repair`` took the lease and started its execution; ListExecutions (eventually consistent)
    does not list it yet. The sweeper must not park the order under it."""
    order = order_factory()
    seed_order(order, OrderStatus.PAYMENT_CHARGED)
    updated = _age(tables, order["order_id"], STUCK_AFTER + 600)
    assert lease.acquire(
        aws_clients.client("dynamodb"),
        tables.orders,
        order["order_id"],
        holder="ops-repair:order-x-attempt-1-repair-0",
        seconds=1800,
        status="PAYMENT_CHARGED",
        updated_at=updated,
    )

    result = sweeper(SCHEDULED_EVENT, lambda_context)

    assert result["parked"] == [] and result["moved"] == [order["order_id"]]
    assert orders.get(order["order_id"])["status"] == OrderStatus.PAYMENT_CHARGED
    assert needs_attention_queue.messages() == []


def test_sweeper_parks_once_the_lease_expired(
    sweeper, order_factory, seed_order, orders, tables: Tables, lambda_context, monkeypatch
):
    order = order_factory()
    seed_order(order, OrderStatus.PAYMENT_CHARGED)
    updated = _age(tables, order["order_id"], STUCK_AFTER + 600)
    client = aws_clients.client("dynamodb")
    assert lease.acquire(
        client,
        tables.orders,
        order["order_id"],
        holder="ops-repair:r",
        seconds=60,
        status="PAYMENT_CHARGED",
        updated_at=updated,
    )
    later = clock.now() + 120
    monkeypatch.setattr(clock, "now", lambda: later)

    result = sweeper(SCHEDULED_EVENT, lambda_context)

    assert result["parked"] == [order["order_id"]]
    item = orders.get(order["order_id"])
    assert item["status"] == OrderStatus.NEEDS_ATTENTION and "lease" not in item


@pytest.mark.parametrize("requested", [False, True])
def test_compensation_of_a_parked_order_runs_only_when_an_operator_asked(
    load, providers, order_factory, saga_input, seed_order, orders, ledger: LedgerView, lambda_context, requested
):
    """The sweeper parked the order while a redrive's execution ran: the redrive's compensations
    (no ``"compensate": true``) must not refund it, and refuse by name (``OrderParked``: the definition
    ends the execution FAILED in ``AlreadyParked``, decision 0029 as amended), not with a "stale" answer
    that lets the execution end SUCCEEDED on a parked order; ``ops repair --action compensate`` does."""
    order = order_factory()
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    state = saga_input(order)
    load("charge_payment")(state, lambda_context)
    assert orders.transition(order["order_id"], OrderStatus.NEEDS_ATTENTION, attempt=1) == "moved"

    if requested:
        answer = load("refund_payment")({**state, "compensate": True}, lambda_context)
        assert answer["status"] == "refunded"
    else:
        with pytest.raises(OrderParked):
            load("refund_payment")({**state, "compensate": False}, lambda_context)

    refunds = [op for op in ledger.ops("payment") if op["action"] == "refund"]
    if requested:
        assert len(refunds) == 1
        assert orders.get(order["order_id"])["status"] == OrderStatus.COMPENSATING
    else:
        assert refunds == []
        assert orders.get(order["order_id"])["status"] == OrderStatus.NEEDS_ATTENTION
