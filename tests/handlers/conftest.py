"""Fixtures for handler tests: moto, the stack's tables, orders and events, handlers run in-process.

Everything AWS goes to moto (``mock_aws``). Handlers are loaded from their own asset directory
with :func:`load_handler` (a cold start under the function's environment).
The sandbox provider functions that charge/refund/ship invoke with ``lambda.invoke`` are served
by a fake Lambda client that runs the loaded sandbox handler in-process (moto's Lambda needs Docker).
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib.util
import io
import itertools
import json
import logging
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from unittest import mock

import boto3
import pytest
from aws_lambda_powertools.utilities.validation import validate
from botocore.client import BaseClient
from botocore.exceptions import ClientError

import lambda_resilience.aws as aws_clients
import order_domain.env as env_names
from lambda_resilience.testing import FakeLambdaContext, new_process_logger
from order_domain import saga_start
from order_domain.inventory import reservation_key
from order_domain.model import ORDER_SCHEMA
from order_domain.orders import OrderRepository
from order_domain.status import OrderStatus
from tests.moto_session import mocked_aws

Handler = Callable[[Any, Any], Any]

ROOT = Path(__file__).resolve().parents[2]
LAMBDAS = ROOT / "lambdas"
REGION = "us-east-1"
ACCOUNT = "123456789012"
ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/x"
QUEUE_ARN = f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders"
PAYMENT_FUNCTION = "sandbox-payment"
CARRIER_FUNCTION = "sandbox-carrier"

_ids = itertools.count(1)


# --------------------------------------------------------------------------------------------
# AWS: moto, tables, state machine, environment


@pytest.fixture
def aws() -> Iterator[None]:
    """Every AWS call of the test goes to moto; no cached client survives into or out of it."""
    aws_clients.reset_clients()
    with mocked_aws():
        yield
    aws_clients.reset_clients()


@dataclass(frozen=True)
class Tables:
    idempotency: str
    orders: str
    inventory: str
    ledger: str


#: The orders table's GSI as the stack defines it (stacks/order_pipeline_stack.py): the sweeper queries it.
ORDERS_STATUS_INDEX: dict[str, Any] = {
    "IndexName": "by-status",
    "KeySchema": [
        {"AttributeName": "status", "KeyType": "HASH"},
        {"AttributeName": "updated_at", "KeyType": "RANGE"},
    ],
    "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["correlation_id"]},
}


#: The orders table's sparse GSI of unsettled orders (stacks/order_constructs/data.py; order_domain.settlement).
ORDERS_UNSETTLED_INDEX: dict[str, Any] = {
    "IndexName": "unsettled",
    "KeySchema": [
        {"AttributeName": "settle_shard", "KeyType": "HASH"},
        {"AttributeName": "settle_due", "KeyType": "RANGE"},
    ],
    "Projection": {"ProjectionType": "KEYS_ONLY"},
}


def _create_table(
    ddb: Any,
    name: str,
    hash_key: str,
    range_key: str | None = None,
    ttl: str | None = None,
    index: dict[str, Any] | list[dict[str, Any]] | None = None,
) -> None:
    keys = [{"AttributeName": hash_key, "KeyType": "HASH"}]
    attributes = [{"AttributeName": hash_key, "AttributeType": "S"}]
    if range_key:
        keys.append({"AttributeName": range_key, "KeyType": "RANGE"})
        attributes.append({"AttributeName": range_key, "AttributeType": "S"})
    extra: dict[str, Any] = {}
    indexes = [index] if isinstance(index, dict) else index or []
    for one in indexes:
        attributes.extend({"AttributeName": k["AttributeName"], "AttributeType": "S"} for k in one["KeySchema"])
    if indexes:
        extra["GlobalSecondaryIndexes"] = indexes
    ddb.create_table(
        TableName=name, KeySchema=keys, AttributeDefinitions=attributes, BillingMode="PAY_PER_REQUEST", **extra
    )
    if ttl:
        ddb.update_time_to_live(TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl})


@pytest.fixture
def tables(aws: None) -> Tables:
    """The stack's four tables, keyed as constructs_lib.tables and the stack define them (GSI included)."""
    names = Tables(
        idempotency="test-idempotency",
        orders="test-orders",
        inventory="test-inventory",
        ledger="test-sandbox-ledger",
    )
    ddb = boto3.client("dynamodb", region_name=REGION)
    _create_table(ddb, names.idempotency, "id", ttl="expiration")
    _create_table(ddb, names.orders, "order_id", index=[ORDERS_STATUS_INDEX, ORDERS_UNSETTLED_INDEX])
    _create_table(ddb, names.inventory, "pk")
    _create_table(ddb, names.ledger, "pk", "sk")
    return names


