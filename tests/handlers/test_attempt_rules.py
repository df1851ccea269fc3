"""Object-level rules on an order ID (issue 29, decision 0018 "Trust model"): attempt N+1 keeps the
order's caller, customer, items, currency and address (only the payment token changes), and a refused
message leaves a refusal the caller can read through ``GET /orders/{id}``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from lambda_resilience.exceptions import PayloadMismatch, PermanentError
from order_domain.errors import AttemptMismatch, OrderIdTaken
from order_domain.orders import NEW_ATTEMPT, OrderRepository
from order_domain.status import OrderStatus

CALLER = "arn:aws:iam::123456789012:role/checkout"
OTHER = "arn:aws:iam::123456789012:role/other-backend"


@pytest.fixture
def compensated(
    order_factory: Callable[..., dict[str, Any]], seed_order: Callable[..., dict[str, Any]], orders: OrderRepository
) -> dict[str, Any]:
    order = order_factory()
    orders.create(order, "cid-1", caller=CALLER)
    for status in (OrderStatus.COMPENSATING, OrderStatus.COMPENSATED):
        orders.transition(order["order_id"], status, attempt=1)
    return order


def test_attempt_rules_new_attempt_may_change_only_the_payment_token(
    compensated: dict[str, Any], orders: OrderRepository
) -> None:
    retry = {**compensated, "payment_attempt": 2, "payment_token": "tok_other_card"}
    assert orders.create(retry, "cid-2", caller=CALLER) == NEW_ATTEMPT
    assert orders.get(compensated["order_id"])["order"] == retry


@pytest.mark.parametrize(
    "change",
    [
        {"customer_id": "customer-2"},
        {"items": [{"sku": "SKU-Z", "quantity": 9, "unit_price_cents": 1}]},
        {"currency": "USD"},
        {"shipping_address": {"name": "M", "line1": "2 Elsewhere", "city": "Y", "postcode": "2", "country": "FR"}},
    ],
    ids=["customer", "items", "currency", "address"],
)
def test_attempt_rules_new_attempt_with_other_order_fields_is_refused(
    compensated: dict[str, Any], orders: OrderRepository, change: dict[str, Any]
) -> None:
    retry = {**compensated, **change, "payment_attempt": 2}
    with pytest.raises(AttemptMismatch, match="only payment_token may change") as raised:
        orders.create(retry, "cid-2", caller=CALLER)
    assert isinstance(raised.value, PermanentError)
    item = orders.get(compensated["order_id"])
    assert item["order"] == compensated
    assert item["status"] == OrderStatus.COMPENSATED.value


@pytest.mark.parametrize("attempt", [1, 2])
def test_attempt_rules_another_caller_cannot_use_the_order_id(
    compensated: dict[str, Any], orders: OrderRepository, attempt: int
) -> None:
    thief = {**compensated, "payment_attempt": attempt, "payment_token": "tok_thief"}
    with pytest.raises(OrderIdTaken, match="belongs to another caller"):
        orders.create(thief, "cid-3", caller=OTHER)
    item = orders.get(compensated["order_id"])
    assert item["order"] == compensated
    assert item["owner"] == CALLER


def test_attempt_rules_same_caller_reusing_the_id_is_a_payload_mismatch(
    order_factory: Callable[..., dict[str, Any]], orders: OrderRepository
) -> None:
    order = order_factory()
    orders.create(order, "cid-1", caller=CALLER)
    with pytest.raises(PayloadMismatch):
        orders.create({**order, "payment_token": "tok_2"}, "cid-2", caller=CALLER)


def test_attempt_rules_refusals_are_kept_on_the_order(
    order_factory: Callable[..., dict[str, Any]], orders: OrderRepository
) -> None:
    order = order_factory()
    orders.create(order, "cid-1", caller=CALLER)
    orders.record_refusal(order["order_id"], "OrderIdTaken", caller=OTHER, idempotency_key="k-thief")
    orders.record_refusal(order["order_id"], "PayloadMismatch", caller=CALLER, idempotency_key="k-2")
    item = orders.get(order["order_id"])
    assert item["refused_callers"] == {OTHER, CALLER}
    assert {k: v for k, v in item["last_refusal"].items() if k != "at"} == {
        "rule": "PayloadMismatch",
        "caller": CALLER,
        "idempotency_key": "k-2",
    }
    assert item["order"] == order
    orders.record_refusal("order-absent", "OrderIdTaken", caller=OTHER, idempotency_key=None)  # no order: nothing
    assert orders.find("order-absent") is None


def test_attempt_rules_messages_without_a_caller_keep_working(
    order_factory: Callable[..., dict[str, Any]], orders: OrderRepository
) -> None:
    """Producers sending straight to SQS carry no caller: their orders have no owner."""
    order = order_factory()
    orders.create(order, "cid-1")
    assert "owner" not in orders.get(order["order_id"])
    assert orders.create(order, "cid-1") == "duplicate"
