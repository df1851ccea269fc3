"""The park (MarkNeedsAttention = finalize_order with outcome NEEDS_ATTENTION), keyed per execution.

A repair (``ops repair --action compensate``) is a new execution: if it parks again, it must park
and announce again, not return the first park's cached result. A retry of the same execution must
be a duplicate whatever its error text. The announcement goes out before the status write, so a
failing write cannot swallow it.
"""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

import lambda_resilience.aws as aws_clients
from lambda_resilience.exceptions import InvalidStepInput
from order_domain.errors import OrderParked, StaleAttempt
from order_domain.status import OrderStatus

from .conftest import IdempotencyView, LogCapture, NeedsAttentionQueue

ERROR = {"Error": "TransientStepError", "Cause": "ProviderUnavailable: provider_unavailable"}


@pytest.fixture
def finalize(load):
    return load("finalize_order")


#: The saga input's W3C trace context (tracing is off in these tests: carried through unchanged).
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def _park(order: dict, execution_name: str | None, *, cid: str = "cid-park", error: dict | None = None) -> dict:
    """What MarkNeedsAttention sends (stacks/order_constructs/order_saga.py): references, trace context,
    error, execution name."""
    event = {
        "outcome": "NEEDS_ATTENTION",
        "order_id": order["order_id"],
        "payment_attempt": 1,
        "correlation_id": cid,
        "traceparent": TRACEPARENT,
        "error": error or ERROR,
    }
    if execution_name is not None:
        event["execution_name"] = execution_name
    return event


