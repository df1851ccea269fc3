"""Saga step handlers of the order pipeline: the step input contract (order ID, payment attempt,
finalize outcome) on the middleware's generic step handler."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from aws_lambda_powertools import Metrics

from lambda_resilience.exceptions import InvalidStepInput
from lambda_resilience.idempotency import IdempotentOperation, business_key
from lambda_resilience.step import Handler, StepAction, StepInput, step_handler
from order_domain.logs import get_logger
from order_domain.model import MAX_PAYMENT_ATTEMPT, ORDER_ID_PATTERN
from order_domain.settings import Settings

#: The step input contract (references only; see order_domain.saga_start.saga_input).
ORDER_ID = re.compile(ORDER_ID_PATTERN)
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
    if isinstance(attempt, bool) or not isinstance(attempt, int) or not 1 <= attempt <= MAX_PAYMENT_ATTEMPT:
        raise InvalidStepInput(f"saga step input 'payment_attempt' must be an integer 1..{MAX_PAYMENT_ATTEMPT}")
    payload: dict[str, Any] = {"order_id": order_id, "payment_attempt": attempt}
    if "outcome" in event:  # finalize steps: the outcome, and why (only they record the error)
        if event["outcome"] not in OUTCOMES:
            raise InvalidStepInput(f"saga step input 'outcome' must be one of {sorted(OUTCOMES)}")
        payload["outcome"] = event["outcome"]
        if event.get("error") is not None:
            payload["error"] = _bounded_error(event["error"])
    return payload


def _parser(operation: str) -> Callable[[Any], StepInput]:
    def parse(event: Any) -> StepInput:
        payload = step_payload(event)
        attempt = payload["payment_attempt"]
        name = f"{operation}-{payload['outcome'].lower()}" if "outcome" in payload else operation
        return StepInput(
            idempotency_key=business_key(payload["order_id"], name, attempt),
            payload=payload,
            fields={"order_id": payload["order_id"], "payment_attempt": attempt},
        )

    return parse


def _order_id_of(event: Any) -> dict[str, Any]:
    order_id = event.get("order_id") if isinstance(event, Mapping) else None
    return {"order_id": order_id if isinstance(order_id, str) else None}


def build_step_handler(
    operation: str,
    action_factory: Callable[[Settings], StepAction],
    *,
    required: tuple[str, ...] = ("IDEMPOTENCY_TABLE_NAME", "ORDERS_TABLE_NAME"),
) -> Handler:
    """Create a Lambda handler for one saga step.

    Settings are read once here (import time). Each invocation runs ``action`` at most once per
    ``<order>#<operation>#attempt-N`` (finalize steps: ``<operation>-<outcome>``).
    """
    settings = Settings.from_env(required=required)
    logger = get_logger()
    metrics = Metrics()
    idempotent = IdempotentOperation(
        settings.idempotency_table, ttl_seconds=settings.idempotency_ttl_seconds, logger=logger, metrics=metrics
    )
    return step_handler(
        operation,
        action_factory(settings),
        parse=_parser(operation),
        idempotent=idempotent,
        logger=logger,
        metrics=metrics,
        describe=_order_id_of,
    )
