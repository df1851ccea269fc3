"""Issue 40, build point 2: intent before effect (decision 0028, amending 0024).

Before every external effect (reserve, charge, ship, refund, cancel) the order durably records the
intent for that attempt, with its time. "The provider has no record" plus an intent older than the
provider's key window is an unknown outcome (looked up, then parked: ``ProviderForgot``), never
"nothing happened". The sweeper asks the carrier about a PAYMENT_CHARGED order whose ship intent is
recorded, as it does for SHIPPED, before it parks it as stuck.
"""

from __future__ import annotations

import time
from typing import Any

import boto3
import pytest
from botocore.client import BaseClient
from botocore.exceptions import ClientError

import lambda_resilience.aws as aws_clients
from lambda_resilience.exceptions import EffectDoneOutcomeNotWritten, TransientStepError
from order_domain import clock
from order_domain.errors import ProviderForgot
from order_domain.status import OrderStatus

from .conftest import (
    REGION,
    Died,
    FakeLambdaClient,
    IdempotencyView,
    Inventory,
    LedgerView,
    NeedsAttentionQueue,
    Tables,
    failing_outcome_write,
    present,
    throttled,
)

THREE_DAYS = 3 * 24 * 3600
STUCK_AFTER = 1800
SCHEDULED_EVENT = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}


def _key(order: dict[str, Any], operation: str) -> str:
    return f"{order['order_id']}#{operation}#attempt-1"


def _provider_forgets(tables: Tables, provider: str, key: str) -> None:
    """The provider's key window passed (Stripe prunes keys once 24 hours old): it has no record by key."""
    boto3.client("dynamodb", region_name=REGION).delete_item(
        TableName=tables.ledger, Key={"pk": {"S": f"op#{provider}#{key}"}, "sk": {"S": "op"}}
    )


def _days_later(monkeypatch: pytest.MonkeyPatch, seconds: float = THREE_DAYS) -> None:
    later = clock.now() + seconds
    monkeypatch.setattr(clock, "now", lambda: later)


def _intents_at_effect(
    providers: FakeLambdaClient, orders: Any, order_id: str, action: str | None, monkeypatch: pytest.MonkeyPatch
) -> list[dict[str, Any]]:
    """What the order item's ``intents`` held when the effect was sent: the provider request with
    ``action``, or (``None``) the inventory table's TransactWriteItems."""
    seen: list[dict[str, Any]] = []
    invoke = providers.invoke

    def watched(**kwargs: Any) -> Any:
        if action is not None and f'"action": "{action}"' in kwargs["Payload"].decode():
            seen.append(dict(orders.get(order_id).get("intents") or {}))
        return invoke(**kwargs)

    monkeypatch.setattr(providers, "invoke", watched)
    if action is None:
        original = BaseClient._make_api_call

        def call(self: Any, operation: str, params: dict[str, Any]) -> Any:
            if operation == "TransactWriteItems" and not seen:
                seen.append(dict(orders.get(order_id).get("intents") or {}))
            return original(self, operation, params)

        monkeypatch.setattr(BaseClient, "_make_api_call", call)
    return seen


@pytest.mark.parametrize(
    ("function", "start", "operation", "action"),
    [
        ("reserve_inventory", OrderStatus.RECEIVED, "reserve-inventory", None),
        ("charge_payment", OrderStatus.INVENTORY_RESERVED, "charge-payment", "charge"),
        ("ship_order", OrderStatus.PAYMENT_CHARGED, "ship-order", "ship"),
        ("refund_payment", OrderStatus.INVENTORY_RESERVED, "refund-payment", "refund"),
        ("cancel_shipment", OrderStatus.PAYMENT_CHARGED, "cancel-shipment", "cancel"),
    ],
)
def test_step_records_its_intent_on_the_order_before_its_effect(
    load,
    providers: FakeLambdaClient,
    order_factory,
    saga_input,
    seed_order,
    orders,
    inventory: Inventory,
    lambda_context,
    monkeypatch,
    function: str,
    start: OrderStatus,
    operation: str,
    action: str | None,
):
    inventory.seed(**{"SKU-A": 10, "SKU-B": 10})
    order = order_factory()
    seed_order(order, start)
    step = load(function)
    seen = _intents_at_effect(providers, orders, order["order_id"], action, monkeypatch)

    step(saga_input(order, "cid-intent"), lambda_context)

    assert seen, "the effect was not sent"
    intent = seen[0].get(f"{operation}#attempt-1")
    assert intent is not None, f"no {operation} intent on the order when its effect was sent: {seen[0]}"
    assert intent["at"] <= clock.iso() and intent["correlation_id"] == "cid-intent"


