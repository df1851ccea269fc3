"""ShipOrder and FinalizeOrder saga steps, and the forward chain as Step Functions passes its state."""

from __future__ import annotations

import pytest

import lambda_resilience.aws as aws_clients
import order_domain.env as env_names
from lambda_resilience.exceptions import ConfigurationError
from order_domain.errors import ShipmentNotCancellable, ShippingUnavailable, StaleAttempt
from order_domain.providers import LambdaCarrier
from order_domain.status import OrderStatus

from .conftest import (
    CARRIER_FUNCTION,
    Died,
    IdempotencyView,
    Inventory,
    LedgerView,
    LogCapture,
    NeedsAttentionQueue,
    failing_outcome_write,
)


@pytest.fixture
def ship(load, providers):
    return load("ship_order")


@pytest.fixture
def finalize(load):
    return load("finalize_order")


def test_ship_to_undeliverable_country_raises_shipping_unavailable(
    ship, order_factory, saga_input, seed_order, orders, ledger: LedgerView, lambda_context, logs: LogCapture
):
    order = order_factory(shipping_address={"name": "N", "line1": "L", "city": "C", "postcode": "P", "country": "ZZ"})
    seed_order(order, OrderStatus.PAYMENT_CHARGED)

    with pytest.raises(ShippingUnavailable) as raised:
        ship(saga_input(order, "cid-zz"), lambda_context)

    assert type(raised.value).__name__ == "ShippingUnavailable"
    (op,) = ledger.ops("carrier")
    assert op["status"] == "rejected"
    assert orders.get(order["order_id"])["status"] == OrderStatus.PAYMENT_CHARGED.value
    (failed,) = logs.find("ship-order failed")
    assert failed["category"] == "permanent"
    assert failed["correlation_id"] == "cid-zz"


def test_ship_twice_ships_once_with_one_tracking_id(
    ship, order_factory, saga_input, seed_order, orders, ledger: LedgerView, lambda_context, logs
):
    order = order_factory()
    seed_order(order, OrderStatus.PAYMENT_CHARGED)
    event = saga_input(order)

    first = ship(event, lambda_context)
    second = ship(event, lambda_context)

    assert first["status"] == "shipped"
    assert first["tracking_id"].startswith("trk_")
    assert second == first
    (op,) = ledger.ops("carrier")
    assert op["tracking_id"] == first["tracking_id"]
    assert len(ledger.requests("carrier")) == 1
    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPLETED.value  # recorded by ShipOrder (0024)


def test_finalize_moves_shipped_to_completed_and_a_repeat_is_a_no_op(
    finalize, order_factory, saga_input, seed_order, orders, idempotency_records: IdempotencyView, lambda_context, logs
):
    order = order_factory()
    seed_order(order, OrderStatus.SHIPPED)
    event = {**saga_input(order, "cid-final"), "outcome": "COMPLETED"}

    first = finalize(event, lambda_context)
    history = orders.get(order["order_id"])["history"]
    second = finalize(event, lambda_context)

    assert first == {"status": "COMPLETED", "transition": "moved"}
    assert second == first
    stored = orders.get(order["order_id"])
    assert stored["status"] == OrderStatus.COMPLETED.value
    assert stored["history"] == history
    assert idempotency_records.get(f"{order['order_id']}#finalize-order-completed#attempt-1") is not None

    idempotency_records.forget(f"{order['order_id']}#finalize-order-completed#attempt-1")
    assert finalize(event, lambda_context) == {"status": "COMPLETED", "transition": "already"}
    assert orders.get(order["order_id"])["history"] == history


def test_finalize_accepts_the_payload_the_state_machine_sends(
    finalize, order_factory, seed_order, orders, lambda_context, logs
):
    """stacks/order_constructs/order_saga.py's MarkCompleted task sends {outcome, order_id, correlation_id, order}."""
    order = order_factory()
    seed_order(order, OrderStatus.SHIPPED)
    event = {"outcome": "COMPLETED", "order_id": order["order_id"], "correlation_id": "cid-sfn", "order": order}

    assert finalize(event, lambda_context) == {"status": "COMPLETED", "transition": "moved"}
    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPLETED.value


