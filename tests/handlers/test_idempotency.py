"""shared/idempotency.py and shared/step.py used directly: business keys, TTL, mismatch, errors."""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

import pytest
from aws_lambda_powertools import Logger, Metrics

import shared.aws
from ops.local.lambda_runtime import patched_environ
from shared.config import DEFAULT_IDEMPOTENCY_TTL_SECONDS
from shared.correlation import correlation_scope
from shared.exceptions import (
    InvalidStepInput,
    MissingIdempotencyKey,
    OperationInProgress,
    PayloadMismatch,
    PaymentDeclined,
    TransientStepError,
    UnknownStepError,
)
from shared.idempotency import IdempotentOperation, business_key, make_persistence
from shared.step import build_step_handler

from .conftest import IdempotencyView, LogCapture, Tables, route_powertools_logs

TTL = 7200


@pytest.fixture
def logger(logs: LogCapture) -> Logger:
    built = Logger(service="idempotency-test")
    route_powertools_logs()
    return built


@pytest.fixture
def make_operation(tables: Tables, logger: Logger):
    def _make(fn, *, metrics: Metrics | None = None, ttl: int = TTL):
        operation = IdempotentOperation(
            persistence=make_persistence(tables.idempotency), ttl_seconds=ttl, logger=logger, metrics=metrics
        )
        return operation(fn)

    return _make