def _shipped_then_parked(load, order, state, orders, lambda_context) -> None:
    """ShipOrder books the parcel, its own COMPLETED write fails (and MarkCompleted too): the saga parks
    the order from PAYMENT_CHARGED."""
    with failing_outcome_write("COMPLETED", throttled), pytest.raises(EffectDoneOutcomeNotWritten):
        load("ship_order")(state, lambda_context)
    assert orders.transition(order["order_id"], OrderStatus.NEEDS_ATTENTION, attempt=1) == "moved"


def test_repair_after_the_carriers_key_window_parks_instead_of_refunding_a_delivered_parcel(
    load,
    providers,
    order_factory,
    saga_input,
    seed_order,
    orders,
    tables: Tables,
    ledger: LedgerView,
    lambda_context,
    monkeypatch,
):
    """Issue 40's "effect without a record": ``ops repair --action compensate`` three days later. The
    carrier forgot the key; the order's history has no SHIPPED, but its ship intent is recorded: the
    cancel must not "cancel" nothing (the definition would then refund a parcel that was delivered)."""
    order = order_factory()
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    state = saga_input(order)
    load("charge_payment")(state, lambda_context)
    _shipped_then_parked(load, order, state, orders, lambda_context)
    _provider_forgets(tables, "carrier", _key(order, "ship-order"))
    _days_later(monkeypatch)

    with pytest.raises(ProviderForgot):
        load("cancel_shipment")({**state, "compensate": True}, lambda_context)

    assert [r["action"] for r in ledger.requests("carrier")] == ["ship", "get"]  # looked up, nothing cancelled
    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPENSATING  # the park follows, never COMPENSATED


def test_cancel_within_the_carriers_key_window_trusts_no_record_and_cancels_the_key(
    load, providers: FakeLambdaClient, order_factory, saga_input, seed_order, ledger: LedgerView, lambda_context
):
    """A ship intent is recorded but the request never reached the carrier (its call failed): within the
    key window the carrier's "no record" is the truth, so the cancel cancels the key (a late ship is refused)."""
    order = order_factory()
    seed_order(order, OrderStatus.PAYMENT_CHARGED)
    state = saga_input(order)
    providers.fail_next(ClientError({"Error": {"Code": "ServiceException", "Message": "x"}}, "Invoke"))
    with pytest.raises(TransientStepError):
        load("ship_order")(state, lambda_context)

    answer = load("cancel_shipment")(state, lambda_context)

    assert answer["status"] == "cancelled"
    assert present(ledger.op("carrier", _key(order, "ship-order")))["status"] == "cancelled"


def _charged_then_died(load, order, state, idempotency_records: IdempotencyView, lambda_context) -> None:
    """ChargePayment's provider captured, then the function died before its PAYMENT_CHARGED write (and
    before its idempotency record was completed: the record is left IN_PROGRESS, then expires)."""
    with failing_outcome_write("PAYMENT_CHARGED", lambda: Died("killed")), pytest.raises(Died):
        load("charge_payment")(state, lambda_context)
    idempotency_records.forget(_key(order, "charge-payment"))


def test_refund_after_the_providers_key_window_with_a_charge_intent_parks_rather_than_keeps_the_money(
    load,
    providers,
    order_factory,
    saga_input,
    seed_order,
    orders,
    tables: Tables,
    ledger: LedgerView,
    idempotency_records: IdempotencyView,
    lambda_context,
    monkeypatch,
):
    """Our history never recorded PAYMENT_CHARGED (the write died), the provider forgot the key: only the
    intent says a charge may have moved money. Cancelling the key now would end COMPENSATED with it kept."""
    order = order_factory()
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    state = saga_input(order)
    _charged_then_died(load, order, state, idempotency_records, lambda_context)
    assert orders.transition(order["order_id"], OrderStatus.NEEDS_ATTENTION, attempt=1) == "moved"
    _provider_forgets(tables, "payment", _key(order, "charge-payment"))
    _days_later(monkeypatch)

    with pytest.raises(ProviderForgot):
        load("refund_payment")({**state, "compensate": True}, lambda_context)

    assert [r["action"] for r in ledger.requests("payment")] == ["charge", "get"]


def test_charge_rerun_after_the_providers_key_window_with_an_intent_parks_instead_of_charging_again(
    load,
    providers,
    order_factory,
    saga_input,
    seed_order,
    tables: Tables,
    ledger: LedgerView,
    idempotency_records: IdempotencyView,
    lambda_context,
    monkeypatch,
):
    """A redrive days later: our idempotency record is gone and the provider forgot the key; the same key
    would be taken for a new charge. The intent says one may have captured: look up, then park."""
    order = order_factory()
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    state = saga_input(order)
    _charged_then_died(load, order, state, idempotency_records, lambda_context)
    _provider_forgets(tables, "payment", _key(order, "charge-payment"))
    _days_later(monkeypatch)

    with pytest.raises(ProviderForgot):
        load("charge_payment")(state, lambda_context)

    assert [r["action"] for r in ledger.requests("payment")] == ["charge", "get"]


