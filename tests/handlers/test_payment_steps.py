"""ChargePayment / RefundPayment saga steps against the sandbox payment provider (in-process)."""

from __future__ import annotations

import contextlib
import re
from typing import Any

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError

import lambda_resilience.aws as aws_clients
from lambda_resilience.exceptions import TransientStepError
from order_domain.errors import PaymentDeclined, PaymentIncomplete, StaleAttempt
from order_domain.model import order_total_cents
from order_domain.status import OrderStatus
from tests.handlers.conftest import present

from .conftest import PAYMENT_FUNCTION, FakeLambdaClient, IdempotencyView, LedgerView, LogCapture


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
    assert present(ledger.op("payment", _key(order, "charge-payment")))["status"] == "declined"
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
    # Issue 28: our orders table recorded the capture, so the rerun only looks the charge up; it never
    # re-sends it (a provider past its key window would take it for a new charge).
    assert [r["action"] for r in requests] == ["charge", "get"]
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
    with pytest.raises(TransientStepError, match="RuntimeError") as raised:
        charge(saga_input(order), lambda_context)
    assert "provider crashed" not in str(raised.value)  # the provider's message is free text: its type only


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
    refund_op = present(ledger.op("payment", _key(order, "refund-payment")))
    assert refund_op["status"] == "refunded"
    assert refund_op["amount_cents"] == charged["amount_cents"]
    assert present(ledger.op("payment", _key(order, "charge-payment")))["refunded"] is True
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
    assert present(ledger.op("payment", _key(order, "refund-payment")))["status"] == "nothing_to_refund"
    # the charge key is cancelled first, so a late charge cannot move money
    assert present(ledger.op("payment", _key(order, "charge-payment")))["status"] == "cancelled"
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


def test_refund_when_never_charged_late_charge_step_is_refused_and_moves_no_money(
    charge, refund, order_factory, saga_input, seed_order, orders, ledger: LedgerView, lambda_context, logs
):
    """The late charge step meets a COMPENSATING order: refused by its stage before any provider call
    (issue 40); had it passed its stage check first, the cancelled key would decline it at the provider
    (test_refund_when_never_charged_late_charge_request_is_answered_cancelled)."""
    order = order_factory()
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    event = saga_input(order, "cid-late-step")
    refund(event, lambda_context)

    with pytest.raises(StaleAttempt, match="COMPENSATING"):
        charge(event, lambda_context)

    assert [op["status"] for op in ledger.ops("payment") if op["action"] == "charge"] == ["cancelled"]
    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPENSATING.value


# --- partial payment states: the refund returns exactly what moved -------------------------------