def test_finalize_needs_attention_payload_with_error_parks_the_order(
    finalize, order_factory, seed_order, orders, lambda_context, logs
):
    """MarkNeedsAttention also passes the compensation error ($.compensation_error) as ``error``."""
    order = order_factory()
    seed_order(order, OrderStatus.COMPENSATING)
    event = {
        "outcome": "NEEDS_ATTENTION",
        "order_id": order["order_id"],
        "correlation_id": "cid-parked",
        "order": order,
        "error": {"Error": "TransientStepError", "Cause": "ProviderUnavailable: payment provider down"},
    }

    assert finalize(event, lambda_context)["status"] == "NEEDS_ATTENTION"
    assert orders.get(order["order_id"])["status"] == OrderStatus.NEEDS_ATTENTION.value


def test_forward_steps_chain_with_step_functions_state_reach_completed(
    load,
    providers,
    order_factory,
    saga_input,
    seed_order,
    orders,
    inventory: Inventory,
    ledger: LedgerView,
    lambda_context,
    logs: LogCapture,
):
    """Each forward step receives the whole saga state (result_path appends its result)."""
    inventory.seed(**{"SKU-A": 4, "SKU-B": 4})
    order = order_factory()
    seed_order(order)
    state = saga_input(order, "cid-chain")

    for function, result_key in (
        ("reserve_inventory", "reservation"),
        ("charge_payment", "payment"),
        ("ship_order", "shipment"),
    ):
        state = {**state, result_key: load(function)(state, lambda_context)}

    assert state["reservation"]["status"] == "reserved"
    assert state["payment"]["status"] == "captured"
    assert state["shipment"]["status"] == "shipped"
    stored = orders.get(order["order_id"])
    assert stored["status"] == OrderStatus.COMPLETED.value  # ShipOrder records the outcome (0024)
    assert [h["status"] for h in stored["history"]] == [
        "RECEIVED",
        "INVENTORY_RESERVED",
        "PAYMENT_CHARGED",
        "SHIPPED",
        "COMPLETED",
    ]
    assert len(ledger.ops()) == 2
    assert {line["correlation_id"] for line in logs.read()} == {"cid-chain"}


# --- NEEDS_ATTENTION: the order is parked with its error and announced on the needs-attention queue


TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def _needs_attention_event(order: dict, correlation_id: str, error: dict | None = None) -> dict:
    """What MarkNeedsAttention sends: outcome, order_id, correlation_id, traceparent, order, error
    ($.compensation_error)."""
    return {
        "outcome": "NEEDS_ATTENTION",
        "order_id": order["order_id"],
        "correlation_id": correlation_id,
        "traceparent": TRACEPARENT,
        "order": order,
        "error": error or {"Error": "TransientStepError", "Cause": "ProviderUnavailable: provider_unavailable"},
    }


def test_finalize_needs_attention_records_last_error_with_correlation_id(
    finalize, order_factory, seed_order, orders, lambda_context, logs
):
    order = order_factory()
    seed_order(order, OrderStatus.COMPENSATING)
    error = {"Error": "TransientStepError", "Cause": "ProviderUnavailable: provider_unavailable"}

    finalize(_needs_attention_event(order, "cid-last-error", error), lambda_context)

    stored = orders.get(order["order_id"])
    assert stored["status"] == OrderStatus.NEEDS_ATTENTION.value
    assert stored["last_error"] == {**error, "correlation_id": "cid-last-error"}
    assert [h["status"] for h in stored["history"]][-1] == OrderStatus.NEEDS_ATTENTION.value


