"""ChargePayment / RefundPayment saga steps against the sandbox payment provider (in-process)."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from order_domain.model import order_total_cents
from order_domain.status import OrderStatus
from shared.exceptions import PaymentDeclined, TransientStepError

from .conftest import PAYMENT_FUNCTION, FakeLambdaClient, IdempotencyView, LedgerView, LogCapture


@pytest.fixture
def charge(load, providers):
    return load("charge_payment")


@pytest.fixture
def refund(load, providers):
    return load("refund_payment")


def _key(order: dict, operation: str) -> str:
    return f"{order['order_id']}#{operation}#attempt-1"


def test_charge_declined_token_raises_payment_declined(
    charge, order_factory, saga_input, seed_order, orders, ledger: LedgerView, lambda_context, logs: LogCapture
):
    order = order_factory(payment_token="tok_decline")
    seed_order(order, OrderStatus.INVENTORY_RESERVED)

    with pytest.raises(PaymentDeclined) as raised:
        charge(saga_input(order, "cid-decline"), lambda_context)

    assert type(raised.value).__name__ == "PaymentDeclined"
    assert ledger.op("payment", _key(order, "charge-payment"))["status"] == "declined"
    assert orders.get(order["order_id"])["status"] == OrderStatus.INVENTORY_RESERVED.value
    (failed,) = logs.find("charge-payment failed")
    assert failed["category"] == "permanent"


def test_charge_twice_captures_once_and_provider_sees_one_request(
    charge,
    order_factory,
    saga_input,
    seed_order,
    orders,
    ledger: LedgerView,
    providers: FakeLambdaClient,
    lambda_context,
    logs: LogCapture,
):
    order = order_factory()
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    event = saga_input(order, "cid-charge")

    first = charge(event, lambda_context)
    second = charge(event, lambda_context)

    assert first == second
    assert first["status"] == "captured"
    assert first["amount_cents"] == order_total_cents(order) == 3499
    (op,) = ledger.ops("payment")
    assert op["status"] == "captured"
    assert op["idempotency_key"] == _key(order, "charge-payment")
    assert op["payment_id"] == first["payment_id"]
    # our idempotency layer suppressed the second invocation before it reached the provider
    (request,) = ledger.requests("payment")
    assert request["deduplicated"] is False
    assert request["correlation_id"] == "cid-charge"
    assert orders.get(order["order_id"])["status"] == OrderStatus.PAYMENT_CHARGED.value
    assert len(logs.find("duplicate suppressed")) == 1
    # the provider's own log lines carry the saga's correlation ID
    assert {line["correlation_id"] for line in logs.find("payment request")} == {"cid-charge"}


def test_charge_rerun_after_idempotency_record_lost_is_deduplicated_by_the_provider(
    charge,
    order_factory,
    saga_input,
    seed_order,
    orders,
    ledger: LedgerView,
    idempotency_records: IdempotencyView,
    lambda_context,
    logs,
):
    order = order_factory()
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    event = saga_input(order)

    first = charge(event, lambda_context)
    idempotency_records.forget(_key(order, "charge-payment"))  # e.g. crashed after the charge, before saving
    second = charge(event, lambda_context)

    assert second == first
    (op,) = ledger.ops("payment")
    assert op["status"] == "captured"
    requests = ledger.requests("payment", _key(order, "charge-payment"))
    assert [r["deduplicated"] for r in requests] == [False, True]
    assert orders.get(order["order_id"])["status"] == OrderStatus.PAYMENT_CHARGED.value


def test_charge_provider_throttled_surfaces_as_transient_step_error_and_retry_charges_once(
    charge,
    order_factory,
    saga_input,
    seed_order,
    ledger: LedgerView,
    providers: FakeLambdaClient,
    idempotency_records: IdempotencyView,
    lambda_context,
    logs: LogCapture,
):
    order = order_factory()
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    providers.fail_next(
        ClientError({"Error": {"Code": "TooManyRequestsException", "Message": "Rate exceeded"}}, "Invoke")
    )

    with pytest.raises(TransientStepError) as raised:
        charge(saga_input(order, "cid-throttled"), lambda_context)

    assert type(raised.value).__name__ == "TransientStepError"
    assert "ProviderUnavailable" in str(raised.value)
    (failed,) = logs.find("charge-payment failed")
    assert failed["error_type"] == "ProviderUnavailable"
    assert failed["category"] == "transient"
    assert idempotency_records.get(_key(order, "charge-payment")) is None
    assert ledger.ops("payment") == []

    assert charge(saga_input(order, "cid-throttled"), lambda_context)["status"] == "captured"
    assert len(ledger.ops("payment")) == 1


def test_charge_provider_function_error_surfaces_as_transient_step_error(
    charge, order_factory, saga_input, seed_order, providers: FakeLambdaClient, lambda_context, logs, monkeypatch
):
    order = order_factory()
    seed_order(order, OrderStatus.INVENTORY_RESERVED)

    def crashing(event, context):
        raise RuntimeError("provider crashed")

    monkeypatch.setitem(providers.functions, PAYMENT_FUNCTION, crashing)
    with pytest.raises(TransientStepError, match="provider crashed"):
        charge(saga_input(order), lambda_context)


def test_refund_after_captured_charge_refunds_once_even_when_called_twice(
    charge,
    refund,
    order_factory,
    saga_input,
    seed_order,
    orders,
    ledger: LedgerView,
    idempotency_records: IdempotencyView,
    lambda_context,
    logs,
):
    order = order_factory()
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    event = saga_input(order, "cid-refund")
    charged = charge(event, lambda_context)

    first = refund(event, lambda_context)
    second = refund(event, lambda_context)

    assert first == {"status": "refunded", "amount_cents": charged["amount_cents"]}
    assert second == first
    refund_op = ledger.op("payment", _key(order, "refund-payment"))
    assert refund_op["status"] == "refunded"
    assert refund_op["amount_cents"] == charged["amount_cents"]
    assert ledger.op("payment", _key(order, "charge-payment"))["refunded"] is True
    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPENSATING.value

    idempotency_records.forget(_key(order, "refund-payment"))
    third = refund(event, lambda_context)
    assert third == first
    assert [op["status"] for op in ledger.ops("payment") if op["action"] == "refund"] == ["refunded"]
    assert [r["deduplicated"] for r in ledger.requests("payment", _key(order, "refund-payment"))] == [False, True]


def test_refund_when_never_charged_is_nothing_to_refund(
    refund, order_factory, saga_input, seed_order, orders, ledger: LedgerView, lambda_context, logs
):
    order = order_factory()
    seed_order(order, OrderStatus.INVENTORY_RESERVED)

    result = refund(saga_input(order), lambda_context)

    assert result == {"status": "nothing_to_refund", "amount_cents": 0}
    assert ledger.op("payment", _key(order, "refund-payment"))["status"] == "nothing_to_refund"
    # the charge key is cancelled first, so a late charge cannot move money
    assert ledger.op("payment", _key(order, "charge-payment"))["status"] == "cancelled"
    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPENSATING.value


def test_refund_when_never_charged_late_charge_request_is_answered_cancelled(
    refund, order_factory, saga_input, seed_order, ledger: LedgerView, providers: FakeLambdaClient, lambda_context, logs
):
    order = order_factory()
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    refund(saga_input(order, "cid-late"), lambda_context)

    # the late charge as the provider receives it (what ChargePayment sends)
    answer = providers.functions[PAYMENT_FUNCTION](
        {
            "action": "charge",
            "idempotency_key": _key(order, "charge-payment"),
            "order_id": order["order_id"],
            "amount_cents": order_total_cents(order),
            "currency": order["currency"],
            "payment_token": order["payment_token"],
            "correlation_id": "cid-late",
        },
        lambda_context,
    )

    assert answer["status"] == "cancelled"
    assert [op["status"] for op in ledger.ops("payment") if op["action"] == "charge"] == ["cancelled"]


def test_refund_when_never_charged_late_charge_step_is_declined_and_moves_no_money(
    charge, refund, order_factory, saga_input, seed_order, orders, ledger: LedgerView, lambda_context, logs
):
    order = order_factory()
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    event = saga_input(order, "cid-late-step")
    refund(event, lambda_context)

    with pytest.raises(PaymentDeclined, match="cancelled"):
        charge(event, lambda_context)

    assert [op["status"] for op in ledger.ops("payment") if op["action"] == "charge"] == ["cancelled"]
    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPENSATING.value
