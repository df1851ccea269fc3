"""Saga step handlers (order_domain.step on lambda_resilience.step): error names, input contract, TTL."""

from __future__ import annotations

import os
import time
from typing import Any
from unittest import mock

import pytest

from lambda_resilience.exceptions import InvalidStepInput, TransientStepError, UnknownStepError
from order_domain.errors import PaymentDeclined
from order_domain.settings import DEFAULT_IDEMPOTENCY_TTL_SECONDS
from order_domain.step import build_step_handler
from tests.handlers.conftest import present

from .conftest import IdempotencyView, LogCapture, route_powertools_logs

TTL = 7200


@pytest.fixture
def step_factory(pipeline_env: dict[str, str], logs: LogCapture):
    """``step_factory(operation, action, **env)``: a step handler built by order_domain.step, as a module would."""

    def _build(operation: str, action, **extra_env: str):
        with mock.patch.dict(os.environ, {**pipeline_env, "POWERTOOLS_SERVICE_NAME": operation, **extra_env}):
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

    def action(payload: dict[str, Any]) -> dict[str, Any]:
        ran.append(payload)
        return {"status": "done"}

    handler = step_factory("any-step", action)

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

    record = present(idempotency_records.get(f"{order['order_id']}#ttl-step#attempt-3"))
    assert record is not None
    assert before + TTL <= record["expiration"] <= after + TTL


def test_step_idempotency_default_ttl_outlives_dlq_retention(
    step_factory, saga_input, order_factory, idempotency_records: IdempotencyView, lambda_context, logs
):
    handler = step_factory("default-ttl-step", lambda payload: {"status": "done"})
    order = order_factory()

    now = int(time.time())
    handler(saga_input(order), lambda_context)

    record = present(idempotency_records.get(f"{order['order_id']}#default-ttl-step#attempt-1"))
    assert abs(record["expiration"] - (now + DEFAULT_IDEMPOTENCY_TTL_SECONDS)) <= 5
    assert DEFAULT_IDEMPOTENCY_TTL_SECONDS > 14 * 24 * 3600