@pytest.fixture
def state_machine(aws: None) -> str:
    """A trivial Standard state machine for intake to start executions on; returns its ARN."""
    sfn = boto3.client("stepfunctions", region_name=REGION)
    definition = {"StartAt": "Noop", "States": {"Noop": {"Type": "Pass", "End": True}}}
    return str(
        sfn.create_state_machine(name="order-saga", definition=json.dumps(definition), roleArn=ROLE_ARN)[
            "stateMachineArn"
        ]
    )


@dataclass(frozen=True)
class NeedsAttentionQueue:
    """The needs-attention queue in moto: FinalizeOrder parks orders here (NEEDS_ATTENTION_QUEUE_URL)."""

    url: str

    def messages(self) -> list[dict[str, Any]]:
        """Every message currently in the queue (bodies parsed), without hiding them from a later read."""
        response = aws_clients.client("sqs").receive_message(
            QueueUrl=self.url,
            MaxNumberOfMessages=10,
            MessageAttributeNames=["All"],
            VisibilityTimeout=0,
            WaitTimeSeconds=0,
        )
        return [
            {"body": json.loads(m["Body"]), "attributes": m.get("MessageAttributes", {})}
            for m in response.get("Messages", [])
        ]


@pytest.fixture
def needs_attention_queue(aws: None) -> NeedsAttentionQueue:
    sqs = boto3.client("sqs", region_name=REGION)
    return NeedsAttentionQueue(sqs.create_queue(QueueName="test-needs-attention")["QueueUrl"])


@pytest.fixture
def pipeline_env(tables: Tables, state_machine: str, needs_attention_queue: NeedsAttentionQueue) -> dict[str, str]:
    """Environment variables the stack gives the functions (order_domain/env.py names)."""
    return {
        env_names.IDEMPOTENCY_TABLE_NAME: tables.idempotency,
        env_names.ORDERS_TABLE_NAME: tables.orders,
        env_names.INVENTORY_TABLE_NAME: tables.inventory,
        env_names.LEDGER_TABLE_NAME: tables.ledger,
        env_names.STATE_MACHINE_ARN: state_machine,
        env_names.PAYMENT_PROVIDER_FUNCTION: PAYMENT_FUNCTION,
        env_names.CARRIER_FUNCTION: CARRIER_FUNCTION,
        env_names.NEEDS_ATTENTION_QUEUE_URL: needs_attention_queue.url,
    }


# --------------------------------------------------------------------------------------------
# Logs: Powertools Logger writes one JSON object per line to stdout


class _CurrentStdout:
    """Writes to whatever ``sys.stdout`` is at write time (capsys swaps it between test phases)."""

    def write(self, text: str) -> int:
        return sys.stdout.write(text)

    def flush(self) -> None:
        sys.stdout.flush()


CURRENT_STDOUT = _CurrentStdout()