def test_ship_rerun_after_the_carriers_key_window_with_an_intent_parks_instead_of_shipping_again(
    load,
    providers,
    order_factory,
    saga_input,
    seed_order,
    tables: Tables,
    ledger: LedgerView,
    idempotency_records: IdempotencyView,
    lambda_context,
    monkeypatch,
):
    order = order_factory()
    seed_order(order, OrderStatus.PAYMENT_CHARGED)
    state = saga_input(order)
    with failing_outcome_write("COMPLETED", lambda: Died("killed")), pytest.raises(Died):
        load("ship_order")(state, lambda_context)
    idempotency_records.forget(_key(order, "ship-order"))
    _provider_forgets(tables, "carrier", _key(order, "ship-order"))
    _days_later(monkeypatch)

    with pytest.raises(ProviderForgot):
        load("ship_order")(state, lambda_context)

    assert [r["action"] for r in ledger.requests("carrier")] == ["ship", "get"]


# -- the sweeper ------------------------------------------------------------------------------------


def _age(tables: Tables, order_id: str, seconds: float) -> None:
    updated = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - seconds))
    aws_clients.client("dynamodb").update_item(
        TableName=tables.orders,
        Key=aws_clients.to_item({"order_id": order_id}),
        UpdateExpression="SET updated_at = :u",
        ExpressionAttributeValues=aws_clients.to_item({":u": updated}),
    )


def _shipped_unrecorded(load, order_factory, seed_order, saga_input, lambda_context) -> dict[str, Any]:
    """Charged and shipped, but ShipOrder's write, MarkCompleted and the park all failed (the execution
    then timed out): the order sits in PAYMENT_CHARGED with a parcel out."""
    order = order_factory()
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    state = saga_input(order)
    load("charge_payment")(state, lambda_context)
    with failing_outcome_write("COMPLETED", throttled), pytest.raises(EffectDoneOutcomeNotWritten):
        load("ship_order")(state, lambda_context)
    return order


def test_sweeper_asks_the_carrier_about_a_payment_charged_order_with_a_ship_intent_and_finishes_it(
    load, providers, order_factory, seed_order, saga_input, orders, tables: Tables, lambda_context
):
    order = _shipped_unrecorded(load, order_factory, seed_order, saga_input, lambda_context)
    _age(tables, order["order_id"], STUCK_AFTER + 600)

    result = load("sweeper", STUCK_AFTER_SECONDS=str(STUCK_AFTER))(SCHEDULED_EVENT, lambda_context)

    assert result["finished"] == [order["order_id"]] and result["parked"] == []
    stored = orders.get(order["order_id"])
    assert stored["status"] == OrderStatus.COMPLETED
    assert [h["status"] for h in stored["history"][-2:]] == ["SHIPPED", "COMPLETED"]


def test_sweeper_parks_a_ship_intent_the_carrier_forgot_as_an_unknown_outcome(
    load,
    providers,
    order_factory,
    seed_order,
    saga_input,
    orders,
    tables: Tables,
    needs_attention_queue: NeedsAttentionQueue,
    lambda_context,
    monkeypatch,
):
    """The carrier no longer knows the key and the intent is older than its window: whether a parcel
    left is unknown, and the announcement says so (an operator must not compensate it blindly)."""
    order = _shipped_unrecorded(load, order_factory, seed_order, saga_input, lambda_context)
    _provider_forgets(tables, "carrier", _key(order, "ship-order"))
    _days_later(monkeypatch)
    _age(tables, order["order_id"], STUCK_AFTER + 600)

    result = load("sweeper", STUCK_AFTER_SECONDS=str(STUCK_AFTER))(SCHEDULED_EVENT, lambda_context)

    assert result["parked"] == [order["order_id"]]
    (message,) = needs_attention_queue.messages()
    assert "ship-order" in message["body"]["reason"] and "unknown" in message["body"]["reason"]


def test_intent_write_gives_an_order_recorded_before_intents_its_map(
    load, providers, order_factory, saga_input, seed_order, orders, tables: Tables, ledger: LedgerView, lambda_context
):
    """An order recorded before this change has no ``intents`` map (a nested SET would be refused): the
    first intent write adds the map once, then records the intent, then the charge is sent."""
    order = order_factory()
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    aws_clients.client("dynamodb").update_item(
        TableName=tables.orders,
        Key=aws_clients.to_item({"order_id": order["order_id"]}),
        UpdateExpression="REMOVE intents",
    )

    assert load("charge_payment")(saga_input(order), lambda_context)["status"] == "captured"

    assert set(orders.get(order["order_id"])["intents"]) == {"charge-payment#attempt-1"}
    assert [op["status"] for op in ledger.ops("payment")] == ["captured"]
