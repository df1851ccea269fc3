"""Saga step handlers of the order pipeline: the step input contract (order ID, payment attempt,
finalize outcome) on the middleware's generic step handler."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from aws_lambda_powertools import Metrics

from lambda_resilience.exceptions import InvalidStepInput
from lambda_resilience.idempotency import business_key
from lambda_resilience.step import Handler, OutcomeRecorder, StepAction, StepInput, step_handler
from lambda_resilience.tracing import EXECUTION_INPUT
from order_domain import wiring
from order_domain.logs import get_logger
from order_domain.model import MAX_PAYMENT_ATTEMPT, ORDER_ID_PATTERN
from order_domain.settings import load

#: The step input contract (references only; see order_domain.saga_start.saga_input).
ORDER_ID = re.compile(ORDER_ID_PATTERN)
OUTCOMES = frozenset({"COMPLETED", "COMPENSATED", "NEEDS_ATTENTION"})
#: The outcomes a step records itself once its effect is done (``record_outcome``, decision 0024).
RECORDED_BY_STEP = frozenset({"COMPLETED", "COMPENSATED"})
#: The ``error`` a finalize step records (Step Functions' {"Error", "Cause"}), cut to this size.
MAX_ERROR_CHARS = 1024
#: ``$$.Execution.Name`` as the park receives it: the names this app gives executions
#: (``order-<id>-attempt-<N>[-repair-<k>]``) are 1-80 characters of [A-Za-z0-9_-]. Step Functions
#: allows 80 characters (StartExecution, ``name``:
#: https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html).
EXECUTION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,80}$")

if TYPE_CHECKING:
    from order_domain.settings import IdempotentSettings

S = TypeVar("S", bound="IdempotentSettings")


def _bounded_error(error: Any) -> dict[str, str]:
    if not isinstance(error, Mapping):
        return {"Error": "unknown", "Cause": ""}
    return {
        "Error": str(error.get("Error", "unknown"))[:256],
        "Cause": str(error.get("Cause", ""))[:MAX_ERROR_CHARS],
    }


def step_payload(event: Any) -> dict[str, Any]:
    """Validate a step's input and return what the action gets: ``order_id``, ``payment_attempt``,
    and for finalize steps ``outcome``, ``error`` and (the park) ``execution_name``. Anything else in
    the input (earlier steps' results) is ignored. :func:`_parser` hashes all but ``error``."""
    if not isinstance(event, Mapping):
        raise InvalidStepInput(f"saga step input must be a JSON object, got {type(event).__name__}")
    order_id = event.get("order_id")
    if not isinstance(order_id, str) or not ORDER_ID.match(order_id):
        raise InvalidStepInput("saga step input needs 'order_id': 1-48 characters of [A-Za-z0-9_-]")
    attempt = event.get("payment_attempt", 1)
    if isinstance(attempt, bool) or not isinstance(attempt, int) or not 1 <= attempt <= MAX_PAYMENT_ATTEMPT:
        raise InvalidStepInput(f"saga step input 'payment_attempt' must be an integer 1..{MAX_PAYMENT_ATTEMPT}")
    payload: dict[str, Any] = {"order_id": order_id, "payment_attempt": attempt}
    if _requested(event):  # an operator's requested compensation (not hashed: see _parser)
        payload["compensate"] = True
    if "record_outcome" in event:  # the last step records this outcome itself (not hashed: see _parser)
        if event["record_outcome"] not in RECORDED_BY_STEP:
            raise InvalidStepInput(f"saga step input 'record_outcome' must be one of {sorted(RECORDED_BY_STEP)}")
        payload["record_outcome"] = event["record_outcome"]
    if "outcome" in event:  # finalize steps: the outcome, and why (only they record the error)
        if event["outcome"] not in OUTCOMES:
            raise InvalidStepInput(f"saga step input 'outcome' must be one of {sorted(OUTCOMES)}")
        payload["outcome"] = event["outcome"]
        if event.get("error") is not None:
            payload["error"] = _bounded_error(event["error"])
        if "execution_name" in event:
            name = event["execution_name"]
            if not isinstance(name, str) or not EXECUTION_NAME.match(name):
                raise InvalidStepInput("saga step input 'execution_name' must be 1-80 characters of [A-Za-z0-9_-]")
            payload["execution_name"] = name
    return payload


def _requested(event: Mapping[str, Any]) -> bool:
    """``"compensate": true`` in the state, or in the execution input a task naming its fields passes."""
    whole = event.get(EXECUTION_INPUT)
    return event.get("compensate") is True or (isinstance(whole, Mapping) and whole.get("compensate") is True)


def _operation_name(operation: str, payload: Mapping[str, Any]) -> str:
    """``<operation>``; finalize steps ``<operation>-<outcome>``; the park of a named execution
    ``<operation>-needs_attention-<execution name>``: each execution's park (a repair's too) is its
    own operation, so it parks and announces instead of returning an earlier park's result."""
    if "outcome" not in payload:
        return operation
    name = f"{operation}-{payload['outcome'].lower()}"
    if payload["outcome"] == "NEEDS_ATTENTION" and "execution_name" in payload:
        name = f"{name}-{payload['execution_name']}"
    return name


def _parser(operation: str) -> Callable[[Any], StepInput]:
    def parse(event: Any) -> StepInput:
        payload = step_payload(event)
        attempt = payload["payment_attempt"]
        # The error text describes this delivery, not the operation: not hashed, so a retry whose
        # error differs is still a duplicate (never a PayloadMismatch that fails the park).
        extra = {"error": payload.pop("error")} if "error" in payload else {}
        # Whether an operator asked for the compensation: the same step of a first run and of a
        # repair is one operation (a duplicate, never a PayloadMismatch), so it is not hashed either.
        if payload.pop("compensate", False):
            extra["compensate"] = True
        # Whether this run also records the outcome describes its place in the definition (the last
        # compensation, or its ThenPark copy), not the operation: one key, one cached release.
        if "record_outcome" in payload:
            extra["record_outcome"] = payload.pop("record_outcome")
        return StepInput(
            idempotency_key=business_key(payload["order_id"], _operation_name(operation, payload), attempt),
            payload=payload,
            fields={"order_id": payload["order_id"], "payment_attempt": attempt},
            extra=extra,
        )

    return parse


def _order_id_of(event: Any) -> dict[str, Any]:
    order_id = event.get("order_id") if isinstance(event, Mapping) else None
    return {"order_id": order_id if isinstance(order_id, str) else None}


def _orders_only() -> Any:
    """The default step settings (imported on use: a step with its own settings never loads them)."""
    from order_domain.settings.step import StepSettings

    return load(StepSettings)


def build_step_handler(
    operation: str,
    action_factory: Callable[[S], StepAction],
    settings: type[S] | None = None,
    record_factory: Callable[[S], OutcomeRecorder] | None = None,
    preempt: Callable[[Any], None] | None = None,
) -> Handler:
    """Create a Lambda handler for one saga step.

    ``settings`` (default: :class:`~order_domain.settings.step.StepSettings`, the orders table
    only) is the step's settings class, read once, here (import time), and ``action_factory`` builds
    the action from them (:mod:`order_domain.wiring`). Each invocation runs the action at most once
    per ``<order>#<operation>#attempt-N`` (finalize steps: ``<operation>-<outcome>``).
    ``record_factory`` builds the step's own outcome write, run after the action on every
    invocation (:func:`lambda_resilience.step.step_handler`'s ``record``; decision 0024).
    ``preempt``: checked before the idempotency record, its failures counted like the step's
    (:func:`lambda_resilience.step.step_handler`).
    """
    loaded = load(settings) if settings is not None else _orders_only()
    logger = get_logger()
    metrics = Metrics()
    idempotent = wiring.idempotency(loaded, logger=logger, metrics=metrics)
    return step_handler(
        operation,
        action_factory(loaded),
        parse=_parser(operation),
        idempotent=idempotent,
        logger=logger,
        metrics=metrics,
        describe=_order_id_of,
        record=record_factory(loaded) if record_factory is not None else None,
        preempt=preempt,
    )
