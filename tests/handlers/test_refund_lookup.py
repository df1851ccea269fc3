"""RefundPayment acts on what really moved at the provider: it looks the charge up by its key first,
whatever the order's last recorded status, and an answer lost in either direction moves money once.

"Answer lost": the provider received the request and acted, and the caller saw a read timeout
(what botocore raises when the Lambda Invoke response never arrives)."""

from __future__ import annotations

import pytest
from botocore.exceptions import ReadTimeoutError

from lambda_resilience.exceptions import TransientStepError
from order_domain.errors import RefundIncomplete
from order_domain.model import order_total_cents
from order_domain.ports import VOIDED, parse_charge
from order_domain.status import OrderStatus

from .conftest import PAYMENT_FUNCTION, FakeLambdaClient, IdempotencyView, LedgerView, LogCapture, present


def _key(order: dict, operation: str) -> str:
    return f"{order['order_id']}#{operation}#attempt-1"


def _answer_lost(providers: FakeLambdaClient, monkeypatch: pytest.MonkeyPatch, times: int = 1) -> None:
    """The next ``times`` invokes reach the provider (which acts), then their answers are lost; later
    invokes are answered."""
    deliver = providers.invoke
    left = [times]

    def acted_then_timed_out(**kwargs):
        answer = deliver(**kwargs)
        if left[0] > 0:
            left[0] -= 1
            raise ReadTimeoutError(endpoint_url="https://lambda.us-east-1.amazonaws.com")
        return answer

    monkeypatch.setattr(providers, "invoke", acted_then_timed_out)


def _provider_charge(providers: FakeLambdaClient, order: dict, lambda_context) -> dict:
    """The provider captures this attempt's charge; the order's status never hears of it."""
    return providers.functions[PAYMENT_FUNCTION](
        {
            "action": "charge",
            "idempotency_key": _key(order, "charge-payment"),
            "order_id": order["order_id"],
            "amount_cents": order_total_cents(order),
            "currency": order["currency"],
            "payment_token": order["payment_token"],
            "correlation_id": "cid-provider",
        },
        lambda_context,
    )


def _captures(ledger: LedgerView) -> list[dict]:
    return [op for op in ledger.ops("payment") if op["action"] == "charge" and op["status"] == "captured"]


def _refunds(ledger: LedgerView) -> list[tuple[str, int]]:
    return [(op["status"], op["amount_cents"]) for op in ledger.ops("payment") if op["action"] == "refund"]


def test_parse_charge_reads_the_refunded_flag_and_a_voided_charge():
    assert parse_charge({"status": "captured", "captured_cents": 5, "refunded": True}).refunded is True
    assert parse_charge({"status": "captured", "captured_cents": 5}).refunded is False
    voided = parse_charge({"status": "voided", "refunded": True})
    assert (voided.status, voided.refunded) == (VOIDED, True)
    with pytest.raises(ValueError, match="refunded"):
        parse_charge({"status": "captured", "refunded": "yes"})


def test_refund_looks_the_charge_up_by_its_key_before_refunding(
    charge, refund, order_factory, saga_input, seed_order, providers: FakeLambdaClient, lambda_context, logs
):
    order = order_factory()
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    event = saga_input(order)
    charge(event, lambda_context)
    providers.calls.clear()

    refund(event, lambda_context)

    requests = providers.requests_to(PAYMENT_FUNCTION)
    assert [(r["action"], r["idempotency_key"]) for r in requests] == [
        ("get", _key(order, "charge-payment")),
        ("refund", _key(order, "refund-payment")),
    ]


def test_charge_answer_lost_once_retry_captures_once(
    charge,
    order_factory,
    saga_input,
    seed_order,
    orders,
    ledger: LedgerView,
    providers: FakeLambdaClient,
    lambda_context,
    logs: LogCapture,
    monkeypatch,
):
    order = order_factory()
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    event = saga_input(order, "cid-lost-once")
    _answer_lost(providers, monkeypatch, times=1)

    with pytest.raises(TransientStepError, match="ProviderUnavailable"):
        charge(event, lambda_context)
    result = charge(event, lambda_context)  # Step Functions' retry

    assert result["status"] == "captured"
    assert len(_captures(ledger)) == 1
    assert [r["deduplicated"] for r in ledger.requests("payment", _key(order, "charge-payment"))] == [False, True]
    assert orders.get(order["order_id"])["status"] == OrderStatus.PAYMENT_CHARGED.value


