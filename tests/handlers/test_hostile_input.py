"""Hostile input at intake and at the saga steps: classified, bounded, traceable, never lost.

SQS records are built from ``tests/events/sqs_receive_message.json``: the event shape Lambda
documents for SQS ("Using Lambda with Amazon SQS", example event), not our own factory.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest

import lambda_resilience.aws as aws_clients
from lambda_resilience.logs import MAX_LINE_BYTES
from order_domain.errors import InvalidOrder, UnknownOrder
from order_domain.orders import OrderRepository
from order_domain.status import OrderStatus
from tests.handlers.conftest import present

from .conftest import REGION, FakeLambdaClient, Inventory, LogCapture

AWS_EVENT = json.loads((Path(__file__).resolve().parents[1] / "events" / "sqs_receive_message.json").read_text())
SECRET_TOKEN = "tok_visa_SECRET4242"
SECRET_NAME = "Grace Secretname"
SECRET_LINE = "42 Confidential Road"


def aws_record(
    body: str, *, correlation_id: str | None = "cid-hostile", message_id: str | None = None
) -> dict[str, Any]:
    """One record in AWS's documented SQS event shape, with our body and correlation attribute."""
    record = copy.deepcopy(AWS_EVENT["Records"][0])
    record["body"] = body
    record["messageId"] = message_id or str(uuid.uuid4())
    if correlation_id is None:
        record["messageAttributes"] = {}
    else:
        record["messageAttributes"]["correlation_id"]["stringValue"] = correlation_id
    return record


