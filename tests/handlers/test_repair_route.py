"""The saga's repair entry (Route: ``"compensate": true`` -> RefundPayment -> ReleaseInventory -> COMPENSATED).

``ops repair --action compensate`` starts a new execution with the intake input plus
``"compensate": true``. Its compensation steps run under the same business keys as the first
execution's, so a step that already ran there must answer as a duplicate: its idempotency payload
must not depend on which path (and which caught ``$.error``) led to it.
"""

from __future__ import annotations

import pytest

from order_domain.errors import PaymentIncomplete
from order_domain.status import OrderStatus

from .conftest import Inventory, LedgerView, LogCapture

SHIP_ERROR = {"Error": "ShippingUnavailable", "Cause": "carrier rejected the shipment"}
REFUND_ERROR = {"Error": "TransientStepError", "Cause": "ProviderUnavailable: provider_unavailable"}


@pytest.fixture
def release(load):
    return load("release_inventory")


def _repair_input(state: dict) -> dict:
    """What ops/repair.py starts the repair execution with."""
    return {
        "order_id": state["order_id"],
        "payment_attempt": state["payment_attempt"],
        "correlation_id": state["correlation_id"],
        "compensate": True,
    }


def test_repair_route_refund_already_done_in_first_run_is_a_duplicate(
    load, refund, order_factory, saga_input, seed_order, ledger: LedgerView, lambda_context, logs: LogCapture
):
    """First run: ShipOrder failed -> RefundPayment (state has $.error) refunded; the release then failed."""
    order = order_factory()
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    state = saga_input(order, "cid-repair-refund")
    state = {**state, "payment": load("charge_payment")(state, lambda_context)}
    first = refund({**state, "error": SHIP_ERROR}, lambda_context)

    again = refund(_repair_input(state), lambda_context)

    assert again == first == {"status": "refunded", "amount_cents": 3499}
    assert len(logs.find("duplicate suppressed")) == 1
    assert [op["status"] for op in ledger.ops("payment") if op["action"] == "refund"] == ["refunded"]


def test_repair_route_release_already_done_by_release_then_park_is_a_duplicate(
    load, release, order_factory, saga_input, seed_order, inventory: Inventory, lambda_context, logs: LogCapture
):
    """First run: ShipOrder failed, RefundPayment kept failing -> ReleaseInventoryThenPark released the stock."""
    inventory.seed(**{"SKU-A": 5, "SKU-B": 5})
    order = order_factory()
    seed_order(order)
    state = saga_input(order, "cid-repair-release")
    state = {**state, "reservation": load("reserve_inventory")(state, lambda_context)}
    parked_state = {**state, "error": SHIP_ERROR, "compensation_error": REFUND_ERROR}
    first = release(parked_state, lambda_context)

    again = release({**_repair_input(state), "refund": {"status": "refunded"}}, lambda_context)

    assert again == first == {"status": "released", "items": {"SKU-A": 2, "SKU-B": 1}}
    assert (inventory.available("SKU-A"), inventory.available("SKU-B")) == (5, 5)


def test_repair_route_steps_accept_the_repair_input(
    refund, release, order_factory, saga_input, seed_order, inventory: Inventory, orders, lambda_context, logs
):
    """An order stuck in COMPENSATING (its execution died): the repair's compensations run normally."""
    inventory.seed(**{"SKU-A": 5, "SKU-B": 5})
    order = order_factory()
    seed_order(order, OrderStatus.COMPENSATING)
    repair = _repair_input(saga_input(order, "cid-repair"))

    assert refund(repair, lambda_context) == {"status": "nothing_to_refund", "amount_cents": 0}
    assert release({**repair, "refund": {}}, lambda_context) == {"status": "nothing_reserved"}
    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPENSATING.value


def test_repair_route_compensated_moves_a_parked_order_to_compensated(
    load, refund, release, order_factory, saga_input, seed_order, orders, ledger: LedgerView, lambda_context, logs
):
    """Parked after an authorised-only charge; the operator's repair voids the hold and compensates."""
    order = order_factory(payment_token="tok_auth_only")
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    state = saga_input(order, "cid-parked")
    with pytest.raises(PaymentIncomplete):
        load("charge_payment")(state, lambda_context)
    for status in (OrderStatus.COMPENSATING, OrderStatus.NEEDS_ATTENTION):  # the first run parked it
        assert orders.transition(order["order_id"], status) == "moved"
    repair = _repair_input(state)

    assert refund(repair, lambda_context) == {"status": "voided", "amount_cents": 0}
    assert release({**repair, "refund": {}}, lambda_context) == {"status": "nothing_reserved"}
    result = load("finalize_order")({**repair, "outcome": "COMPENSATED"}, lambda_context)

    assert result == {"status": "COMPENSATED", "transition": "moved"}
    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPENSATED.value


@pytest.mark.parametrize("flag", [True])
def test_repair_route_reserve_refuses_a_compensate_request_before_any_effect(
    load, order_factory, saga_input, seed_order, inventory: Inventory, lambda_context, flag
):
    """The saga has no Route state: ReserveInventory raises CompensationRequested (caught -> RefundPayment),
    even when its reservation is already recorded, and reserves nothing."""
    from order_domain.saga_start import CompensationRequested

    inventory.seed(**{"SKU-A": 5, "SKU-B": 5})
    reserve = load("reserve_inventory")
    order = order_factory()
    seed_order(order)
    state = saga_input(order, "cid-repair-reserve")
    with pytest.raises(CompensationRequested):
        reserve({**state, "compensate": flag}, lambda_context)
    assert (inventory.available("SKU-A"), inventory.available("SKU-B")) == (5, 5)
    reserve(state, lambda_context)  # a normal input still reserves
    with pytest.raises(CompensationRequested):
        reserve({**state, "compensate": flag}, lambda_context)  # not answered from the idempotency record


@pytest.mark.parametrize("flag", [False, "true", None])
def test_repair_route_reserve_runs_normally_without_a_boolean_true(
    load, order_factory, saga_input, seed_order, inventory: Inventory, lambda_context, flag
):
    inventory.seed(**{"SKU-A": 5, "SKU-B": 5})
    reserve = load("reserve_inventory")
    order = order_factory()
    seed_order(order)
    result = reserve({**saga_input(order, "cid-repair-flag"), "compensate": flag}, lambda_context)
    assert result["status"] == "reserved"


def test_repair_route_reserve_compensation_request_is_counted_as_expected_not_paged(
    load, order_factory, saga_input, seed_order, inventory: Inventory, lambda_context, logs: LogCapture
):
    """Issue 41 "a repair that pages": the function's errors alarm pages on ``Errors - ExpectedErrors``;
    the operator's request is a routing outcome, so it goes through the middleware's accounting
    (``ExpectedErrors`` 1, a failure line with its category, under the correlation ID)."""
    from order_domain.saga_start import CompensationRequested

    inventory.seed(**{"SKU-A": 5, "SKU-B": 5})
    order = order_factory()
    seed_order(order)
    with pytest.raises(CompensationRequested):
        load("reserve_inventory")({**saga_input(order, "cid-repair-expected"), "compensate": True}, lambda_context)

    assert logs.metric_total("ExpectedErrors") == 1
    (line,) = logs.find("reserve-inventory failed")
    assert (line["error_type"], line["correlation_id"]) == ("CompensationRequested", "cid-repair-expected")
    logs.assert_correlated()