def test_refund_after_charge_answer_lost_past_the_retries_refunds_the_capture_once(
    charge,
    refund,
    order_factory,
    saga_input,
    seed_order,
    ledger: LedgerView,
    providers: FakeLambdaClient,
    idempotency_records: IdempotencyView,
    lambda_context,
    logs: LogCapture,
    monkeypatch,
):
    order = order_factory()
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    event = saga_input(order, "cid-lost-always")
    _answer_lost(providers, monkeypatch, times=4)  # the first attempt and the retrier's 3 retries
    for _ in range(4):
        with pytest.raises(TransientStepError):
            charge(event, lambda_context)

    first = refund(event, lambda_context)
    idempotency_records.forget(_key(order, "refund-payment"))  # e.g. a repair after the record expired
    second = refund(event, lambda_context)

    assert first == second == {"status": "refunded", "amount_cents": order_total_cents(order)}
    assert len(_captures(ledger)) == 1
    assert _refunds(ledger) == [("refunded", order_total_cents(order))]


def test_refund_answer_lost_the_retry_does_not_refund_twice(
    charge,
    refund,
    order_factory,
    saga_input,
    seed_order,
    ledger: LedgerView,
    providers: FakeLambdaClient,
    lambda_context,
    logs: LogCapture,
    monkeypatch,
):
    order = order_factory()
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    event = saga_input(order, "cid-refund-lost")
    charge(event, lambda_context)
    deliver = providers.invoke

    def refund_acted_then_lost(**kwargs):
        answer = deliver(**kwargs)
        if b'"refund"' in kwargs["Payload"]:
            raise ReadTimeoutError(endpoint_url="https://lambda.us-east-1.amazonaws.com")
        return answer

    monkeypatch.setattr(providers, "invoke", refund_acted_then_lost)
    with pytest.raises(TransientStepError):
        refund(event, lambda_context)
    monkeypatch.setattr(providers, "invoke", deliver)
    result = refund(event, lambda_context)  # the compensation retrier

    assert result == {"status": "refunded", "amount_cents": order_total_cents(order)}
    assert _refunds(ledger) == [("refunded", order_total_cents(order))]
    assert present(ledger.op("payment", _key(order, "charge-payment")))["refunded"] is True


@pytest.mark.parametrize(
    "status",
    [
        OrderStatus.RECEIVED,
        OrderStatus.INVENTORY_RESERVED,
        OrderStatus.PAYMENT_CHARGED,
        OrderStatus.SHIPPED,
        OrderStatus.COMPENSATING,
        OrderStatus.NEEDS_ATTENTION,
    ],
)
def test_refund_refunds_what_the_provider_captured_whatever_the_order_status(
    refund,
    order_factory,
    saga_input,
    seed_order,
    ledger: LedgerView,
    providers: FakeLambdaClient,
    lambda_context,
    logs,
    status,
):
    order = order_factory()
    seed_order(order, status)
    _provider_charge(providers, order, lambda_context)
    # A parked order is compensated only on an operator's request (ops repair: "compensate": true).
    state = {**saga_input(order), "compensate": status == OrderStatus.NEEDS_ATTENTION}

    result = refund(state, lambda_context)

    assert result == {"status": "refunded", "amount_cents": order_total_cents(order)}
    assert _refunds(ledger) == [("refunded", order_total_cents(order))]


def test_refund_of_a_declined_charge_moves_nothing_and_calls_no_refund(
    charge, refund, order_factory, saga_input, seed_order, ledger: LedgerView, providers, lambda_context, logs
):
    order = order_factory(payment_token="tok_decline")
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    event = saga_input(order)
    with pytest.raises(Exception, match="declined"):
        charge(event, lambda_context)

    result = refund(event, lambda_context)

    assert result == {"status": "nothing_to_refund", "amount_cents": 0}
    assert _refunds(ledger) == []


def test_refund_answer_other_than_what_moved_is_refund_incomplete(
    charge, refund, order_factory, saga_input, seed_order, providers: FakeLambdaClient, lambda_context, logs
):
    """The lookup says 3,499 cents were captured; a provider answering 'refunded 100' did not give it all back."""
    order = order_factory()
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    event = saga_input(order)
    charge(event, lambda_context)
    real = providers.functions[PAYMENT_FUNCTION]

    def short_refund(request, context):
        answer = real(request, context)
        return {**answer, "amount_cents": 100} if request["action"] == "refund" else answer

    providers.functions[PAYMENT_FUNCTION] = short_refund
    with pytest.raises(RefundIncomplete, match="3499"):
        refund(event, lambda_context)


def test_refund_repeated_after_a_void_reads_the_voided_charge(
    charge,
    refund,
    order_factory,
    saga_input,
    seed_order,
    ledger: LedgerView,
    idempotency_records: IdempotencyView,
    lambda_context,
    logs,
):
    """After a void the provider's lookup answers ``voided`` (refunded): a repeated refund (a repair
    after the step's record expired) must read it, and move nothing."""
    order = order_factory(payment_token="tok_auth_only")
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    event = saga_input(order)
    with pytest.raises(Exception, match="authorized"):
        charge(event, lambda_context)
    first = refund(event, lambda_context)
    idempotency_records.forget(_key(order, "refund-payment"))

    again = refund(event, lambda_context)

    assert first == again == {"status": "voided", "amount_cents": 0}
    assert _refunds(ledger) == [("voided", 0)]