class Recorder:
    """A step body (a real function: Powertools reads its ``__qualname__``) that counts its runs."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

        def body(command: dict[str, Any]) -> dict[str, Any]:
            self.calls.append(command)
            return {"ran": len(self.calls), "payload": command["payload"]}

        self.fn = body


def _payload_hash(payload: dict[str, Any]) -> str:
    return hashlib.md5(json.dumps(payload, sort_keys=True).encode()).hexdigest()  # Powertools' default hash


def test_idempotency_record_id_is_the_business_key_verbatim_with_ttl(
    make_operation, idempotency_records: IdempotencyView, lambda_context, logger
):
    body = Recorder()
    run = make_operation(body.fn)
    key = business_key("order-1", "charge-payment", 1)
    assert key == "order-1#charge-payment#attempt-1"

    with correlation_scope(logger, "cid-ttl"):
        before = int(time.time())
        result = run({"idempotency_key": key, "payload": {"order_id": "order-1"}}, lambda_context)
        after = int(time.time())

    assert result == {"ran": 1, "payload": {"order_id": "order-1"}}
    (record,) = idempotency_records.records()
    assert record["id"] == "order-1#charge-payment#attempt-1"
    assert record["status"] == "COMPLETED"
    assert before + TTL <= record["expiration"] <= after + TTL
    assert json.loads(record["data"]) == result
    assert record["validation"] == _payload_hash({"order_id": "order-1"})


def test_idempotency_duplicate_returns_first_result_logs_and_counts_it(
    make_operation, lambda_context, logger, logs: LogCapture
):
    body = Recorder()
    metrics = Metrics(namespace="OrderPipelineTest", service="idempotency-test")
    run = make_operation(body.fn, metrics=metrics)
    command = {"idempotency_key": "order-2#reserve-inventory#attempt-1", "payload": {"order_id": "order-2"}}

    with correlation_scope(logger, "cid-dup"):
        first = run(command, lambda_context)
        second = run(command, lambda_context)
    metrics.flush_metrics()

    assert second == first
    assert len(body.calls) == 1
    (line,) = logs.find("duplicate suppressed")
    assert line["idempotency_key"] == "order-2#reserve-inventory#attempt-1"
    assert line["correlation_id"] == "cid-dup"
    assert logs.metric_total("DuplicatesSuppressed") == 1


def test_idempotency_same_key_different_payload_raises_payload_mismatch_and_logs_both_hashes(
    make_operation, idempotency_records: IdempotencyView, lambda_context, logger, logs: LogCapture
):
    body = Recorder()
    run = make_operation(body.fn)
    key = "order-3#charge-payment#attempt-1"
    original, changed = {"order_id": "order-3", "amount": 100}, {"order_id": "order-3", "amount": 999}

    with correlation_scope(logger, "cid-mismatch"):
        run({"idempotency_key": key, "payload": original}, lambda_context)
        with pytest.raises(PayloadMismatch):
            run({"idempotency_key": key, "payload": changed}, lambda_context)

    assert len(body.calls) == 1
    (line,) = logs.find("idempotency key reused with a different payload")
    assert line["level"] == "ERROR"
    assert line["idempotency_key"] == key
    assert line["stored_payload_hash"] == _payload_hash(original)
    assert line["received_payload_hash"] == _payload_hash(changed)
    assert line["correlation_id"] == "cid-mismatch"
    assert idempotency_records.get(key)["status"] == "COMPLETED"  # the original record is untouched


@pytest.mark.parametrize(
    "command",
    [
        {"payload": {"order_id": "order-4"}},
        {"idempotency_key": "", "payload": {"order_id": "order-4"}},
        {"idempotency_key": "   ", "payload": {"order_id": "order-4"}},
        {"idempotency_key": 42, "payload": {"order_id": "order-4"}},
    ],
)
def test_idempotency_command_without_key_raises_missing_idempotency_key(
    make_operation, idempotency_records: IdempotencyView, lambda_context, command
):
    body = Recorder()
    run = make_operation(body.fn)

    with pytest.raises(MissingIdempotencyKey):
        run(command, lambda_context)

    assert body.calls == []
    assert idempotency_records.records() == []


@pytest.mark.parametrize(
    ("order_id", "operation", "attempt"), [("", "charge", 1), ("order-1", "", 1), ("order-1", "charge", 0)]
)
def test_idempotency_business_key_refuses_incomplete_identity(order_id, operation, attempt):
    with pytest.raises(MissingIdempotencyKey):
        business_key(order_id, operation, attempt)


def test_idempotency_record_in_progress_elsewhere_raises_operation_in_progress(
    make_operation, tables: Tables, lambda_context
):
    """A concurrent invocation holds the record (Powertools INPROGRESS, lock not yet expired)."""
    key = "order-5#charge-payment#attempt-1"
    now = time.time()
    shared.aws.client("dynamodb").put_item(
        TableName=tables.idempotency,
        Item={
            "id": {"S": key},
            "status": {"S": "INPROGRESS"},
            "expiration": {"N": str(int(now) + TTL)},
            "in_progress_expiration": {"N": str(int((now + 60) * 1000))},
            "validation": {"S": _payload_hash({"order_id": "order-5"})},
        },
    )
    body = Recorder()

    with pytest.raises(OperationInProgress):
        make_operation(body.fn)({"idempotency_key": key, "payload": {"order_id": "order-5"}}, lambda_context)
    assert body.calls == []


@pytest.fixture
def step_factory(pipeline_env: dict[str, str], logs: LogCapture):
    """``step_factory(operation, action, **env)``: a step handler built by shared.step, as a module would."""

    def _build(operation: str, action, **extra_env: str):
        with patched_environ({**pipeline_env, "POWERTOOLS_SERVICE_NAME": operation, **extra_env}):
            handler = build_step_handler(operation, lambda settings: action)
        route_powertools_logs()
        return handler

    return _build


def test_step_transient_exception_surfaces_as_transient_step_error_and_retry_runs(
    step_factory, saga_input, order_factory, idempotency_records: IdempotencyView, lambda_context, logs: LogCapture
):
    outcomes: list[BaseException | None] = [TimeoutError("provider timed out"), None]
    calls: list[dict[str, Any]] = []

    def flaky(payload: dict[str, Any]) -> dict[str, Any]:
        calls.append(payload)
        outcome = outcomes.pop(0)
        if outcome is not None:
            raise outcome
        return {"status": "done"}

    handler = step_factory("flaky-step", flaky)
    order = order_factory()
    event = saga_input(order, "cid-flaky")

    with pytest.raises(TransientStepError) as raised:
        handler(event, lambda_context)

    assert type(raised.value).__name__ == "TransientStepError"
    assert isinstance(raised.value.__cause__, TimeoutError)
    assert "TimeoutError: provider timed out" in str(raised.value)
    (failed,) = logs.find("flaky-step failed")
    assert failed["error_type"] == "TimeoutError"
    assert failed["category"] == "transient"
    assert failed["correlation_id"] == "cid-flaky"
    assert idempotency_records.get(f"{order['order_id']}#flaky-step#attempt-1") is None

    assert handler(event, lambda_context) == {"status": "done"}  # Step Functions' retry
    assert len(calls) == 2


def test_step_permanent_exception_keeps_its_own_type(step_factory, saga_input, order_factory, lambda_context, logs):
    def declined(payload: dict[str, Any]) -> dict[str, Any]:
        raise PaymentDeclined("declined")

    handler = step_factory("declining-step", declined)

    with pytest.raises(PaymentDeclined):
        handler(saga_input(order_factory()), lambda_context)


def test_step_unexpected_exception_is_raised_as_unknown_step_error(
    step_factory, saga_input, order_factory, lambda_context, logs
):
    """A bug (KeyError) is retried by Step Functions under one name, and logged as category unknown."""

    def broken(payload: dict[str, Any]) -> dict[str, Any]:
        raise KeyError("sku")

    handler = step_factory("broken-step", broken)

    with pytest.raises(UnknownStepError) as raised:
        handler(saga_input(order_factory()), lambda_context)

    assert isinstance(raised.value.__cause__, KeyError)
    assert logs.find("broken-step failed", category="unknown", error_type="KeyError")


@pytest.mark.parametrize(
    "event",
    [
        [],
        None,
        "order-6",
        {"correlation_id": "cid-6"},
        {"order_id": "bad id", "payment_attempt": 1},
        {"order_id": "order-6", "payment_attempt": 2.0},
        {"order_id": "order-6", "payment_attempt": True},
        {"order_id": "order-6", "payment_attempt": 0},
        {"order_id": "order-6", "payment_attempt": 1, "outcome": "SHIPPED"},
    ],
)
def test_step_malformed_input_raises_invalid_step_input_and_logs_it(step_factory, lambda_context, logs, event):
    ran: list[dict[str, Any]] = []
    handler = step_factory("any-step", lambda payload: ran.append(payload) or {"status": "done"})

    with pytest.raises(InvalidStepInput):
        handler(event, lambda_context)

    assert ran == []
    failed = logs.find("any-step failed", error_type="InvalidStepInput", category="permanent")
    assert len(failed) == 1 and failed[0]["correlation_id"]


def test_step_idempotency_record_uses_settings_ttl(
    step_factory, saga_input, order_factory, idempotency_records: IdempotencyView, lambda_context, logs
):
    handler = step_factory("ttl-step", lambda payload: {"status": "done"}, IDEMPOTENCY_TTL_SECONDS=str(TTL))
    order = order_factory(payment_attempt=3)

    before = int(time.time())
    handler(saga_input(order), lambda_context)
    after = int(time.time())

    record = idempotency_records.get(f"{order['order_id']}#ttl-step#attempt-3")
    assert record is not None
    assert before + TTL <= record["expiration"] <= after + TTL


def test_step_idempotency_default_ttl_outlives_dlq_retention(
    step_factory, saga_input, order_factory, idempotency_records: IdempotencyView, lambda_context, logs
):
    handler = step_factory("default-ttl-step", lambda payload: {"status": "done"})
    order = order_factory()

    now = int(time.time())
    handler(saga_input(order), lambda_context)

    record = idempotency_records.get(f"{order['order_id']}#default-ttl-step#attempt-1")
    assert abs(record["expiration"] - (now + DEFAULT_IDEMPOTENCY_TTL_SECONDS)) <= 5
    assert DEFAULT_IDEMPOTENCY_TTL_SECONDS > 14 * 24 * 3600
