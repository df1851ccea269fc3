"""The last step's outcome write (decision 0024) meets an order parked after the step's effect and first write.

ShipOrder recorded COMPLETED, or ReleaseInventory COMPENSATED, and the answer was lost; before Step Functions
retries the step, the order is parked: a provider's late change (a refund failing days later: its webhook parks
the terminal order, announced) or the sweeper. The retry answers from its idempotency record and writes the
outcome again: the write finds NEEDS_ATTENTION. It raised ``EffectDoneOutcomeNotWritten``, the definition's
recorder task's condition failed too and ``OutcomeAlreadyRecorded`` ended the execution SUCCEEDED on a parked
order (``make explore``, ``announced``). The write refuses by name now, ``OrderParked`` (decision 0029 as
amended): the execution ends FAILED in ``AlreadyParked``, nothing is undone (the effect is done) and nothing
announces the order again; the park stays, with its exits (``ops repair``, ``ops resolve``).
"""

from __future__ import annotations

from typing import Any

import pytest

import lambda_resilience.aws as aws_clients
from order_domain.errors import OrderParked
from order_domain.status import OrderStatus

from .conftest import Inventory, LogCapture, Tables


def _parked_by_a_late_change(tables: Tables, order_id: str) -> None:
    """The settlement's park of a terminal order (order_domain.settlement): straight to NEEDS_ATTENTION."""
    aws_clients.client("dynamodb").update_item(
        TableName=tables.orders,
        Key=aws_clients.to_item({"order_id": order_id}),
        UpdateExpression="SET #s = :na",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues=aws_clients.to_item({":na": OrderStatus.NEEDS_ATTENTION.value}),
    )


@pytest.mark.parametrize(
    ("function", "reached", "extra", "outcome"),
    [
        ("ship_order", OrderStatus.PAYMENT_CHARGED, {}, OrderStatus.COMPLETED),
        (
            "release_inventory",
            OrderStatus.INVENTORY_RESERVED,
            {"record_outcome": "COMPENSATED"},
            OrderStatus.COMPENSATED,
        ),
    ],
)
def test_a_retried_outcome_write_on_a_parked_order_refuses_by_name(
    load,
    providers,
    order_factory,
    saga_input,
    seed_order,
    orders,
    tables: Tables,
    inventory: Inventory,
    lambda_context,
    logs: LogCapture,
    function: str,
    reached: OrderStatus,
    extra: dict[str, Any],
    outcome: OrderStatus,
):
    inventory.seed(**{"SKU-A": 10, "SKU-B": 10})
    order = order_factory()
    seed_order(order, reached)
    step = load(function)
    event = {**saga_input(order, "cid-last-step"), **extra}
    assert step(event, lambda_context)["outcome"] == outcome.value  # the answer Step Functions never got
    calls = len(providers.calls)
    _parked_by_a_late_change(tables, order["order_id"])

    with pytest.raises(OrderParked):
        step(event, lambda_context)  # Step Functions' retry

    assert orders.get(order["order_id"])["status"] == OrderStatus.NEEDS_ATTENTION
    assert len(providers.calls) == calls  # the retry asked no provider for anything
    assert logs.metric_total("ExpectedErrors") == 1  # counted as expected: the park was announced already