def test_finalize_needs_attention_sends_one_message_with_correlation_id(
    finalize, order_factory, seed_order, needs_attention_queue: NeedsAttentionQueue, lambda_context, logs
):
    order = order_factory()
    seed_order(order, OrderStatus.COMPENSATING)
    error = {"Error": "TransientStepError", "Cause": "refund kept failing"}

    finalize(_needs_attention_event(order, "cid-notify", error), lambda_context)

    (message,) = needs_attention_queue.messages()
    assert message["body"] == {
        "order_id": order["order_id"],
        "payment_attempt": 1,
        "correlation_id": "cid-notify",
        "reason": "the saga could not finish or compensate the order",
        "error": error,
        "source": "saga-park",
    }
    assert message["attributes"]["correlation_id"] == {"DataType": "String", "StringValue": "cid-notify"}
    # The step's trace context (the saga input's, passed through with tracing off).
    assert message["attributes"]["traceparent"] == {"DataType": "String", "StringValue": TRACEPARENT}
    assert set(message["attributes"]) == {"correlation_id", "traceparent"}


def test_finalize_needs_attention_repeat_sends_no_second_message(
    finalize,
    order_factory,
    seed_order,
    orders,
    needs_attention_queue: NeedsAttentionQueue,
    idempotency_records: IdempotencyView,
    lambda_context,
    logs: LogCapture,
):
    order = order_factory()
    seed_order(order, OrderStatus.COMPENSATING)
    event = _needs_attention_event(order, "cid-repeat")

    first = finalize(event, lambda_context)
    history = orders.get(order["order_id"])["history"]
    second = finalize(event, lambda_context)  # e.g. Step Functions retried after a lost response

    assert first == {"status": "NEEDS_ATTENTION", "transition": "moved"}
    assert second == first
    assert len(needs_attention_queue.messages()) == 1
    assert orders.get(order["order_id"])["history"] == history
    assert len(logs.find("duplicate suppressed")) == 1
    assert idempotency_records.get(f"{order['order_id']}#finalize-order-needs_attention#attempt-1") is not None


def test_finalize_completed_and_compensated_send_no_message(
    finalize, order_factory, seed_order, needs_attention_queue: NeedsAttentionQueue, lambda_context, logs
):
    completed, compensated = order_factory(), order_factory()
    seed_order(completed, OrderStatus.SHIPPED)
    seed_order(compensated, OrderStatus.COMPENSATING)

    for order, outcome in ((completed, "COMPLETED"), (compensated, "COMPENSATED")):
        event = {"outcome": outcome, "order_id": order["order_id"], "correlation_id": "cid-ok", "order": order}
        assert finalize(event, lambda_context) == {"status": outcome, "transition": "moved"}

    assert needs_attention_queue.messages() == []


def test_finalize_without_queue_url_fails_at_cold_start(load, needs_attention_queue: NeedsAttentionQueue):
    """Refuse to start rather than park an order that nobody would hear about."""
    with pytest.raises(ConfigurationError, match=env_names.NEEDS_ATTENTION_QUEUE_URL):
        load("finalize_order", NEEDS_ATTENTION_QUEUE_URL="")
    assert needs_attention_queue.messages() == []


@pytest.mark.parametrize("status", [OrderStatus.RECEIVED, OrderStatus.PAYMENT_CHARGED, OrderStatus.SHIPPED])
def test_finalize_needs_attention_parks_an_order_no_compensation_moved(
    finalize, order_factory, seed_order, orders, lambda_context, logs, status
):
    """The park state runs when every compensation failed, maybe before any of them moved the
    order to COMPENSATING: parking must not fail on the order's status, or the execution fails
    and leaves the order where it was, unannounced."""
    order = order_factory()
    seed_order(order, status)

    result = finalize(_needs_attention_event(order, "cid-park-early"), lambda_context)

    assert result["status"] == "NEEDS_ATTENTION"
    assert orders.get(order["order_id"])["status"] == OrderStatus.NEEDS_ATTENTION.value


# --- CancelShipment: ShipOrder's compensation, by what really happened at the carrier ----------


