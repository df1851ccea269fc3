"""Issue 28, class "reconciliation skips retried payments": every payment attempt is reconciled with
the providers' records, an attempt replaced before the next sweep included; the marker of one
attempt never covers the next."""

from __future__ import annotations

from typing import Any

import pytest

from order_domain.model import order_total_cents
from order_domain.status import OrderStatus

from .conftest import CARRIER_FUNCTION, PAYMENT_FUNCTION, FakeLambdaClient, NeedsAttentionQueue

SCHEDULED_EVENT = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}


@pytest.fixture
def sweeper(load, providers):
    return load("sweeper")


def _key(order: dict, operation: str, attempt: int) -> str:
    return f"{order['order_id']}#{operation}#attempt-{attempt}"


def _capture(providers: FakeLambdaClient, order: dict, attempt: int, ctx: Any) -> None:
    providers.functions[PAYMENT_FUNCTION](
        {
            "action": "charge",
            "idempotency_key": _key(order, "charge-payment", attempt),
            "order_id": order["order_id"],
            "amount_cents": order_total_cents(order),
            "currency": order["currency"],
            "payment_token": order["payment_token"],
            "correlation_id": "cid-provider",
        },
        ctx,
    )


def _ship(providers: FakeLambdaClient, order: dict, attempt: int, ctx: Any) -> None:
    providers.functions[CARRIER_FUNCTION](
        {
            "action": "ship",
            "idempotency_key": _key(order, "ship-order", attempt),
            "order_id": order["order_id"],
            "address": order["shipping_address"],
            "items": order["items"],
            "correlation_id": "cid-provider",
        },
        ctx,
    )


def _attempt_2_compensated(orders, order: dict) -> None:
    orders.create({**order, "payment_attempt": 2, "payment_token": "tok_visa_two"}, "cid-2")
    for status in (OrderStatus.COMPENSATING, OrderStatus.COMPENSATED):
        assert orders.transition(order["order_id"], status, attempt=2) == "moved"


def test_reconcile_checks_attempt_2_after_attempt_1_was_reconciled(
    sweeper, order_factory, seed_order, orders, providers, needs_attention_queue: NeedsAttentionQueue, lambda_context
):
    """Attempt 1 (declined, compensated) is reconciled; attempt 2 ends COMPENSATED while its capture
    remains at the provider: the next sweep announces it."""
    order = order_factory()
    seed_order(order, OrderStatus.COMPENSATED)
    assert sweeper(SCHEDULED_EVENT, lambda_context)["reconciled"] == [order["order_id"]]
    _attempt_2_compensated(orders, order)
    _capture(providers, order, 2, lambda_context)

    second = sweeper(SCHEDULED_EVENT, lambda_context)

    assert second["mismatched"] == [order["order_id"]]
    (message,) = needs_attention_queue.messages()
    assert message["body"]["payment_attempt"] == 2 and "still captured" in message["body"]["reason"]


def test_reconcile_checks_an_attempt_replaced_before_any_sweep(
    sweeper, order_factory, seed_order, orders, providers, needs_attention_queue: NeedsAttentionQueue, lambda_context
):
    """Attempt 1 ended COMPENSATED with its money still captured, and attempt 2 replaced it before
    any sweep ran: the sweep that sees attempt 2 terminal checks attempt 1 too."""
    order = order_factory()
    seed_order(order, OrderStatus.COMPENSATED)
    _capture(providers, order, 1, lambda_context)
    _attempt_2_compensated(orders, order)

    result = sweeper(SCHEDULED_EVENT, lambda_context)

    assert result["mismatched"] == [order["order_id"]]
    bodies = [m["body"] for m in needs_attention_queue.messages()]
    assert [b["payment_attempt"] for b in bodies] == [1]
    assert "still captured" in bodies[0]["reason"]
    again = sweeper(SCHEDULED_EVENT, lambda_context)
    assert again["reconciled"] == [] and len(needs_attention_queue.messages()) == 1  # each attempt once