def route_powertools_logs() -> None:
    """Point every Powertools Logger handler at the current ``sys.stdout``.

    A Powertools logger is configured once per service name and keeps the stream it was created
    with (a previous test's capture, or this test's setup-phase capture), so it is re-pointed
    after every handler load.
    """
    for candidate in list(logging.Logger.manager.loggerDict.values()):
        handler = getattr(candidate, "powertools_handler", None)
        if isinstance(handler, logging.StreamHandler) and handler.stream is not CURRENT_STDOUT:
            # Not setStream(): it flushes the old stream, which may be a capture already closed.
            with handler.lock or contextlib.nullcontext():
                handler.stream = CURRENT_STDOUT


class LogCapture:
    """Captured stdout split into Logger lines and EMF metric blobs (Metrics also prints JSON)."""

    def __init__(self, capsys: pytest.CaptureFixture[str]) -> None:
        self._capsys = capsys
        self.lines: list[dict[str, Any]] = []
        self.metric_blobs: list[dict[str, Any]] = []

    def read(self) -> list[dict[str, Any]]:
        """Consume what was written so far; returns every Logger line captured in the test."""
        for raw in self._capsys.readouterr().out.splitlines():
            if not raw.strip():
                continue
            try:
                parsed = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise AssertionError(f"stdout line is not JSON: {raw!r}") from exc
            (self.metric_blobs if "_aws" in parsed else self.lines).append(parsed)
        return self.lines

    def find(self, message: str | None = None, **fields: Any) -> list[dict[str, Any]]:
        """Logger lines whose message starts with ``message`` and whose fields equal ``fields``."""
        self.read()
        return [
            line
            for line in self.lines
            if (message is None or str(line.get("message", "")).startswith(message))
            and all(line.get(k) == v for k, v in fields.items())
        ]

    def metric_total(self, name: str) -> float:
        """Sum of metric ``name`` over every EMF blob flushed so far."""
        self.read()
        total = 0.0
        for blob in self.metric_blobs:
            value = blob.get(name)
            if value is None:
                continue
            total += sum(value) if isinstance(value, list) else value
        return total

    def assert_correlated(self) -> None:
        """Every Logger line carries a non-empty ``correlation_id``."""
        missing = [line for line in self.read() if not line.get("correlation_id")]
        assert not missing, f"log lines without correlation_id: {missing}"


@pytest.fixture
def logs(capsys: pytest.CaptureFixture[str]) -> Iterator[LogCapture]:
    route_powertools_logs()
    capture = LogCapture(capsys)
    yield capture
    capture.assert_correlated()


# --------------------------------------------------------------------------------------------
# Handlers

_cold_starts = itertools.count()


def load_handler(code_dir: Path, handler: str, env: dict[str, str]) -> Handler:
    """Import ``handler`` (``module.function``) from ``code_dir`` with ``env`` set: a fresh cold start each call."""
    module_name, _, function_name = handler.rpartition(".")
    name = f"_handler_under_test_{next(_cold_starts)}_{code_dir.name}"
    spec = importlib.util.spec_from_file_location(name, code_dir / f"{module_name}.py")
    assert spec is not None and spec.loader is not None, f"no {module_name}.py in {code_dir}"
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and typing resolve names through sys.modules
    new_process_logger(env.get("POWERTOOLS_SERVICE_NAME", "service_undefined"))
    with mock.patch.dict(os.environ, env):
        spec.loader.exec_module(module)
    function: Handler = getattr(module, function_name)
    return function


def invoke_json(function: Handler, event: Any, context: Any) -> tuple[str, bool]:
    """What Lambda answers: the JSON result, or for an unhandled exception its error payload; and whether it errored."""
    try:
        return json.dumps(function(event, context), default=str), False
    except Exception as exc:  # the runtime turns a handler's exception into {"errorType", "errorMessage"}
        return json.dumps({"errorType": type(exc).__name__, "errorMessage": str(exc)}), True


@pytest.fixture
def lambda_context() -> FakeLambdaContext:
    return FakeLambdaContext(function_name="test-function", timeout_seconds=300)