@pytest.fixture
def cancel(load, providers):
    return load("cancel_shipment")


def ship_lost(ship, event, ledger: LedgerView, lambda_context):
    """ShipOrder books the parcel and dies before its outcome write: the saga does not know the
    outcome (Sandbox.Timedout after the retries) and runs CancelShipment. Returns the parcel."""
    with failing_outcome_write("COMPLETED", lambda: Died("killed")), pytest.raises(Died):
        ship(event, lambda_context)
    (booked,) = ledger.ops("carrier")
    return booked


def test_cancel_shipment_recalls_a_shipped_parcel(
    ship, cancel, order_factory, saga_input, seed_order, orders, ledger: LedgerView, lambda_context
):
    order = order_factory()
    seed_order(order, OrderStatus.PAYMENT_CHARGED)
    shipped = ship_lost(ship, saga_input(order), ledger, lambda_context)

    result = cancel(saga_input(order, "cid-cancel"), lambda_context)

    assert result == {"status": "cancelled", "shipment": "shipped"}
    (op,) = ledger.ops("carrier")
    assert (op["status"], op["tracking_id"]) == ("cancelled", shipped["tracking_id"])
    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPENSATING.value
    assert cancel(saga_input(order, "cid-cancel"), lambda_context) == result  # a repeat: same answer


def test_cancel_shipment_with_nothing_shipped_cancels_the_key_so_a_late_ship_is_refused(
    ship, cancel, order_factory, saga_input, seed_order, ledger: LedgerView, lambda_context
):
    order = order_factory()
    seed_order(order, OrderStatus.PAYMENT_CHARGED)

    assert cancel(saga_input(order), lambda_context) == {"status": "cancelled", "shipment": "not_found"}
    with pytest.raises(StaleAttempt):  # the ship step arrives late: refused by its stage (COMPENSATING)
        ship(saga_input(order), lambda_context)
    late = LambdaCarrier(CARRIER_FUNCTION, client=aws_clients.client("lambda"))  # a request already on its way
    assert (
        late.ship(f"{order['order_id']}#ship-order#attempt-1", order_id=order["order_id"], address={}, items=[]).status
        == "cancelled"
    )
    (op,) = ledger.ops("carrier")
    assert op["status"] == "cancelled"


def test_cancel_shipment_of_a_rejected_shipment_has_nothing_to_undo(
    ship, cancel, order_factory, saga_input, seed_order, ledger: LedgerView, lambda_context
):
    order = order_factory(shipping_address={"name": "N", "line1": "L", "city": "C", "postcode": "P", "country": "ZZ"})
    seed_order(order, OrderStatus.PAYMENT_CHARGED)
    with pytest.raises(ShippingUnavailable):
        ship(saga_input(order), lambda_context)

    assert cancel(saga_input(order), lambda_context) == {"status": "nothing_to_undo", "shipment": "rejected"}
    assert [r["action"] for r in ledger.requests("carrier")] == ["ship", "get"]  # no cancel request


def test_cancel_shipment_handed_over_raises_shipment_not_cancellable(
    ship, cancel, order_factory, saga_input, seed_order, ledger: LedgerView, lambda_context, logs: LogCapture
):
    order = order_factory(shipping_address={"name": "N", "line1": "L", "city": "C", "postcode": "P", "country": "XH"})
    seed_order(order, OrderStatus.PAYMENT_CHARGED)
    ship_lost(ship, saga_input(order), ledger, lambda_context)

    with pytest.raises(ShipmentNotCancellable) as raised:
        cancel(saga_input(order, "cid-xh"), lambda_context)

    assert type(raised.value).__name__ == "ShipmentNotCancellable"  # the name the saga catches
    (op,) = ledger.ops("carrier")
    assert op["status"] == "shipped"  # the parcel still ships
    (failed,) = logs.find("cancel-shipment failed")
    assert failed["category"] == "permanent"
    assert failed["correlation_id"] == "cid-xh"