def test_park_repair_execution_parks_and_announces_again(
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
    first_run = f"order-{order['order_id']}-attempt-1"

    finalize(_park(order, first_run), lambda_context)
    # the operator's repair moved the order back to COMPENSATING, and its compensation failed again
    assert orders.transition(order["order_id"], OrderStatus.COMPENSATING, attempt=1) == "moved"
    second = finalize(_park(order, f"{first_run}-repair-0"), lambda_context)

    assert second == {"status": "NEEDS_ATTENTION", "transition": "moved"}
    assert len(needs_attention_queue.messages()) == 2
    assert orders.get(order["order_id"])["status"] == OrderStatus.NEEDS_ATTENTION.value
    oid = order["order_id"]
    assert idempotency_records.get(f"{oid}#finalize-order-needs_attention-{first_run}#attempt-1") is not None
    assert idempotency_records.get(f"{oid}#finalize-order-needs_attention-{first_run}-repair-0#attempt-1") is not None
    assert logs.find("duplicate suppressed") == []


def test_park_retry_of_same_execution_with_other_error_text_is_a_duplicate(
    finalize, order_factory, seed_order, needs_attention_queue: NeedsAttentionQueue, lambda_context, logs: LogCapture
):
    order = order_factory()
    seed_order(order, OrderStatus.COMPENSATING)
    name = f"order-{order['order_id']}-attempt-1"

    first = finalize(_park(order, name, error={"Error": "States.Timeout", "Cause": "first"}), lambda_context)
    second = finalize(_park(order, name, error={"Error": "States.Timeout", "Cause": "other text"}), lambda_context)

    assert second == first
    assert len(needs_attention_queue.messages()) == 1
    assert len(logs.find("duplicate suppressed")) == 1
    assert logs.find("payload mismatch") == []


def test_park_without_error_text_difference_still_keys_old_inputs_per_attempt(
    finalize,
    order_factory,
    seed_order,
    needs_attention_queue: NeedsAttentionQueue,
    idempotency_records: IdempotencyView,
    lambda_context,
    logs,
):
    """An input without ``execution_name`` (an execution started before the change) keeps today's key."""
    order = order_factory()
    seed_order(order, OrderStatus.COMPENSATING)

    finalize(_park(order, None, error={"Error": "A", "Cause": "one"}), lambda_context)
    finalize(_park(order, None, error={"Error": "B", "Cause": "two"}), lambda_context)

    assert idempotency_records.get(f"{order['order_id']}#finalize-order-needs_attention#attempt-1") is not None
    assert len(needs_attention_queue.messages()) == 1


def test_park_message_body_is_the_shared_needs_attention_contract(
    finalize, order_factory, seed_order, needs_attention_queue: NeedsAttentionQueue, lambda_context, logs
):
    order = order_factory()
    seed_order(order, OrderStatus.COMPENSATING)

    finalize(_park(order, f"order-{order['order_id']}-attempt-1", cid="cid-body"), lambda_context)

    (message,) = needs_attention_queue.messages()
    body = message["body"]
    assert set(body) == {"order_id", "payment_attempt", "correlation_id", "reason", "error", "source"}
    assert (body["order_id"], body["payment_attempt"], body["correlation_id"]) == (order["order_id"], 1, "cid-body")
    assert body["source"] == "saga-park"
    assert body["error"] == ERROR
    assert body["reason"]
    # The correlation ID and the trace context the park ran in (the saga input's, passed through).
    assert message["attributes"] == {
        "correlation_id": {"DataType": "String", "StringValue": "cid-body"},
        "traceparent": {"DataType": "String", "StringValue": TRACEPARENT},
    }
    # references only: no card token, name or address
    text = str(body)
    assert order["payment_token"] not in text and order["shipping_address"]["name"] not in text


def test_park_announces_when_order_already_needs_attention(
    finalize, order_factory, seed_order, needs_attention_queue: NeedsAttentionQueue, lambda_context, logs
):
    order = order_factory()
    seed_order(order, OrderStatus.NEEDS_ATTENTION)

    result = finalize(_park(order, f"order-{order['order_id']}-attempt-1-repair-3"), lambda_context)

    assert result == {"status": "NEEDS_ATTENTION", "transition": "already"}
    assert len(needs_attention_queue.messages()) == 1


def _denied_update(**kwargs):
    """UpdateItem (the status write), denied."""
    raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": "denied"}}, "UpdateItem")


def test_park_announces_before_its_status_write_so_a_failing_write_loses_nothing(
    finalize,
    order_factory,
    seed_order,
    orders,
    needs_attention_queue: NeedsAttentionQueue,
    lambda_context,
    logs,
    monkeypatch,
):
    order = order_factory()
    seed_order(order, OrderStatus.COMPENSATING)
    # The handler's client: the composition root (order_domain.wiring) shares one per service.
    monkeypatch.setattr(aws_clients.client("dynamodb"), "update_item", _denied_update)

    with pytest.raises(Exception, match="AccessDenied"):
        finalize(_park(order, f"order-{order['order_id']}-attempt-1"), lambda_context)

    (message,) = needs_attention_queue.messages()
    assert message["body"]["order_id"] == order["order_id"]
    monkeypatch.undo()
    assert orders.get(order["order_id"])["status"] == OrderStatus.COMPENSATING.value


@pytest.mark.parametrize("name", ["", "has space", "x" * 81, "semi;colon", 42])
def test_park_rejects_an_execution_name_step_functions_cannot_have(
    finalize, order_factory, seed_order, needs_attention_queue: NeedsAttentionQueue, lambda_context, logs, name
):
    order = order_factory()
    seed_order(order, OrderStatus.COMPENSATING)
    event = {**_park(order, None), "execution_name": name}

    with pytest.raises(InvalidStepInput, match="execution_name"):
        finalize(event, lambda_context)
    assert needs_attention_queue.messages() == []


@pytest.mark.parametrize("status", [OrderStatus.NEEDS_ATTENTION, OrderStatus.COMPENSATED, OrderStatus.COMPLETED])
def test_late_execution_for_an_ended_order_moves_nothing(
    load, providers, order_factory, saga_input, seed_order, orders, inventory, ledger, lambda_context, logs, status
):
    """The sweeper parked an order whose saga never started; a late redelivery starts it now: its
    forward steps refuse (StaleAttempt, or OrderParked for a parked order: the saga fails the execution at
    once) before any effect."""
    inventory.seed(**{"SKU-A": 5, "SKU-B": 5})
    order = order_factory()
    seed_order(order, status)
    event = saga_input(order)
    parked = status == OrderStatus.NEEDS_ATTENTION
    refused, says = (OrderParked, "parked for an operator") if parked else (StaleAttempt, f"already ended {status}")

    for step in ("reserve_inventory", "charge_payment", "ship_order"):
        with pytest.raises(refused, match=says):
            load(step)(event, lambda_context)

    assert (inventory.available("SKU-A"), inventory.available("SKU-B")) == (5, 5)
    assert ledger.ops() == [] and providers.calls == []
    assert orders.get(order["order_id"])["status"] == status.value