@pytest.fixture
def load(pipeline_env: dict[str, str], logs: LogCapture) -> Callable[..., Handler]:
    """``load("reserve_inventory", **extra_env)``: a cold start of ``lambdas/<dir>/handler.py``."""

    def _load(function_dir: str, **extra_env: str) -> Handler:
        env = {**pipeline_env, "POWERTOOLS_SERVICE_NAME": function_dir.replace("_", "-"), **extra_env}
        handler = load_handler(LAMBDAS / function_dir, "handler.handler", env)
        route_powertools_logs()
        return handler

    return _load


@pytest.fixture
def charge(load: Callable[..., Handler], providers: Any) -> Handler:
    """ChargePayment's handler, cold-started against the in-process providers."""
    return load("charge_payment")


@pytest.fixture
def refund(load: Callable[..., Handler], providers: Any) -> Handler:
    """RefundPayment's handler, cold-started against the in-process providers."""
    return load("refund_payment")


@dataclass
class FakeLambdaClient:
    """Stands in for ``boto3.client("lambda")``: ``invoke`` runs a loaded handler in-process.

    Each invoke runs in a copy of the caller's context, as a separate function would: the
    provider's correlation scope cannot clear the calling step's log keys.
    """

    functions: dict[str, Handler]
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    failures: list[BaseException] = field(default_factory=list)

    def fail_next(self, exc: BaseException) -> None:
        """Raise ``exc`` from the next invoke instead of running the function."""
        self.failures.append(exc)

    def invoke(self, *, FunctionName: str, Payload: bytes, InvocationType: str = "RequestResponse", **_: Any) -> Any:
        event = json.loads(Payload)
        self.calls.append((FunctionName, event))
        if self.failures:
            raise self.failures.pop(0)
        function = self.functions[FunctionName]
        context = FakeLambdaContext(function_name=FunctionName)
        body, errored = contextvars.copy_context().run(invoke_json, function, event, context)
        response: dict[str, Any] = {
            "StatusCode": 200,
            "ExecutedVersion": "$LATEST",
            "Payload": io.BytesIO(body.encode()),
        }
        if errored:
            response["FunctionError"] = "Unhandled"
        return response

    def requests_to(self, function_name: str) -> list[dict[str, Any]]:
        return [event for name, event in self.calls if name == function_name]


@pytest.fixture
def providers(load: Callable[..., Handler], monkeypatch: pytest.MonkeyPatch) -> FakeLambdaClient:
    """The sandbox payment provider and carrier, reachable through ``aws_clients.client("lambda")``."""
    fake = FakeLambdaClient(
        functions={PAYMENT_FUNCTION: load("sandbox_payment"), CARRIER_FUNCTION: load("sandbox_carrier")}
    )
    monkeypatch.setitem(aws_clients._clients, "lambda", fake)
    return fake


# --------------------------------------------------------------------------------------------
# Orders, events, saga input


@pytest.fixture
def order_factory() -> Callable[..., dict[str, Any]]:
    """``order_factory(**overrides)``: a schema-valid order (validated against ORDER_SCHEMA)."""

    def _make(**overrides: Any) -> dict[str, Any]:
        order: dict[str, Any] = {
            "order_id": f"order-{next(_ids)}-{uuid.uuid4().hex[:6]}",
            "customer_id": "customer-1",
            "currency": "EUR",
            "payment_token": "tok_visa",
            "items": [
                {"sku": "SKU-A", "quantity": 2, "unit_price_cents": 1250},
                {"sku": "SKU-B", "quantity": 1, "unit_price_cents": 999},
            ],
            "shipping_address": {
                "name": "Ada Lovelace",
                "line1": "1 Analytical Way",
                "city": "London",
                "postcode": "N1 1AA",
                "country": "GB",
            },
        }
        order.update(overrides)
        validate(event=order, schema=ORDER_SCHEMA)
        return order

    return _make


