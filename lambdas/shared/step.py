"""Saga step handlers: correlation from the execution input, idempotency per business operation."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from aws_lambda_powertools import Metrics
from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.config import Settings
from shared.correlation import correlation_scope, from_payload
from shared.exceptions import (
    TRANSIENT,
    UNKNOWN,
    InvalidStepInput,
    TransientStepError,
    UnknownStepError,
    classify,
)
from shared.idempotency import IdempotentOperation, business_key, make_persistence
from shared.logs import get_logger
from shared.tracing import annotate, traced

#: A step's domain action: ``action(payload) -> result``, payload = {"order_id", "payment_attempt", ...}.
StepAction = Callable[[dict[str, Any]], dict[str, Any]]
Handler = Callable[[dict[str, Any], LambdaContext], dict[str, Any]]

#: The step input contract (references only; see order_domain.saga_start.saga_input).
ORDER_ID = re.compile(r"^[A-Za-z0-9_-]{1,48}$")
MAX_ATTEMPT = 100
OUTCOMES = frozenset({"COMPLETED", "COMPENSATED", "NEEDS_ATTENTION"})
#: The ``error`` a finalize step records (Step Functions' {"Error", "Cause"}), cut to this size.
MAX_ERROR_CHARS = 1024


def _bounded_error(error: Any) -> dict[str, str]:
    if not isinstance(error, Mapping):
        return {"Error": "unknown", "Cause": ""}
    return {
        "Error": str(error.get("Error", "unknown"))[:256],
        "Cause": str(error.get("Cause", ""))[:MAX_ERROR_CHARS],
    }


def step_payload(event: Any) -> dict[str, Any]:
    """Validate a step's input and return the part that identifies the operation (hashed for
    mismatch checks): ``order_id``, ``payment_attempt``, and for finalize steps ``outcome`` and
    ``error``. Anything else in the input (earlier steps' results) is ignored."""
    if not isinstance(event, Mapping):
        raise InvalidStepInput(f"saga step input must be a JSON object, got {type(event).__name__}")
    order_id = event.get("order_id")
    if not isinstance(order_id, str) or not ORDER_ID.match(order_id):
        raise InvalidStepInput("saga step input needs 'order_id': 1-48 characters of [A-Za-z0-9_-]")
    attempt = event.get("payment_attempt", 1)
    if isinstance(attempt, bool) or not isinstance(attempt, int) or not 1 <= attempt <= MAX_ATTEMPT:
        raise InvalidStepInput(f"saga step input 'payment_attempt' must be an integer 1..{MAX_ATTEMPT}")
    payload: dict[str, Any] = {"order_id": order_id, "payment_attempt": attempt}
    if "outcome" in event:  # finalize steps: the outcome, and why (only they record the error)
        if event["outcome"] not in OUTCOMES:
            raise InvalidStepInput(f"saga step input 'outcome' must be one of {sorted(OUTCOMES)}")
        payload["outcome"] = event["outcome"]
        if event.get("error") is not None:
            payload["error"] = _bounded_error(event["error"])
    return payload


def build_step_handler(
    operation: str,
    action_factory: Callable[[Settings], StepAction],
    *,
    required: tuple[str, ...] = ("IDEMPOTENCY_TABLE_NAME", "ORDERS_TABLE_NAME"),
) -> Handler:
    """Create a Lambda handler for one saga step.

    Settings are read once here (import time). Each invocation: enter the correlation scope of
    the execution input, run ``action`` at most once per ``<order>#<operation>#attempt-N``,
    and re-raise transient failures as ``TransientStepError`` (the name Step Functions retries)
    while business errors keep their own names (``PaymentDeclined`` ...) for Catch.
    """
    settings = Settings.from_env(required=required)
    logger = get_logger()
    metrics = Metrics()
    action = action_factory(settings)
    idempotent = IdempotentOperation(
        persistence=make_persistence(settings.idempotency_table),
        ttl_seconds=settings.idempotency_ttl_seconds,
        logger=logger,
        metrics=metrics,
    )

    @idempotent
    def run(command: dict[str, Any]) -> dict[str, Any]:
        return action(command["payload"])

    @metrics.log_metrics
    @traced
    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        with correlation_scope(logger, from_payload(event)) as cid:
            order_id = event.get("order_id") if isinstance(event, Mapping) else None
            annotate(correlation_id=cid, order_id=order_id if isinstance(order_id, str) else None, operation=operation)
            try:
                payload = step_payload(event)
                attempt = payload["payment_attempt"]
                name = f"{operation}-{payload['outcome'].lower()}" if "outcome" in payload else operation
                command = {"idempotency_key": business_key(payload["order_id"], name, attempt), "payload": payload}
                logger.info(f"{operation} started", extra={"order_id": order_id, "payment_attempt": attempt})
                result = run(command, context)
                logger.info(f"{operation} done", extra={"order_id": order_id, "result": result})
                return result
            except Exception as exc:
                category = classify(exc)
                logger.exception(
                    f"{operation} failed",
                    extra={
                        "order_id": order_id if isinstance(order_id, str) else None,
                        "error_type": type(exc).__name__,
                        "category": category,
                    },
                )
                # Step Functions retries these two names; business errors keep their own for Catch.
                if category == TRANSIENT and not isinstance(exc, TransientStepError):
                    raise TransientStepError(f"{type(exc).__name__}: {exc}") from exc
                if category == UNKNOWN and not isinstance(exc, UnknownStepError):
                    raise UnknownStepError(f"{type(exc).__name__}: {exc}") from exc
                raise

    return handler
