"""Saga step handlers: correlation from the execution input, idempotency per business operation."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.utilities.typing import LambdaContext

from shared.config import Settings
from shared.correlation import correlation_scope, from_payload
from shared.exceptions import TRANSIENT, InvalidOrder, TransientStepError, classify
from shared.idempotency import IdempotentOperation, business_key, make_persistence

#: A step's domain action: ``action(payload) -> result``, payload = {"order_id", "order"}.
StepAction = Callable[[dict[str, Any]], dict[str, Any]]
Handler = Callable[[dict[str, Any], LambdaContext], dict[str, Any]]


def step_payload(event: Mapping[str, Any]) -> dict[str, Any]:
    """The part of the saga state that identifies the operation (hashed for mismatch checks)."""
    order_id = event.get("order_id")
    order = event.get("order")
    if not isinstance(order_id, str) or not isinstance(order, dict):
        raise InvalidOrder("saga step input needs 'order_id' (string) and 'order' (object)")
    payload: dict[str, Any] = {"order_id": order_id, "order": order}
    if event.get("outcome"):  # finalize steps: the outcome, and why (only they record the error)
        payload["outcome"] = str(event["outcome"])
        if isinstance(event.get("error"), dict):
            payload["error"] = event["error"]
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
    logger = Logger()
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
    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        with correlation_scope(logger, from_payload(event)):
            try:
                payload = step_payload(event)
                attempt = int(payload["order"].get("payment_attempt", 1))
                name = f"{operation}-{payload['outcome'].lower()}" if "outcome" in payload else operation
                command = {"idempotency_key": business_key(payload["order_id"], name, attempt), "payload": payload}
                logger.info(f"{operation} started", extra={"order_id": payload["order_id"]})
                result = run(command, context)
                logger.info(f"{operation} done", extra={"order_id": payload["order_id"], "result": result})
                return result
            except Exception as exc:
                category = classify(exc)
                logger.exception(
                    f"{operation} failed",
                    extra={"order_id": event.get("order_id"), "error_type": type(exc).__name__, "category": category},
                )
                if category == TRANSIENT and not isinstance(exc, TransientStepError):
                    raise TransientStepError(f"{type(exc).__name__}: {exc}") from exc
                raise

    return handler