def test_charge_partial_capture_raises_payment_incomplete(
    charge, order_factory, saga_input, seed_order, orders, ledger: LedgerView, lambda_context, logs: LogCapture
):
    order = order_factory(payment_token="tok_partial")
    seed_order(order, OrderStatus.INVENTORY_RESERVED)

    with pytest.raises(PaymentIncomplete, match="partially_captured") as raised:
        charge(saga_input(order, "cid-partial"), lambda_context)

    # not PaymentDeclined: the saga's States.ALL catcher routes it to RefundPayment, not only ReleaseInventory
    assert type(raised.value).__name__ == "PaymentIncomplete"
    op = present(ledger.op("payment", _key(order, "charge-payment")))
    assert (op["status"], op["captured_cents"], op["amount_cents"]) == ("partially_captured", 3499 // 2, 3499)
    assert orders.get(order["order_id"])["status"] == OrderStatus.INVENTORY_RESERVED.value
    (failed,) = logs.find("charge-payment failed")
    assert failed["category"] == "permanent"


def test_charge_auth_only_raises_payment_incomplete(
    charge, order_factory, saga_input, seed_order, orders, ledger: LedgerView, lambda_context, logs
):
    order = order_factory(payment_token="tok_auth_only")
    seed_order(order, OrderStatus.INVENTORY_RESERVED)

    with pytest.raises(PaymentIncomplete, match="authorized"):
        charge(saga_input(order), lambda_context)

    op = present(ledger.op("payment", _key(order, "charge-payment")))
    assert (op["status"], op["captured_cents"]) == ("authorized", 0)
    assert orders.get(order["order_id"])["status"] == OrderStatus.INVENTORY_RESERVED.value


def test_refund_after_partial_capture_refunds_exactly_captured_cents(
    charge, refund, order_factory, saga_input, seed_order, orders, ledger: LedgerView, lambda_context, logs
):
    order = order_factory(payment_token="tok_partial")
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    event = saga_input(order, "cid-partial-refund")
    with pytest.raises(PaymentIncomplete):
        charge(event, lambda_context)

    result = refund(event, lambda_context)

    assert result == {"status": "refunded", "amount_cents": 1749}  # 3499 // 2, not the order total
    refund_op = present(ledger.op("payment", _key(order, "refund-payment")))
    assert (refund_op["status"], refund_op["amount_cents"]) == ("refunded", 1749)
    charge_op = present(ledger.op("payment", _key(order, "charge-payment")))
    assert charge_op["refunded"] is True
    assert charge_op["status"] == "partially_captured"
    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPENSATING.value


def test_refund_after_auth_only_voids_the_hold_and_moves_no_money(
    charge, refund, order_factory, saga_input, seed_order, orders, ledger: LedgerView, lambda_context, logs
):
    order = order_factory(payment_token="tok_auth_only")
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    event = saga_input(order, "cid-void")
    with pytest.raises(PaymentIncomplete):
        charge(event, lambda_context)

    first = refund(event, lambda_context)
    second = refund(event, lambda_context)

    assert first == second == {"status": "voided", "amount_cents": 0}
    charge_op = present(ledger.op("payment", _key(order, "charge-payment")))
    assert (charge_op["status"], charge_op["refunded"]) == ("voided", True)
    refund_ops = [op for op in ledger.ops("payment") if op["action"] == "refund"]
    assert [(op["status"], op["amount_cents"]) for op in refund_ops] == [("voided", 0)]
    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPENSATING.value


def test_refund_after_unknown_charge_outcome_refunds_what_the_provider_captured(
    charge,
    refund,
    order_factory,
    saga_input,
    seed_order,
    orders,
    ledger: LedgerView,
    providers: FakeLambdaClient,
    idempotency_records: IdempotencyView,
    lambda_context,
    logs: LogCapture,
    monkeypatch,
):
    """The provider captured, but the charge step's call timed out: the saga only knows 'unknown'."""
    order = order_factory()
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    event = saga_input(order, "cid-unknown")
    deliver = providers.invoke

    def captured_then_timed_out(**kwargs):
        deliver(**kwargs)  # the provider receives the request and captures
        raise ReadTimeoutError(endpoint_url="https://lambda.us-east-1.amazonaws.com")

    monkeypatch.setattr(providers, "invoke", captured_then_timed_out)
    with pytest.raises(TransientStepError, match="ProviderUnavailable"):
        charge(event, lambda_context)
    monkeypatch.setattr(providers, "invoke", deliver)

    assert present(ledger.op("payment", _key(order, "charge-payment")))["status"] == "captured"
    assert orders.get(order["order_id"])["status"] == OrderStatus.INVENTORY_RESERVED.value  # we never saw it
    assert idempotency_records.get(_key(order, "charge-payment")) is None

    result = refund(event, lambda_context)

    assert result == {"status": "refunded", "amount_cents": order_total_cents(order)}
    assert present(ledger.op("payment", _key(order, "charge-payment")))["refunded"] is True
    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPENSATING.value


def test_refund_flaky_provider_fails_twice_then_refunds_once(
    charge,
    refund,
    order_factory,
    saga_input,
    seed_order,
    ledger: LedgerView,
    idempotency_records: IdempotencyView,
    lambda_context,
    logs: LogCapture,
):
    order = order_factory(payment_token="tok_refund_flaky")
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    event = saga_input(order, "cid-flaky")
    charged = charge(event, lambda_context)

    for _ in range(2):  # what Step Functions' retrier sees before the third attempt
        with pytest.raises(TransientStepError, match="provider_unavailable") as raised:
            refund(event, lambda_context)
        assert type(raised.value).__name__ == "TransientStepError"
        assert idempotency_records.get(_key(order, "refund-payment")) is None  # the retry really runs
    result = refund(event, lambda_context)

    assert result == {"status": "refunded", "amount_cents": charged["amount_cents"]}
    requests = ledger.requests("payment", _key(order, "refund-payment"))
    assert [r["outcome"] for r in requests] == ["error", "error", "refunded"]
    refund_ops = [op for op in ledger.ops("payment") if op["action"] == "refund"]
    assert [(op["status"], op["amount_cents"]) for op in refund_ops] == [("refunded", charged["amount_cents"])]
    failures = logs.find("refund-payment failed")
    assert [f["category"] for f in failures] == ["transient", "transient"]


def test_refund_broken_provider_always_raises_transient_step_error(
    charge,
    refund,
    order_factory,
    saga_input,
    seed_order,
    orders,
    ledger: LedgerView,
    lambda_context,
    logs,
):
    order = order_factory(payment_token="tok_refund_broken")
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    event = saga_input(order, "cid-broken")
    charge(event, lambda_context)

    for _ in range(6):  # the first attempt and the compensation retrier's 5 retries
        with pytest.raises(TransientStepError, match="provider_unavailable"):
            refund(event, lambda_context)

    assert [r["outcome"] for r in ledger.requests("payment", _key(order, "refund-payment"))] == ["error"] * 6
    assert [op for op in ledger.ops("payment") if op["action"] == "refund"] == []
    charge_op = present(ledger.op("payment", _key(order, "charge-payment")))
    assert charge_op["status"] == "captured"
    assert "refunded" not in charge_op  # the money is still with the provider: the order must be parked
    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPENSATING.value


# --- the refund transaction as real DynamoDB validates it --------------------------------------------


def _unused_placeholders(expressions: list[str], placeholders: dict[str, Any] | None) -> list[str]:
    text = " ".join(expressions)
    return sorted(k for k in (placeholders or {}) if not re.search(re.escape(k) + r"(?![A-Za-z0-9_])", text))


class StrictTransactions:
    """Delegates to the moto client, but rejects what real DynamoDB rejects and moto 5 accepts in
    TransactWriteItems: ExpressionAttributeValues / Names that no expression of the item uses."""

    def __init__(self, real: Any) -> None:
        self._transact = real.transact_write_items

    def transact_write_items(self, **kwargs: Any) -> Any:
        for entry in kwargs["TransactItems"]:
            ((_kind, item),) = entry.items()
            expressions = [item[k] for k in ("UpdateExpression", "ConditionExpression") if k in item]
            for field_name in ("ExpressionAttributeValues", "ExpressionAttributeNames"):
                unused = _unused_placeholders(expressions, item.get(field_name))
                if unused:
                    raise ClientError(
                        {
                            "Error": {
                                "Code": "ValidationException",
                                "Message": f"Value provided in {field_name} unused in expressions: keys: "
                                f"{{{', '.join(unused)}}}",
                            },
                            "ResponseMetadata": {"HTTPStatusCode": 400},
                        },
                        "TransactWriteItems",
                    )
        return self._transact(**kwargs)


@pytest.mark.parametrize(
    ("token", "status"),
    [
        pytest.param(
            "tok_visa",
            "refunded",
            id="captured",
        ),
        pytest.param(
            "tok_partial",
            "refunded",
            id="partially-captured",
        ),
        pytest.param("tok_auth_only", "voided", id="authorized"),
    ],
)
def test_refund_transaction_passes_dynamodb_expression_validation(
    charge, refund, order_factory, saga_input, seed_order, lambda_context, logs, monkeypatch, token, status
):
    order = order_factory(payment_token=token)
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    event = saga_input(order)
    with contextlib.suppress(PaymentIncomplete):
        charge(event, lambda_context)
    # The sandbox ledger's client: the composition root (order_domain.wiring) shares one per service.
    shared = aws_clients.client("dynamodb")
    monkeypatch.setattr(shared, "transact_write_items", StrictTransactions(shared).transact_write_items)

    assert refund(event, lambda_context)["status"] == status


def test_refund_pending_at_the_provider_is_followed_by_a_settlement_record(
    charge, refund, order_factory, saga_input, seed_order, orders, ledger: LedgerView, lambda_context
):
    """Stripe answers a refund ``pending`` and settles it later (issue 40, point 5): the compensation goes on,
    and the order holds a pending settlement record for the refund, in the unsettled index."""
    order = order_factory(payment_token="tok_refund_pending_1")
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    event = saga_input(order, "cid-refund-pending")
    charged = charge(event, lambda_context)

    assert refund(event, lambda_context) == {"status": "pending", "amount_cents": charged["amount_cents"]}
    item = orders.get(order["order_id"])
    record = item["settlement"]["refund#1"]
    assert (record["status"], record["state"]) == ("pending", "pending")
    assert "settle_due" in item and "settle_shard" in item


def test_refund_failing_days_later_in_the_sandbox_shows_in_its_lookup(
    charge, refund, order_factory, saga_input, seed_order, providers, lambda_context, monkeypatch
):
    """The simulator does what processors document: a refund answered pending settles failed 5 days later."""
    import sandbox.payment
    from order_domain.providers import LambdaPaymentProvider
    from sandbox import REFUND_SETTLE_SECONDS

    order = order_factory(payment_token="tok_refund_fails_later_1")
    seed_order(order, OrderStatus.INVENTORY_RESERVED)
    event = saga_input(order, "cid-refund-fails-later")
    charge(event, lambda_context)
    assert refund(event, lambda_context)["status"] == "pending"
    lookup = LambdaPaymentProvider(PAYMENT_FUNCTION, client=providers)
    assert present(lookup.find_refund(_key(order, "refund-payment"))).settlement == "pending"
    later = sandbox.payment.time.time() + REFUND_SETTLE_SECONDS + 1
    monkeypatch.setattr(sandbox.payment.time, "time", lambda: later)
    found = present(lookup.find_refund(_key(order, "refund-payment")))
    assert found.settlement == "failed" and found.settled_at > 0
