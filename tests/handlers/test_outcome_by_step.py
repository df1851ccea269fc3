"""The last step's function records the outcome (decision 0024): ShipOrder writes COMPLETED once the
parcel is booked, the last compensation (ReleaseInventory, told by ``record_outcome``) writes
COMPENSATED. The dangerous case first: the write fails after the effect happened (throttled, a crash,
a concurrent actor moved the order). The function then raises ``EffectDoneOutcomeNotWritten`` (the
definition routes it to the outcome-write Task, never to a compensation), and a rerun of the step
reuses the provider's key: the same parcel, never a second one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from unittest import mock

import pytest
from botocore.client import BaseClient

from lambda_resilience.exceptions import EffectDoneOutcomeNotWritten
from lambda_resilience.tracing import EXECUTION_INPUT
from order_domain.errors import OrderParked
from order_domain.status import OrderStatus

from .conftest import Died, Inventory, LedgerView, LogCapture, failing_outcome_write, throttled


@pytest.fixture
def ship(load, providers):
    return load("ship_order")


@pytest.fixture
def release(load):
    return load("release_inventory")


def test_ship_order_records_completed_itself_in_one_write(
    ship, order_factory, saga_input, seed_order, orders, ledger: LedgerView, lambda_context, logs
):
    order = order_factory()
    seed_order(order, OrderStatus.PAYMENT_CHARGED)

    result = ship(saga_input(order, "cid-done"), lambda_context)

    assert result["status"] == "shipped" and result["outcome"] == "COMPLETED"
    stored = orders.get(order["order_id"])
    assert stored["status"] == OrderStatus.COMPLETED.value
    assert [(h["status"], h.get("correlation_id")) for h in stored["history"][-2:]] == [
        ("SHIPPED", None),
        ("COMPLETED", "cid-done"),
    ]
    assert len(ledger.ops("carrier")) == 1


def test_ship_order_outcome_write_throttled_raises_effect_done_and_a_rerun_ships_nothing_new(
    ship, order_factory, saga_input, seed_order, orders, ledger: LedgerView, lambda_context, logs: LogCapture
):
    order = order_factory()
    seed_order(order, OrderStatus.PAYMENT_CHARGED)
    event = saga_input(order, "cid-throttled")

    with failing_outcome_write("COMPLETED", throttled), pytest.raises(EffectDoneOutcomeNotWritten) as raised:
        ship(event, lambda_context)

    assert type(raised.value).__name__ == "EffectDoneOutcomeNotWritten"  # the name the definition catches
    assert "ThrottlingException" in str(raised.value)
    assert orders.get(order["order_id"])["status"] == OrderStatus.PAYMENT_CHARGED.value
    (op,) = ledger.ops("carrier")
    assert op["status"] == "shipped"
    (failed,) = logs.find("ship-order failed")
    assert failed["error_type"] == "EffectDoneOutcomeNotWritten"
    assert logs.metric_total("ExpectedErrors") == 1  # routed to the outcome-write Task by design: no page

    again = ship(event, lambda_context)  # a rerun of the step (a duplicate invocation)

    assert again["tracking_id"] == op["tracking_id"]
    assert len(ledger.ops("carrier")) == 1
    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPLETED.value


def test_ship_order_dies_between_the_parcel_and_the_write_and_its_retry_books_the_same_parcel(
    ship, order_factory, saga_input, seed_order, orders, ledger: LedgerView, lambda_context, logs
):
    order = order_factory()
    seed_order(order, OrderStatus.PAYMENT_CHARGED)
    event = saga_input(order)

    with failing_outcome_write("COMPLETED", lambda: Died("killed")), pytest.raises(Died):
        ship(event, lambda_context)
    assert orders.get(order["order_id"])["status"] == OrderStatus.PAYMENT_CHARGED.value

    retried = ship(event, lambda_context)  # Step Functions retries Sandbox.Timedout

    (op,) = ledger.ops("carrier")
    assert retried["tracking_id"] == op["tracking_id"]
    assert len(ledger.requests("carrier")) <= 2  # a lookup or a keyed repeat, never a second parcel
    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPLETED.value


def test_ship_order_outcome_refused_by_a_parked_order_raises_order_parked_and_leaves_it_parked(
    ship, order_factory, saga_input, seed_order, orders, ledger: LedgerView, lambda_context, logs
):
    """The sweeper parked the order between the parcel and the write: the function says so by name,
    ``OrderParked`` (the execution ends FAILED in ``AlreadyParked``, decision 0029 as amended; it was
    ``EffectDoneOutcomeNotWritten``, and MarkCompleted's failed condition ended it SUCCEEDED on a parked
    order); the order keeps the status the sweeper gave it, the parcel is kept."""
    order = order_factory()
    seed_order(order, OrderStatus.PAYMENT_CHARGED)
    original = BaseClient._make_api_call
    parked: list[bool] = []

    def call(self: Any, operation: str, params: dict[str, Any]) -> Any:
        to = (params.get("ExpressionAttributeValues") or {}).get(":to", {}).get("S")
        if operation == "UpdateItem" and to == "COMPLETED" and not parked:
            parked.append(True)
            orders.transition(order["order_id"], OrderStatus.NEEDS_ATTENTION)
        return original(self, operation, params)

    with mock.patch.object(BaseClient, "_make_api_call", call), pytest.raises(OrderParked):
        ship(saga_input(order), lambda_context)

    assert orders.get(order["order_id"])["status"] == OrderStatus.NEEDS_ATTENTION.value
    assert len(ledger.ops("carrier")) == 1


def final_release_input(order: dict[str, Any], saga_input: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    """What the definition sends the last compensation (stacks/order_constructs/order_saga.py)."""
    start = saga_input(order, "cid-final")
    return {
        "order_id": start["order_id"],
        "payment_attempt": start["payment_attempt"],
        "correlation_id": start["correlation_id"],
        EXECUTION_INPUT: start,
        "record_outcome": "COMPENSATED",
    }


def test_release_as_the_last_compensation_records_compensated(
    release, order_factory, saga_input, seed_order, orders, inventory: Inventory, lambda_context, logs
):
    inventory.seed(**{"SKU-A": 4, "SKU-B": 4})
    order = order_factory()
    seed_order(order, OrderStatus.RECEIVED)

    result = release(final_release_input(order, saga_input), lambda_context)

    assert result["outcome"] == "COMPENSATED"
    stored = orders.get(order["order_id"])
    assert stored["status"] == OrderStatus.COMPENSATED.value
    assert stored["history"][-1]["correlation_id"] == "cid-final"


def test_release_before_the_park_does_not_record_an_outcome(
    release, order_factory, saga_input, seed_order, orders, lambda_context, logs
):
    """ReleaseInventoryThenPark gets the whole state, without ``record_outcome``: the park follows."""
    order = order_factory()
    seed_order(order, OrderStatus.RECEIVED)

    result = release(saga_input(order), lambda_context)

    assert "outcome" not in result
    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPENSATING.value


def test_release_outcome_write_throttled_raises_effect_done(
    release, order_factory, saga_input, seed_order, orders, lambda_context, logs
):
    order = order_factory()
    seed_order(order, OrderStatus.RECEIVED)
    event = final_release_input(order, saga_input)

    with failing_outcome_write("COMPENSATED", throttled), pytest.raises(EffectDoneOutcomeNotWritten):
        release(event, lambda_context)
    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPENSATING.value

    # A rerun (its release cached) still writes the outcome: the write is outside the idempotency record.
    assert release(event, lambda_context)["outcome"] == "COMPENSATED"
    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPENSATED.value


def test_release_of_an_operator_repair_reads_compensate_from_the_execution_input(
    release, order_factory, saga_input, seed_order, orders, lambda_context, logs
):
    """A parked order moves only on an operator's ``"compensate": true``, which the named payload
    carries in the execution input."""
    order = order_factory()
    seed_order(order, OrderStatus.NEEDS_ATTENTION)
    event = final_release_input(order, saga_input)
    event[EXECUTION_INPUT] = {**event[EXECUTION_INPUT], "compensate": True}

    assert release(event, lambda_context)["outcome"] == "COMPENSATED"
    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPENSATED.value