def make_sqs_record(
    body: str | dict[str, Any],
    *,
    correlation_id: str | None = None,
    message_id: str | None = None,
    receive_count: int = 1,
    traceparent: str | None = None,
) -> dict[str, Any]:
    """One record of a Lambda SQS event; a dict body is JSON-encoded."""
    text = body if isinstance(body, str) else json.dumps(body)
    given = {"correlation_id": correlation_id, "traceparent": traceparent}
    attributes: dict[str, Any] = {
        name: {"stringValue": value, "stringListValues": [], "binaryListValues": [], "dataType": "String"}
        for name, value in given.items()
        if value is not None
    }
    now_ms = str(int(time.time() * 1000))
    return {
        "messageId": message_id or str(uuid.uuid4()),
        "receiptHandle": f"receipt-{uuid.uuid4().hex}",
        "body": text,
        "attributes": {
            "ApproximateReceiveCount": str(receive_count),
            "SentTimestamp": now_ms,
            "SenderId": "AIDAEXAMPLE",
            "ApproximateFirstReceiveTimestamp": now_ms,
        },
        "messageAttributes": attributes,
        "md5OfBody": "0" * 32,
        "eventSource": "aws:sqs",
        "eventSourceARN": QUEUE_ARN,
        "awsRegion": REGION,
    }


@pytest.fixture
def sqs_record() -> Callable[..., dict[str, Any]]:
    """``sqs_record(body, correlation_id=..., message_id=..., receive_count=..., traceparent=...)``."""
    return make_sqs_record


@pytest.fixture
def sqs_event() -> Callable[..., dict[str, Any]]:
    """``sqs_event(*records)``: each record is a full record (from ``sqs_record``), an order dict or a raw body."""

    def _event(*records: dict[str, Any] | str) -> dict[str, Any]:
        built = [r if isinstance(r, dict) and "messageId" in r else make_sqs_record(r) for r in records]
        return {"Records": built}

    return _event


@pytest.fixture
def saga_input() -> Callable[..., dict[str, Any]]:
    """``saga_input(order, correlation_id=None)``: the execution input intake starts the saga with
    (references only: order ID, payment attempt, correlation ID)."""

    def _input(order: dict[str, Any], correlation_id: str | None = None) -> dict[str, Any]:
        return saga_start.saga_input(
            order["order_id"], int(order.get("payment_attempt", 1)), correlation_id or str(uuid.uuid4())
        )

    return _input


# --------------------------------------------------------------------------------------------
# Table state: seeding and reading


_FORWARD = [
    OrderStatus.RECEIVED,
    OrderStatus.INVENTORY_RESERVED,
    OrderStatus.PAYMENT_CHARGED,
    OrderStatus.SHIPPED,
    OrderStatus.COMPLETED,
]


@pytest.fixture
def orders(tables: Tables) -> OrderRepository:
    return OrderRepository(tables.orders, client=aws_clients.client("dynamodb"))


@pytest.fixture
def seed_order(orders: OrderRepository) -> Callable[..., dict[str, Any]]:
    """``seed_order(order, status)``: record the order and walk it (legally) to ``status``."""

    def _seed(
        order: dict[str, Any], status: OrderStatus = OrderStatus.RECEIVED, correlation_id: str = "seed"
    ) -> dict[str, Any]:
        orders.create(order, correlation_id)
        if status in _FORWARD:
            path = _FORWARD[1 : _FORWARD.index(status) + 1]
        else:
            path = [OrderStatus.COMPENSATING] + ([status] if status != OrderStatus.COMPENSATING else [])
        for step in path:
            assert orders.transition(order["order_id"], step) == "moved"
        return orders.get(order["order_id"])

    return _seed


