"""The exact AWS requests of the orders repository, the saga starter, the provider adapter and the
needs-attention notifier, on botocore ``Stubber`` (no moto): the parameters each call must send
(condition expressions above all) and how each answer, conditional-check failures included, is read.

moto would accept a condition that differs from the intended one as long as the outcome matches;
here the request itself is the assertion. Clients are injected (order_domain.wiring builds them in
Lambda), so each test hands the unit a stubbed client; ``assert_no_pending_responses`` proves every
expected call was made.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.response import StreamingBody
from botocore.stub import Stubber

from lambda_resilience.aws import to_item
from lambda_resilience.correlation import correlation_scope
from lambda_resilience.tracing import record_span
from order_domain import clock
from order_domain.attention import SAGA_PARK, NeedsAttentionNotifier
from order_domain.errors import StaleAttempt, UnknownOrder
from order_domain.logs import get_logger
from order_domain.orders import CREATED, DUPLICATE, OrderRepository
from order_domain.providers import LambdaPaymentProvider
from order_domain.saga_start import SagaStarter
from order_domain.status import OrderStatus

REGION = "us-east-1"
TABLE = "orders"
NOW = "2026-01-02T03:04:05Z"
STATE_MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:order-saga"


def _stubbed(service: str) -> Iterator[tuple[Any, Stubber]]:
    client = boto3.session.Session().client(service, region_name=REGION)
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


@pytest.fixture
def dynamodb() -> Iterator[tuple[Any, Stubber]]:
    yield from _stubbed("dynamodb")


@pytest.fixture
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(clock, "iso", lambda seconds=None: NOW)
    return NOW


def _transition_request(condition: str, attempt: int, entry_attempt: int | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"status": "SHIPPED", "at": NOW}
    if entry_attempt is not None:
        entry["attempt"] = entry_attempt
    return {
        "TableName": TABLE,
        "Key": {"order_id": {"S": "o-1"}},
        "UpdateExpression": "SET #s = :to, #u = :now, #h = list_append(#h, :entry)",
        "ConditionExpression": condition,
        "ExpressionAttributeNames": {"#s": "status", "#u": "updated_at", "#h": "history"},
        "ExpressionAttributeValues": to_item(
            {":to": "SHIPPED", ":now": NOW, ":entry": [entry], ":f0": "PAYMENT_CHARGED", ":attempt": attempt}
        ),
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }


def _condition_failed(stubber: Stubber, old: dict[str, Any] | None) -> None:
    stubber.add_client_error(
        "update_item",
        service_error_code="ConditionalCheckFailedException",
        service_message="The conditional request failed",
        modeled_fields={"Item": to_item(old)} if old is not None else None,
    )


# --- OrderRepository: status transitions ---------------------------------------------------------------


def test_orders_transition_first_attempt_condition_allows_items_without_attempt(dynamodb, fixed_clock):
    client, stubber = dynamodb
    condition = (
        "attribute_exists(order_id) AND #s IN (:f0) "
        "AND (attribute_not_exists(payment_attempt) OR payment_attempt = :attempt)"
    )
    stubber.add_response("update_item", {}, _transition_request(condition, 1, 1))

    assert OrderRepository(TABLE, client=client).transition("o-1", OrderStatus.SHIPPED, attempt=1) == "moved"


def test_orders_transition_later_attempt_condition_names_that_attempt(dynamodb, fixed_clock):
    client, stubber = dynamodb
    condition = "attribute_exists(order_id) AND #s IN (:f0) AND (payment_attempt = :attempt)"
    stubber.add_response("update_item", {}, _transition_request(condition, 2, 2))

    assert OrderRepository(TABLE, client=client).transition("o-1", OrderStatus.SHIPPED, attempt=2) == "moved"


def test_orders_transition_condition_failed_at_the_target_is_already(dynamodb, fixed_clock):
    client, stubber = dynamodb
    _condition_failed(stubber, {"order_id": "o-1", "status": "SHIPPED", "payment_attempt": 1})

    assert OrderRepository(TABLE, client=client).transition("o-1", OrderStatus.SHIPPED, attempt=1) == "already"


def test_orders_transition_condition_failed_on_a_newer_attempt_is_stale(dynamodb, fixed_clock):
    client, stubber = dynamodb
    _condition_failed(stubber, {"order_id": "o-1", "status": "RECEIVED", "payment_attempt": 2})

    assert OrderRepository(TABLE, client=client).transition("o-1", OrderStatus.SHIPPED, attempt=1) == "stale"


def test_orders_transition_condition_failed_on_an_older_attempt_raises_stale_attempt(dynamodb, fixed_clock):
    client, stubber = dynamodb
    _condition_failed(stubber, {"order_id": "o-1", "status": "PAYMENT_CHARGED", "payment_attempt": 1})

    with pytest.raises(StaleAttempt, match="attempt 2 is not recorded"):
        OrderRepository(TABLE, client=client).transition("o-1", OrderStatus.SHIPPED, attempt=2)


def test_orders_transition_condition_failed_without_item_is_unknown_order(dynamodb, fixed_clock):
    client, stubber = dynamodb
    _condition_failed(stubber, None)

    with pytest.raises(UnknownOrder, match="o-1"):
        OrderRepository(TABLE, client=client).transition("o-1", OrderStatus.SHIPPED, attempt=1)


def test_orders_transition_throttled_is_raised_unchanged(dynamodb, fixed_clock):
    client, stubber = dynamodb
    stubber.add_client_error("update_item", service_error_code="ThrottlingException", http_status_code=400)

    with pytest.raises(ClientError, match="ThrottlingException"):
        OrderRepository(TABLE, client=client).transition("o-1", OrderStatus.SHIPPED, attempt=1)


# --- OrderRepository: recording an order -----------------------------------------------------------------


def _order() -> dict[str, Any]:
    return {"order_id": "o-1", "currency": "EUR", "items": [{"sku": "A", "quantity": 1, "unit_price_cents": 5}]}


def test_orders_create_puts_only_if_absent(dynamodb, fixed_clock):
    client, stubber = dynamodb
    order = _order()
    item = {
        "order_id": "o-1",
        "status": "RECEIVED",
        "payment_attempt": 1,
        "correlation_id": "cid-1",
        "order": order,
        "created_at": NOW,
        "updated_at": NOW,
        "history": [{"status": "RECEIVED", "at": NOW, "attempt": 1}],
        "attempts": [{"attempt": 1, "received_at": NOW, "correlation_id": "cid-1"}],
        "intents": {},
    }
    stubber.add_response(
        "put_item",
        {},
        {
            "TableName": TABLE,
            "Item": to_item(item),
            "ConditionExpression": "attribute_not_exists(order_id)",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        },
    )

    assert OrderRepository(TABLE, client=client).create(order, "cid-1") == CREATED


def test_orders_create_condition_failed_with_the_same_order_is_a_duplicate_without_a_read(dynamodb, fixed_clock):
    client, stubber = dynamodb
    order = _order()
    stubber.add_client_error(
        "put_item",
        service_error_code="ConditionalCheckFailedException",
        modeled_fields={
            "Item": to_item({"order_id": "o-1", "status": "RECEIVED", "payment_attempt": 1, "order": order})
        },
    )

    assert OrderRepository(TABLE, client=client).create(order, "cid-2") == DUPLICATE  # no GetItem queued: none made


# --- SagaStarter ---------------------------------------------------------------------------------------


@pytest.fixture
def stepfunctions() -> Iterator[tuple[Any, Stubber]]:
    yield from _stubbed("stepfunctions")


TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_saga_starter_start_names_the_execution_and_sends_references_only(stepfunctions):
    client, stubber = stepfunctions
    arn = STATE_MACHINE.replace(":stateMachine:", ":execution:") + ":order-o-1-attempt-2"
    stubber.add_response(
        "start_execution",
        {"executionArn": arn, "startDate": 0},
        {
            "stateMachineArn": STATE_MACHINE,
            "name": "order-o-1-attempt-2",
            "input": json.dumps(
                {"order_id": "o-1", "payment_attempt": 2, "correlation_id": "cid-1", "traceparent": TRACEPARENT}
            ),
            "traceHeader": "Root=1-4bf92f35-77b34da6a3ce929d0e0e4736;Parent=00f067aa0ba902b7;Sampled=1",
        },
    )

    with record_span("record", TRACEPARENT):  # the record's trace context (tracing off: passed through)
        started = SagaStarter(STATE_MACHINE, client=client).start("o-1", 2, "cid-1")

    assert started == {"execution_arn": arn, "already_started": False}


@pytest.mark.parametrize("flag,sampled", [("01", "1"), ("00", "0")], ids=["sampled", "sampled-out"])
def test_saga_starter_start_passes_the_orders_trace_as_the_xray_trace_header(stepfunctions, flag, sampled):
    """The execution joins the order's trace (Step Functions' and the task functions' X-Ray segments, the
    layer's invocation spans): ``traceHeader`` is the ``traceparent`` in X-Ray's format, the edge's sampling
    decision kept (an order sampled out stays sampled out)."""
    client, stubber = stepfunctions
    traceparent = TRACEPARENT[:-2] + flag
    stubber.add_response(
        "start_execution",
        {
            "executionArn": STATE_MACHINE.replace(":stateMachine:", ":execution:") + ":order-o-1-attempt-1",
            "startDate": 0,
        },
        {
            "stateMachineArn": STATE_MACHINE,
            "name": "order-o-1-attempt-1",
            "input": json.dumps(
                {"order_id": "o-1", "payment_attempt": 1, "correlation_id": "cid-1", "traceparent": traceparent}
            ),
            "traceHeader": f"Root=1-4bf92f35-77b34da6a3ce929d0e0e4736;Parent=00f067aa0ba902b7;Sampled={sampled}",
        },
    )

    with record_span("record", traceparent):
        SagaStarter(STATE_MACHINE, client=client).start("o-1", 1, "cid-1")


def test_saga_starter_existing_execution_counts_as_started(stepfunctions):
    client, stubber = stepfunctions
    stubber.add_client_error("start_execution", service_error_code="ExecutionAlreadyExists")

    started = SagaStarter(STATE_MACHINE, client=client).start("o-1", 1, "cid-1")

    assert started == {
        "execution_arn": "arn:aws:states:us-east-1:123456789012:execution:order-saga:order-o-1-attempt-1",
        "already_started": True,
    }


# --- LambdaPaymentProvider -----------------------------------------------------------------------------


def _payload(answer: dict[str, Any]) -> StreamingBody:
    body = json.dumps(answer).encode()
    return StreamingBody(io.BytesIO(body), len(body))


def test_lambda_payment_provider_charge_invokes_with_the_business_key_and_correlation_id():
    client = boto3.session.Session().client("lambda", region_name=REGION)
    request = {
        "action": "charge",
        "idempotency_key": "o-1#charge-payment#attempt-1",
        "order_id": "o-1",
        "amount_cents": 2500,
        "currency": "EUR",
        "payment_token": "tok_visa",
        "correlation_id": "cid-charge",
    }
    answer = {"status": "captured", "payment_id": "pay_1", "amount_cents": 2500, "captured_cents": 2500}
    with Stubber(client) as stubber:
        stubber.add_response(
            "invoke",
            {"StatusCode": 200, "Payload": _payload(answer)},
            {
                "FunctionName": "sandbox-payment",
                "InvocationType": "RequestResponse",
                "Payload": json.dumps(request).encode(),
            },
        )
        provider = LambdaPaymentProvider("sandbox-payment", client=client)
        with correlation_scope(get_logger(service="stubbed"), "cid-charge"):
            charge = provider.charge(
                "o-1#charge-payment#attempt-1",
                order_id="o-1",
                amount_cents=2500,
                currency="EUR",
                payment_token="tok_visa",
            )
        stubber.assert_no_pending_responses()

    assert (charge.status, charge.payment_id, charge.captured_cents) == ("captured", "pay_1", 2500)


# --- NeedsAttentionNotifier ----------------------------------------------------------------------------


def test_needs_attention_notifier_sends_references_and_the_correlation_attribute():
    client = boto3.session.Session().client("sqs", region_name=REGION)
    body = {
        "order_id": "o-1",
        "payment_attempt": 1,
        "correlation_id": "cid-park",
        "reason": "stuck",
        "error": {"Error": "States.Timeout", "Cause": "timed out"},
        "source": SAGA_PARK,
    }
    with Stubber(client) as stubber:
        stubber.add_response(
            "send_message",
            {"MessageId": "m-1"},
            {
                "QueueUrl": "https://sqs.us-east-1.amazonaws.com/123456789012/needs-attention",
                "MessageBody": json.dumps(body),
                "MessageAttributes": {"correlation_id": {"DataType": "String", "StringValue": "cid-park"}},
            },
        )
        notifier = NeedsAttentionNotifier(
            "https://sqs.us-east-1.amazonaws.com/123456789012/needs-attention", client=client
        )
        message_id = notifier.notify(
            "o-1",
            payment_attempt=1,
            reason="stuck",
            error={"Error": "States.Timeout", "Cause": "timed out"},
            source=SAGA_PARK,
            correlation_id="cid-park",
        )
        stubber.assert_no_pending_responses()

    assert message_id == "m-1"
