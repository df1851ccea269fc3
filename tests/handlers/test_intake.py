"""Intake: SQS orders -> order recorded RECEIVED + one saga execution, per-record correlation IDs."""

from __future__ import annotations

import json
import uuid
from typing import Any

import boto3
import pytest

from lambda_resilience.tracing import is_traceparent
from order_domain.status import OrderStatus

from .conftest import REGION, IdempotencyView, LogCapture


def _executions(state_machine: str) -> list[dict[str, Any]]:
    sfn = boto3.client("stepfunctions", region_name=REGION)
    listed = sfn.list_executions(stateMachineArn=state_machine)["executions"]
    return [sfn.describe_execution(executionArn=e["executionArn"]) for e in listed]


@pytest.fixture
def intake(load):
    return load("intake")


def test_intake_valid_order_is_recorded_and_starts_one_named_execution(
    intake, order_factory, sqs_event, sqs_record, lambda_context, orders, state_machine, logs: LogCapture
):
    order = order_factory()
    cid = f"cid-{uuid.uuid4()}"

    result = intake(sqs_event(sqs_record(order, correlation_id=cid)), lambda_context)

    assert result == {"batchItemFailures": []}
    stored = orders.get(order["order_id"])
    assert stored["status"] == OrderStatus.RECEIVED.value
    assert stored["order"] == order
    assert stored["correlation_id"] == cid
    executions = _executions(state_machine)
    assert [e["name"] for e in executions] == [f"order-{order['order_id']}-attempt-1"]
    # References only: no payment token, name or address in the execution input; the W3C trace
    # context the steps continue (a new trace: the message carried none).
    started = json.loads(executions[0]["input"])
    assert is_traceparent(started.pop("traceparent"))
    assert started == {"order_id": order["order_id"], "payment_attempt": 1, "correlation_id": cid}


def test_intake_uses_correlation_id_from_message_attribute_on_every_log_line(
    intake, order_factory, sqs_event, sqs_record, lambda_context, logs: LogCapture
):
    order = order_factory()
    cid = "cid-from-the-producer"

    intake(sqs_event(sqs_record(order, correlation_id=cid)), lambda_context)

    lines = logs.read()
    assert lines, "intake logged nothing"
    assert {line["correlation_id"] for line in lines} == {cid}
    accepted = logs.find("order accepted", order_id=order["order_id"])
    assert len(accepted) == 1
    assert accepted[0]["execution_arn"].endswith(f":order-{order['order_id']}-attempt-1")


def test_intake_mints_correlation_id_when_attribute_missing(
    intake, order_factory, sqs_event, lambda_context, orders, state_machine, logs: LogCapture
):
    order = order_factory()

    intake(sqs_event(order), lambda_context)

    lines = logs.read()
    minted = {line.get("correlation_id") for line in lines}
    assert len(minted) == 1
    cid = minted.pop()
    assert cid
    uuid.UUID(cid)  # minted IDs are UUID4 strings
    (execution,) = _executions(state_machine)
    assert json.loads(execution["input"])["correlation_id"] == cid
    assert orders.get(order["order_id"])["correlation_id"] == cid


def test_intake_same_message_twice_starts_one_execution_and_caches_the_result(
    intake,
    order_factory,
    sqs_event,
    sqs_record,
    lambda_context,
    state_machine,
    idempotency_records: IdempotencyView,
    logs: LogCapture,
):
    order = order_factory()
    record = sqs_record(order, correlation_id="cid-dup", message_id="m-1")
    redelivered = {**record, "attributes": {**record["attributes"], "ApproximateReceiveCount": "2"}}

    assert intake(sqs_event(record), lambda_context) == {"batchItemFailures": []}
    assert logs.metric_total("DuplicatesSuppressed") == 0
    assert intake(sqs_event(redelivered), lambda_context) == {"batchItemFailures": []}

    assert len(_executions(state_machine)) == 1
    assert len(logs.find("duplicate suppressed", idempotency_key=f"{order['order_id']}#intake#attempt-1")) == 1
    assert logs.metric_total("DuplicatesSuppressed") == 1
    accepted = logs.find("order accepted", order_id=order["order_id"])
    assert len(accepted) == 2
    assert accepted[0]["execution_arn"] == accepted[1]["execution_arn"]  # the cached first result
    record_item = idempotency_records.get(f"{order['order_id']}#intake#attempt-1")
    assert record_item is not None
    assert record_item["status"] == "COMPLETED"
    assert json.loads(record_item["data"])["already_started"] is False


def test_intake_same_order_in_two_messages_with_different_correlation_ids_is_one_execution(
    intake, order_factory, sqs_event, sqs_record, lambda_context, state_machine, logs: LogCapture
):
    order = order_factory()

    intake(sqs_event(sqs_record(order, correlation_id="cid-first")), lambda_context)
    result = intake(sqs_event(sqs_record(order, correlation_id="cid-second")), lambda_context)

    assert result == {"batchItemFailures": []}
    (execution,) = _executions(state_machine)
    assert json.loads(execution["input"])["correlation_id"] == "cid-first"
    assert logs.find("duplicate suppressed", correlation_id="cid-second")


def test_intake_each_record_logs_with_its_own_correlation_id(
    intake, order_factory, sqs_event, sqs_record, lambda_context, state_machine, logs: LogCapture
):
    first, second = order_factory(), order_factory()
    bad = sqs_record("{", correlation_id="cid-3", message_id="m-bad")

    result = intake(
        sqs_event(
            sqs_record(first, correlation_id="cid-1"),
            bad,
            sqs_record(second, correlation_id="cid-2"),
        ),
        lambda_context,
    )

    assert result == {"batchItemFailures": [{"itemIdentifier": "m-bad"}]}
    assert {line["correlation_id"] for line in logs.find(order_id=first["order_id"])} == {"cid-1"}
    assert {line["correlation_id"] for line in logs.find(order_id=second["order_id"])} == {"cid-2"}
    assert {line["correlation_id"] for line in logs.find(message_id="m-bad")} == {"cid-3"}
    (failed,) = logs.find("record failed", message_id="m-bad")
    assert (failed["error_type"], failed["category"]) == ("InvalidOrder", "permanent")
    inputs = {json.loads(e["input"])["order_id"]: json.loads(e["input"]) for e in _executions(state_machine)}
    assert inputs[first["order_id"]]["correlation_id"] == "cid-1"
    assert inputs[second["order_id"]]["correlation_id"] == "cid-2"


def test_intake_same_order_id_with_different_content_is_a_permanent_failure(
    intake, order_factory, sqs_event, sqs_record, lambda_context, orders, state_machine, logs: LogCapture
):
    order = order_factory()
    changed = {**order, "customer_id": "someone-else"}

    intake(sqs_event(sqs_record(order, message_id="m-1")), lambda_context)
    result = intake(sqs_event(sqs_record(changed, message_id="m-2")), lambda_context)

    assert result == {"batchItemFailures": [{"itemIdentifier": "m-2"}]}
    assert orders.get(order["order_id"])["order"] == order
    assert len(_executions(state_machine)) == 1
    (failed,) = logs.find("record failed", message_id="m-2")
    assert failed["error_type"] == "PayloadMismatch"
    assert failed["category"] == "permanent"
    (mismatch,) = logs.find("idempotency key reused with a different payload")
    assert mismatch["stored_payload_hash"] != mismatch["received_payload_hash"]