@pytest.fixture
def customer_order(order_factory: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """An order carrying recognisable customer data, to prove it never reaches a log line."""

    def _make(**overrides: Any) -> dict[str, Any]:
        address = {"name": SECRET_NAME, "line1": SECRET_LINE, "city": "Leeds", "postcode": "LS1 1AA", "country": "GB"}
        return order_factory(payment_token=SECRET_TOKEN, shipping_address=address, **overrides)

    return _make


class Dlq:
    def __init__(self, url: str, failures_table: str) -> None:
        self.url = url
        self.failures_table = failures_table

    def messages(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        sqs = aws_clients.client("sqs")
        while True:
            batch = sqs.receive_message(
                QueueUrl=self.url, MaxNumberOfMessages=10, MessageAttributeNames=["All"], VisibilityTimeout=30
            ).get("Messages", [])
            if not batch:
                return out
            out.extend(batch)

    def failure(self, message_id: str) -> dict[str, Any] | None:
        item = aws_clients.client("dynamodb").get_item(
            TableName=self.failures_table, Key={"message_id": {"S": message_id}}
        )
        return aws_clients.from_item(item["Item"]) if "Item" in item else None


@pytest.fixture
def dlq(aws: None) -> Dlq:
    sqs = boto3.client("sqs", region_name=REGION)
    ddb = boto3.client("dynamodb", region_name=REGION)
    ddb.create_table(
        TableName="test-failures",
        KeySchema=[{"AttributeName": "message_id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "message_id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return Dlq(sqs.create_queue(QueueName="test-orders-dlq")["QueueUrl"], "test-failures")


@pytest.fixture
def intake(load: Callable[..., Any], dlq: Dlq) -> Any:
    return load("intake", DEAD_LETTER_QUEUE_URL=dlq.url, FAILURES_TABLE_NAME=dlq.failures_table)


def _executions(state_machine: str) -> list[dict[str, Any]]:
    sfn = boto3.client("stepfunctions", region_name=REGION)
    return list(sfn.list_executions(stateMachineArn=state_machine)["executions"])


def _raw_lines(capsys_out: str) -> list[str]:
    return [line for line in capsys_out.splitlines() if line.strip()]


def _valid_body(order: dict[str, Any]) -> str:
    return json.dumps(order)


def _hostile_bodies(order: dict[str, Any]) -> dict[str, str]:
    long_address = {**order["shipping_address"], "line1": SECRET_LINE + " " + "x" * 262_000}
    many_lines = {**order, "items": [{"sku": "SKU-A", "quantity": 1, "unit_price_cents": 1}] * 10_000}
    return {
        "deep_nesting": '{"order_id": ' + "[" * 3000 + "]" * 3000 + "}",
        "float_quantity": _valid_body(order).replace('"quantity": 2', '"quantity": 2.0'),
        "exponent_price": _valid_body(order).replace('"unit_price_cents": 1250', '"unit_price_cents": 1e3'),
        "oversize_address": json.dumps({**order, "shipping_address": long_address}),
        "ten_thousand_lines": json.dumps(many_lines),
        "array_body": "[]",
        "null_body": "null",
        "order_id_number": json.dumps({**order, "order_id": 5}),
        "items_string": json.dumps({**order, "items": "SKU-A"}),
        "nan": _valid_body(order).replace('"quantity": 2', '"quantity": NaN'),
        "huge_integer": _valid_body(order).replace('"quantity": 2', '"quantity": ' + "9" * 5000),
        "extra_property": json.dumps({**order, "notes": "x"}),
        "long_string": json.dumps({**order, "payment_token": SECRET_TOKEN * 40}),
    }


HOSTILE_KINDS = sorted(_hostile_bodies({"shipping_address": {}, "items": []}).keys())


@pytest.mark.parametrize("kind", HOSTILE_KINDS)
def test_intake_hostile_body_is_dead_lettered_permanent_on_first_receive(
    intake, customer_order, dlq: Dlq, state_machine, orders: OrderRepository, lambda_context, capsys, logs, kind
):
    order = customer_order()
    body = _hostile_bodies(order)[kind]
    record = aws_record(body)

    response = intake({"Records": [record]}, lambda_context)

    assert response == {"batchItemFailures": []}  # processed: it does not burn receives
    (dead,) = dlq.messages()
    attributes = {k: v["StringValue"] for k, v in dead["MessageAttributes"].items()}
    assert attributes["dlq_category"] == "permanent"
    assert attributes["dlq_error_type"] == "InvalidOrder"
    assert attributes["dlq_receive_count"] == "1"
    assert attributes["correlation_id"] == "cid-hostile"
    assert dead["Body"] == body  # the message itself is kept, whole
    assert _executions(state_machine) == []
    assert orders.find(order["order_id"]) is None
    lines = logs.find("record failed", category="permanent", error_type="InvalidOrder")
    assert len(lines) == 1
    for value in attributes.values():
        assert SECRET_TOKEN not in value and SECRET_NAME not in value and SECRET_LINE not in value


def test_intake_record_failed_log_is_bounded_and_holds_no_customer_data(
    intake, customer_order, dlq: Dlq, lambda_context, capsys, logs: LogCapture
):
    """The seed of the class: a 10,000-line order produced one 1.6 MB log line holding the token."""
    order = customer_order()
    bodies = _hostile_bodies(order)
    records = [aws_record(bodies[k]) for k in ("ten_thousand_lines", "oversize_address", "long_string")]

    intake({"Records": records}, lambda_context)

    raw = capsys.readouterr().out
    for line in _raw_lines(raw):
        assert len(line.encode()) <= MAX_LINE_BYTES
        for secret in (SECRET_TOKEN, SECRET_NAME, SECRET_LINE):
            assert secret not in line
    # What was read is gone from capsys: give the fixture's correlation check the lines.
    logs.lines.extend(json.loads(line) for line in _raw_lines(raw) if "_aws" not in line)


def test_intake_unexpected_error_is_unknown_retried_and_recorded(
    intake, customer_order, dlq: Dlq, monkeypatch, lambda_context, logs: LogCapture
):
    """A bug (KeyError) in a new deploy: retried through the redrive policy, never dead-lettered at once."""

    def broken(self: Any, order: dict[str, Any], correlation_id: str, **_: Any) -> str:
        raise KeyError("customer_id")

    monkeypatch.setattr(OrderRepository, "create", broken)
    record = aws_record(_valid_body(customer_order()))

    response = intake({"Records": [record]}, lambda_context)

    assert response == {"batchItemFailures": [{"itemIdentifier": record["messageId"]}]}
    assert dlq.messages() == []
    failure = dlq.failure(record["messageId"])
    assert failure is not None and failure["category"] == "unknown" and failure["error_type"] == "KeyError"
    assert logs.find("record failed", category="unknown")


def test_intake_same_message_id_twice_in_one_batch_is_processed_once(
    intake, order_factory, dlq: Dlq, state_machine, lambda_context, logs: LogCapture
):
    record = aws_record(_valid_body(order_factory()))

    response = intake({"Records": [record, copy.deepcopy(record)]}, lambda_context)

    assert response == {"batchItemFailures": []}
    assert len(_executions(state_machine)) == 1
    assert dlq.failure(record["messageId"]) is None  # no spurious failure row
    assert len(logs.find("order accepted")) == 1
    assert len(logs.find("repeated message in batch skipped", message_id=record["messageId"])) == 1


@pytest.mark.parametrize("cid", ['cid "quoted" with space', "ünïcödé-ID-✓", "x" * 128])
def test_intake_correlation_id_within_bounds_is_kept_verbatim(
    intake, order_factory, dlq: Dlq, state_machine, lambda_context, logs: LogCapture, cid
):
    order = order_factory()

    intake({"Records": [aws_record(_valid_body(order), correlation_id=cid)]}, lambda_context)

    (execution,) = _executions(state_machine)
    described = boto3.client("stepfunctions", region_name=REGION).describe_execution(
        executionArn=execution["executionArn"]
    )
    assert json.loads(described["input"])["correlation_id"] == cid
    assert logs.find("order accepted", correlation_id=cid)


@pytest.mark.parametrize("cid", ["x" * 129, "line\nbreak", "tab\there", "\u202eright-to-left"])
def test_intake_correlation_id_out_of_bounds_is_replaced_and_kept_separately(
    intake, order_factory, dlq: Dlq, lambda_context, logs: LogCapture, cid
):
    intake({"Records": [aws_record(_valid_body(order_factory()), correlation_id=cid)]}, lambda_context)

    (accepted,) = logs.find("order accepted")
    assert accepted["correlation_id"] != cid
    assert str(uuid.UUID(accepted["correlation_id"])) == accepted["correlation_id"]  # minted
    assert accepted["producer_correlation_id"] == cid.encode("unicode_escape").decode("ascii")


# --------------------------------------------------------------------------------------------
# Payment attempts: a declined customer pays again with another card


def _attempt(order: dict[str, Any], n: int, token: str) -> dict[str, Any]:
    return {**order, "payment_attempt": n, "payment_token": token}


def test_intake_attempt_2_after_a_compensated_attempt_starts_a_new_saga(
    intake, order_factory, seed_order, orders: OrderRepository, dlq: Dlq, state_machine, lambda_context, logs
):
    first = order_factory(payment_attempt=1, payment_token="tok_decline")
    seed_order(first, OrderStatus.COMPENSATED)
    second = _attempt(first, 2, "tok_visa_new")

    response = intake({"Records": [aws_record(_valid_body(second), correlation_id="cid-attempt-2")]}, lambda_context)

    assert response == {"batchItemFailures": []}
    assert [e["name"] for e in _executions(state_machine)] == [f"order-{first['order_id']}-attempt-2"]
    item = orders.get(first["order_id"])
    assert item["status"] == "RECEIVED" and item["payment_attempt"] == 2
    assert item["order"]["payment_token"] == "tok_visa_new"  # the old token is not kept
    assert [a["attempt"] for a in item["attempts"]] == [1, 2]
    assert item["attempts"][1]["previous_outcome"] == "COMPENSATED"
    assert item["attempts"][1]["correlation_id"] == "cid-attempt-2"
    assert [h.get("attempt", 1) for h in item["history"]][-1] == 2


def test_intake_attempt_2_while_attempt_1_runs_is_transient_and_kept(
    intake, order_factory, seed_order, orders: OrderRepository, dlq: Dlq, state_machine, lambda_context, logs
):
    first = order_factory(payment_attempt=1)
    seed_order(first, OrderStatus.PAYMENT_CHARGED)
    record = aws_record(_valid_body(_attempt(first, 2, "tok_visa_new")))

    response = intake({"Records": [record]}, lambda_context)

    assert response == {"batchItemFailures": [{"itemIdentifier": record["messageId"]}]}
    assert dlq.messages() == []
    assert present(dlq.failure(record["messageId"]))["category"] == "transient"
    assert orders.get(first["order_id"])["payment_attempt"] == 1
    assert _executions(state_machine) == []


@pytest.mark.parametrize("status", [OrderStatus.COMPLETED, OrderStatus.NEEDS_ATTENTION])
def test_intake_attempt_2_after_completed_or_parked_order_is_permanent(
    intake, order_factory, seed_order, orders: OrderRepository, dlq: Dlq, state_machine, lambda_context, logs, status
):
    first = order_factory(payment_attempt=1)
    seed_order(first, status)

    intake({"Records": [aws_record(_valid_body(_attempt(first, 2, "tok_visa_new")))]}, lambda_context)

    (dead,) = dlq.messages()
    assert dead["MessageAttributes"]["dlq_error_type"]["StringValue"] == "OrderClosed"
    assert orders.get(first["order_id"])["payment_attempt"] == 1
    assert _executions(state_machine) == []


def test_intake_late_repeat_of_a_replaced_attempt_is_acknowledged_without_a_saga(
    intake, order_factory, seed_order, orders: OrderRepository, dlq: Dlq, state_machine, lambda_context, logs
):
    first = order_factory(payment_attempt=1, payment_token="tok_decline")
    seed_order(first, OrderStatus.COMPENSATED)
    intake({"Records": [aws_record(_valid_body(_attempt(first, 2, "tok_visa_new")))]}, lambda_context)

    response = intake({"Records": [aws_record(_valid_body({**first, "customer_id": "changed"}))]}, lambda_context)

    assert response == {"batchItemFailures": []}
    assert dlq.messages() == []
    assert [e["name"] for e in _executions(state_machine)] == [f"order-{first['order_id']}-attempt-2"]
    assert logs.find("order accepted", recorded="superseded")


# --------------------------------------------------------------------------------------------
# Steps that trust nothing


def test_reserve_unknown_order_is_refused_before_any_stock_moves(
    load, saga_input, order_factory, inventory: Inventory, lambda_context, logs: LogCapture
):
    inventory.seed(**{"SKU-A": 10, "SKU-B": 10})
    reserve = load("reserve_inventory")

    with pytest.raises(UnknownOrder):
        reserve(saga_input(order_factory()), lambda_context)

    assert (inventory.available("SKU-A"), inventory.available("SKU-B")) == (10, 10)
    assert logs.find("reserve-inventory failed", error_type="UnknownOrder", category="permanent")


@pytest.mark.parametrize(
    ("function", "operation"), [("charge_payment", "charge-payment"), ("ship_order", "ship-order")]
)
def test_forward_step_unknown_order_is_refused_before_the_provider_is_called(
    load, providers: FakeLambdaClient, saga_input, order_factory, lambda_context, logs: LogCapture, function, operation
):
    step = load(function)

    with pytest.raises(UnknownOrder):
        step(saga_input(order_factory()), lambda_context)

    assert providers.calls == []
    assert logs.find(f"{operation} failed", error_type="UnknownOrder")


@pytest.mark.parametrize(
    ("function", "operation"), [("refund_payment", "refund-payment"), ("release_inventory", "release-inventory")]
)
def test_compensation_for_unknown_order_succeeds_with_nothing_to_undo(
    load,
    providers: FakeLambdaClient,
    saga_input,
    order_factory,
    inventory: Inventory,
    lambda_context,
    logs,
    function,
    operation,
):
    order = order_factory()
    step = load(function)

    result = step(saga_input(order), lambda_context)

    assert result["status"] == "nothing_to_undo" and result["reason"] == "unknown order"
    assert providers.calls == []
    assert inventory.reservation(order["order_id"]) is None  # no tombstone for an order that never existed
    (done,) = logs.find(f"{operation} done")
    assert done["result"]["reason"] == "unknown order"


def test_reserve_ignores_quantities_in_the_step_input(
    load, saga_input, order_factory, seed_order, inventory: Inventory, lambda_context, logs
):
    """A step input with quantity -5 used to *increase* stock: quantities now come from the orders table."""
    inventory.seed(**{"SKU-A": 10, "SKU-B": 10})
    order = order_factory()
    seed_order(order)
    hostile = {**saga_input(order), "order": {"items": [{"sku": "SKU-A", "quantity": -5, "unit_price_cents": 1}]}}

    load("reserve_inventory")(hostile, lambda_context)

    assert (inventory.available("SKU-A"), inventory.available("SKU-B")) == (8, 9)  # the recorded 2 + 1


def test_reserve_refuses_a_non_positive_quantity_even_from_the_table(
    load, saga_input, order_factory, seed_order, orders: OrderRepository, inventory: Inventory, lambda_context, logs
):
    inventory.seed(**{"SKU-A": 10, "SKU-B": 10})
    order = order_factory()
    seed_order(order)
    bad_items = [{"sku": "SKU-A", "quantity": -5, "unit_price_cents": 1}]
    aws_clients.client("dynamodb").update_item(
        TableName=orders.table_name,
        Key={"order_id": {"S": order["order_id"]}},
        UpdateExpression="SET #o.#i = :i",
        ExpressionAttributeNames={"#o": "order", "#i": "items"},
        ExpressionAttributeValues=aws_clients.to_item({":i": bad_items}),
    )

    with pytest.raises(InvalidOrder):
        load("reserve_inventory")(saga_input(order), lambda_context)

    assert inventory.available("SKU-A") == 10
