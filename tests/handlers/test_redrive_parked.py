"""A Step Functions Redrive of an execution whose order was parked meanwhile (decision 0029, amended).

The sweeper parked the order (NEEDS_ATTENTION, announced) after its execution timed out; someone redrives
that execution from the console or the API: an operator's action that did not go through ``ops repair``.
Every step of the redriven execution meets a parked order nobody asked it to act on. It refuses by one
name, ``OrderParked``, before any effect and before any idempotency record: the definition ends the
execution FAILED at once (``AlreadyParked``), so it can neither end SUCCEEDED with the order still parked
nor park and announce it a second time. The failure is expected (``ExpectedErrors``): an operator's action
never pages. The order keeps its exits: ``ops repair`` (its ``"compensate": true`` still takes the order
out) and ``ops resolve``.
"""

from __future__ import annotations

from typing import Any

import pytest

from order_domain.errors import OrderParked
from order_domain.status import OrderStatus

from .conftest import FakeLambdaClient, IdempotencyView, Inventory, LogCapture

#: Each step, and the status its order had reached when the sweeper parked it.
STEPS = [
    ("reserve_inventory", OrderStatus.RECEIVED),
    ("charge_payment", OrderStatus.INVENTORY_RESERVED),
    ("ship_order", OrderStatus.PAYMENT_CHARGED),
    ("cancel_shipment", OrderStatus.PAYMENT_CHARGED),
    ("refund_payment", OrderStatus.PAYMENT_CHARGED),
    ("release_inventory", OrderStatus.INVENTORY_RESERVED),
]


def _parked(orders: Any, seed_order: Any, order: dict[str, Any], reached: OrderStatus) -> None:
    seed_order(order, reached)
    assert orders.transition(order["order_id"], OrderStatus.NEEDS_ATTENTION, attempt=1) == "moved"


@pytest.mark.parametrize(("function", "reached"), STEPS)
def test_redrive_parked_step_refuses_by_name_before_any_effect(
    load,
    providers: FakeLambdaClient,
    order_factory,
    saga_input,
    seed_order,
    orders,
    inventory: Inventory,
    idempotency_records: IdempotencyView,
    lambda_context,
    function: str,
    reached: OrderStatus,
):
    inventory.seed(**{"SKU-A": 10, "SKU-B": 10})
    order = order_factory()
    _parked(orders, seed_order, order, reached)

    with pytest.raises(OrderParked) as raised:
        load(function)(saga_input(order), lambda_context)

    assert type(raised.value).__name__ == "OrderParked"  # the name the definition catches
    assert providers.calls == []
    assert (inventory.available("SKU-A"), inventory.available("SKU-B")) == (10, 10)
    assert orders.get(order["order_id"])["status"] == OrderStatus.NEEDS_ATTENTION
    assert idempotency_records.records() == []  # an answer of the moment: never cached


@pytest.mark.parametrize("function", ["release_inventory", "refund_payment", "cancel_shipment"])
def test_redrive_parked_compensation_still_runs_for_an_operators_repair(
    load, providers, order_factory, saga_input, seed_order, orders, inventory: Inventory, lambda_context, function: str
):
    """The refusal is not cached: ``ops repair --action compensate`` (``"compensate": true``) then compensates."""
    inventory.seed(**{"SKU-A": 10, "SKU-B": 10})
    order = order_factory()
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    load("charge_payment")(saga_input(order), lambda_context)  # a capture the refund finds
    assert orders.transition(order["order_id"], OrderStatus.NEEDS_ATTENTION, attempt=1) == "moved"
    step = load(function)
    with pytest.raises(OrderParked):
        step(saga_input(order), lambda_context)

    step({**saga_input(order), "compensate": True}, lambda_context)

    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPENSATING


def test_redrive_parked_refusal_is_counted_as_expected_not_paged(
    load, order_factory, saga_input, seed_order, orders, lambda_context, logs: LogCapture
):
    """A redrive is an operator's action: the function's ``Errors - ExpectedErrors`` alarm stays quiet."""
    order = order_factory()
    _parked(orders, seed_order, order, OrderStatus.INVENTORY_RESERVED)

    with pytest.raises(OrderParked):
        load("charge_payment")(saga_input(order, "cid-redrive"), lambda_context)

    assert logs.metric_total("ExpectedErrors") == 1
    (line,) = logs.find("charge-payment failed")
    assert (line["error_type"], line["correlation_id"]) == ("OrderParked", "cid-redrive")