@dataclass
class Inventory:
    table: str

    def seed(self, **available: int) -> None:
        ddb = aws_clients.client("dynamodb")
        for sku, count in available.items():
            ddb.put_item(TableName=self.table, Item=aws_clients.to_item({"pk": f"sku#{sku}", "available": count}))

    def available(self, sku: str) -> int | None:
        response = aws_clients.client("dynamodb").get_item(
            TableName=self.table, Key=aws_clients.to_item({"pk": f"sku#{sku}"}), ConsistentRead=True
        )
        return aws_clients.from_item(response["Item"])["available"] if "Item" in response else None

    def reservation(self, order_id: str, attempt: int = 1) -> dict[str, Any] | None:
        response = aws_clients.client("dynamodb").get_item(
            TableName=self.table, Key=reservation_key(order_id, attempt), ConsistentRead=True
        )
        return aws_clients.from_item(response["Item"]) if "Item" in response else None


@pytest.fixture
def inventory(tables: Tables) -> Inventory:
    return Inventory(tables.inventory)


def scan(table: str) -> list[dict[str, Any]]:
    ddb = aws_clients.client("dynamodb")
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
    while True:
        page = ddb.scan(**kwargs)
        items.extend(aws_clients.from_item(i) for i in page.get("Items", []))
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


@dataclass
class LedgerView:
    """The sandbox providers' ledger: operation records and request records."""

    table: str

    def ops(self, provider: str | None = None) -> list[dict[str, Any]]:
        return [i for i in scan(self.table) if i["sk"] == "op" and (provider is None or i["provider"] == provider)]

    def op(self, provider: str, key: str) -> dict[str, Any] | None:
        found = [i for i in self.ops(provider) if i["idempotency_key"] == key]
        return found[0] if found else None

    def requests(self, provider: str | None = None, key: str | None = None) -> list[dict[str, Any]]:
        items = [i for i in scan(self.table) if i["pk"].startswith("req#")]
        items = [i for i in items if (provider is None or i["provider"] == provider)]
        items = [i for i in items if (key is None or i["idempotency_key"] == key)]
        return sorted(items, key=lambda i: i["sk"])


@pytest.fixture
def ledger(tables: Tables) -> LedgerView:
    return LedgerView(tables.ledger)


@dataclass
class IdempotencyView:
    table: str

    def records(self) -> list[dict[str, Any]]:
        return scan(self.table)

    def get(self, key: str) -> dict[str, Any] | None:
        response = aws_clients.client("dynamodb").get_item(
            TableName=self.table, Key=aws_clients.to_item({"id": key}), ConsistentRead=True
        )
        return aws_clients.from_item(response["Item"]) if "Item" in response else None

    def forget(self, key: str) -> None:
        """Delete a record: as if it expired, or the function crashed after its effect but before saving."""
        aws_clients.client("dynamodb").delete_item(TableName=self.table, Key=aws_clients.to_item({"id": key}))


@pytest.fixture
def idempotency_records(tables: Tables) -> IdempotencyView:
    return IdempotencyView(tables.idempotency)


T = TypeVar("T")


def present(value: T | None) -> T:
    """``value``, asserted not None: the test expects the item to exist."""
    assert value is not None
    return value


# --------------------------------------------------------------------------------------------
# The step's own outcome write failing (decision 0024)


class Died(BaseException):
    """The process dies (not an ``Exception``: nothing in the function catches it)."""


@contextmanager
def failing_outcome_write(status: str, make: Callable[[], BaseException], times: int = 1) -> Iterator[list[str]]:
    """The orders table's UpdateItem that moves an order to ``status`` fails ``times`` times with
    ``make()`` (before DynamoDB applies it); ``before`` hooks run instead when ``make`` returns None."""
    original = BaseClient._make_api_call
    seen: list[str] = []

    def call(self: Any, operation: str, params: dict[str, Any]) -> Any:
        to = (params.get("ExpressionAttributeValues") or {}).get(":to", {}).get("S")
        if operation == "UpdateItem" and to == status and len(seen) < times:
            seen.append(str(params["Key"]["order_id"]["S"]))
            raise make()
        return original(self, operation, params)

    with mock.patch.object(BaseClient, "_make_api_call", call):
        yield seen


def throttled() -> ClientError:
    return ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "UpdateItem")
