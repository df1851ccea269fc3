"""Issue 40, build point 3: nothing that depends on the moment is cached.

An idempotency record holds only an effect's outcome. A compensation that does nothing because of the
order's status at that instant ("stale": parked and nobody asked, terminal, replaced) answers so again
on every call: a later, legitimate compensation of the same attempt (an operator's repair after the
sweeper parked a late-started execution, a Step Functions Redrive) really runs. Forward steps refuse an
order past their own stage (COMPENSATING included) before any effect, and a refused status write after
the effect fails loudly (``OrderMovedOn``), never reports success.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from unittest import mock

import pytest
from botocore.client import BaseClient

from order_domain.errors import OrderMovedOn, OrderParked, StaleAttempt
from order_domain.status import OrderStatus

from .conftest import FakeLambdaClient, IdempotencyView, Inventory, LedgerView


def _park(orders: Any, order_id: str) -> None:
    """The sweeper (or a saga's park) moved the order to NEEDS_ATTENTION meanwhile."""
    assert orders.transition(order_id, OrderStatus.NEEDS_ATTENTION, attempt=1) == "moved"


def test_refund_stale_answer_is_not_cached_and_the_operators_compensation_refunds(
    load, providers, order_factory, saga_input, seed_order, orders, ledger: LedgerView, lambda_context
):
    """A late-started execution's RefundPayment met a parked order (refused); ``ops repair --action
    compensate`` then runs RefundPayment of the same attempt: it must refund, not replay "stale"."""
    order = order_factory()
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    state = saga_input(order)
    load("charge_payment")(state, lambda_context)
    _park(orders, order["order_id"])
    refund = load("refund_payment")

    with pytest.raises(OrderParked):  # parked, nobody asked (decision 0029): refused, not cached
        refund(state, lambda_context)
    answer = refund({**state, "compensate": True}, lambda_context)

    assert answer["status"] == "refunded"
    assert len([op for op in ledger.ops("payment") if op["action"] == "refund"]) == 1
    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPENSATING


def test_release_stale_answer_is_not_cached_and_the_operators_compensation_gives_the_stock_back(
    load, order_factory, saga_input, seed_order, orders, inventory: Inventory, lambda_context
):
    inventory.seed(**{"SKU-A": 10, "SKU-B": 10})
    order = order_factory()
    seed_order(order)
    state = saga_input(order)
    load("reserve_inventory")(state, lambda_context)
    _park(orders, order["order_id"])
    release = load("release_inventory")

    with pytest.raises(OrderParked):
        release(state, lambda_context)
    answer = release({**state, "compensate": True}, lambda_context)

    assert answer["status"] == "released"
    assert (inventory.available("SKU-A"), inventory.available("SKU-B")) == (10, 10)


def test_cancel_shipment_stale_answer_is_not_cached_and_the_operators_compensation_cancels(
    load, providers, order_factory, saga_input, seed_order, orders, ledger: LedgerView, lambda_context
):
    order = order_factory()
    seed_order(order, OrderStatus.PAYMENT_CHARGED)
    state = saga_input(order)
    _park(orders, order["order_id"])
    cancel = load("cancel_shipment")

    with pytest.raises(OrderParked):
        cancel(state, lambda_context)
    answer = cancel({**state, "compensate": True}, lambda_context)

    assert answer["status"] == "cancelled"
    assert [r["action"] for r in ledger.requests("carrier")] == ["get", "cancel"]


def test_compensation_stale_answer_leaves_no_idempotency_record(
    load, providers, order_factory, saga_input, seed_order, orders, idempotency_records: IdempotencyView, lambda_context
):
    order = order_factory()
    seed_order(order, OrderStatus.PAYMENT_CHARGED)
    _park(orders, order["order_id"])

    with pytest.raises(OrderParked):
        load("refund_payment")(saga_input(order), lambda_context)

    assert idempotency_records.get(f"{order['order_id']}#refund-payment#attempt-1") is None


@pytest.mark.parametrize(
    ("function", "status"),
    [
        ("reserve_inventory", OrderStatus.COMPENSATING),
        ("charge_payment", OrderStatus.COMPENSATING),
        ("ship_order", OrderStatus.COMPENSATING),
        ("charge_payment", OrderStatus.RECEIVED),
        ("ship_order", OrderStatus.INVENTORY_RESERVED),
    ],
)
def test_forward_step_refuses_an_order_outside_its_stage_before_any_effect(
    load,
    providers: FakeLambdaClient,
    order_factory,
    saga_input,
    seed_order,
    orders,
    inventory: Inventory,
    lambda_context,
    function: str,
    status: OrderStatus,
):
    """A COMPENSATING order is being undone (``step_item`` refused only terminal ones): a late or
    duplicated forward step must not reserve, charge or ship it."""
    inventory.seed(**{"SKU-A": 10, "SKU-B": 10})
    order = order_factory()
    seed_order(order, status)

    with pytest.raises(StaleAttempt):
        load(function)(saga_input(order), lambda_context)

    assert providers.calls == []
    assert (inventory.available("SKU-A"), inventory.available("SKU-B")) == (10, 10)
    assert orders.get(order["order_id"])["status"] == status


def _moving_before(status: str, move: Callable[[], None]) -> Any:
    """Run ``move`` (another actor) right before the step's UpdateItem to ``status``."""
    original = BaseClient._make_api_call

    def call(self: Any, operation: str, params: dict[str, Any]) -> Any:
        to = (params.get("ExpressionAttributeValues") or {}).get(":to", {}).get("S")
        if operation == "UpdateItem" and to == status:
            move()
        return original(self, operation, params)

    return mock.patch.object(BaseClient, "_make_api_call", call)


@pytest.mark.parametrize(
    ("function", "start", "writes"),
    [
        ("reserve_inventory", OrderStatus.RECEIVED, "INVENTORY_RESERVED"),
        ("charge_payment", OrderStatus.INVENTORY_RESERVED, "PAYMENT_CHARGED"),
    ],
)
def test_forward_step_whose_status_write_is_refused_fails_loudly(
    load,
    providers,
    order_factory,
    saga_input,
    seed_order,
    orders,
    inventory: Inventory,
    lambda_context,
    function: str,
    start: OrderStatus,
    writes: str,
):
    """Another actor moved the order (a repair's compensation) between the effect and the status write:
    the step must not report success (the saga would go on to charge or ship a COMPENSATING order)."""
    inventory.seed(**{"SKU-A": 10, "SKU-B": 10})
    order = order_factory()
    seed_order(order, start)

    def compensate() -> None:
        if orders.get(order["order_id"])["status"] != OrderStatus.COMPENSATING:
            orders.transition(order["order_id"], OrderStatus.COMPENSATING, attempt=1)

    with _moving_before(writes, compensate), pytest.raises(OrderMovedOn) as raised:
        load(function)(saga_input(order), lambda_context)

    assert type(raised.value).__name__ == "OrderMovedOn"  # the name the definition sees
    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPENSATING


def test_reserve_and_charge_rerun_on_an_order_further_along_answer_from_their_records(
    load,
    providers,
    order_factory,
    saga_input,
    seed_order,
    orders,
    inventory: Inventory,
    ledger: LedgerView,
    idempotency_records: IdempotencyView,
    lambda_context,
):
    """A repair's redrive after our idempotency records expired reruns ReserveInventory and ChargePayment
    on a PAYMENT_CHARGED order: the saga's own later step, not another actor. They answer from their
    records (no stock, no money moves) and the saga goes on to ship; they neither refuse nor fail."""
    inventory.seed(**{"SKU-A": 10, "SKU-B": 10})
    order = order_factory()
    seed_order(order)
    state = saga_input(order)
    load("reserve_inventory")(state, lambda_context)
    load("charge_payment")(state, lambda_context)
    for record in idempotency_records.records():
        idempotency_records.forget(record["id"])

    assert load("reserve_inventory")(state, lambda_context)["status"] == "reserved"
    assert load("charge_payment")(state, lambda_context)["status"] == "captured"

    assert (inventory.available("SKU-A"), inventory.available("SKU-B")) == (8, 9)
    assert len([op for op in ledger.ops("payment") if op["action"] == "charge"]) == 1
    assert orders.get(order["order_id"])["status"] == OrderStatus.PAYMENT_CHARGED
