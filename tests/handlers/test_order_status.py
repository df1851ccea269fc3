"""Order status transitions: forward only, repeats and late steps are no-ops."""

from __future__ import annotations

import pytest

from order_domain.errors import InvalidTransition, StaleAttempt, UnknownOrder
from order_domain.orders import OrderRepository
from order_domain.status import OrderStatus

from .conftest import IdempotencyView, LedgerView


def test_order_status_forward_move_then_repeat_is_already(orders: OrderRepository, order_factory, seed_order):
    order = order_factory()
    seed_order(order)

    assert orders.transition(order["order_id"], OrderStatus.INVENTORY_RESERVED) == "moved"
    assert orders.transition(order["order_id"], OrderStatus.INVENTORY_RESERVED) == "already"
    assert [h["status"] for h in orders.get(order["order_id"])["history"]] == ["RECEIVED", "INVENTORY_RESERVED"]


@pytest.mark.parametrize(
    ("current", "late"),
    [
        (OrderStatus.PAYMENT_CHARGED, OrderStatus.INVENTORY_RESERVED),
        (OrderStatus.SHIPPED, OrderStatus.PAYMENT_CHARGED),
        (OrderStatus.COMPLETED, OrderStatus.SHIPPED),
        (OrderStatus.COMPENSATING, OrderStatus.INVENTORY_RESERVED),
        (OrderStatus.COMPENSATED, OrderStatus.COMPENSATING),
        (OrderStatus.COMPLETED, OrderStatus.COMPENSATING),
    ],
)
def test_order_status_late_step_is_stale_and_never_moves_backwards(
    orders: OrderRepository, order_factory, seed_order, current, late
):
    order = order_factory()
    seed_order(order, current)
    before = orders.get(order["order_id"])

    assert orders.transition(order["order_id"], late) == "stale"

    after = orders.get(order["order_id"])
    assert after["status"] == current.value
    assert after["history"] == before["history"]


def test_order_status_skip_raises_invalid_transition(orders: OrderRepository, order_factory, seed_order):
    order = order_factory()
    seed_order(order)

    with pytest.raises(InvalidTransition):
        orders.transition(order["order_id"], OrderStatus.COMPLETED)
    assert orders.get(order["order_id"])["status"] == OrderStatus.RECEIVED.value


def test_order_status_unknown_order_raises_unknown_order(orders: OrderRepository):
    with pytest.raises(UnknownOrder):
        orders.transition("no-such-order", OrderStatus.INVENTORY_RESERVED)


def test_order_status_late_charge_after_shipping_leaves_order_shipped(
    load,
    providers,
    order_factory,
    saga_input,
    seed_order,
    orders: OrderRepository,
    ledger: LedgerView,
    idempotency_records: IdempotencyView,
    lambda_context,
    logs,
):
    order = order_factory()
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    event = saga_input(order)
    charge = load("charge_payment")
    first = charge(event, lambda_context)
    load("ship_order")(event, lambda_context)
    idempotency_records.forget(f"{order['order_id']}#charge-payment#attempt-1")

    with pytest.raises(StaleAttempt):  # a redelivered ChargePayment after ShipOrder recorded COMPLETED
        charge(event, lambda_context)

    assert first["status"] == "captured"
    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPLETED.value
    assert len(ledger.ops("payment")) == 1
