"""Starting the saga exactly once per payment attempt: the execution name is derived from both."""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError

from lambda_resilience.aws import error_code
from lambda_resilience.exceptions import BusinessOutcome
from lambda_resilience.tracing import TRACEPARENT, current_traceparent, new_traceparent, xray_trace_header

EXECUTION_PREFIX = "order-"


def execution_name(order_id: str, attempt: int = 1) -> str:
    """``order-<id>-attempt-<N>``. Standard workflows refuse a second execution with the same name
    for 90 days after the first one closes, which is our saga-start deduplication window. Order IDs
    are at most 48 characters (the contract), so the name fits the 80-character limit."""
    return f"{EXECUTION_PREFIX}{order_id}-attempt-{attempt}"


def saga_input(order_id: str, attempt: int, correlation_id: str, **extra: Any) -> dict[str, Any]:
    """The execution input: references only. Steps read the order from the orders table, so no
    payment token, name or address enters the execution history (or its 256 KiB payload limit).

    ``traceparent``: the W3C trace context the steps continue (the caller's span, e.g. intake's
    record span; a new trace outside any). Always present: the park's payload reads ``$.traceparent``."""
    return {
        "order_id": order_id,
        "payment_attempt": attempt,
        "correlation_id": correlation_id,
        TRACEPARENT: current_traceparent() or new_traceparent(),
        **extra,
    }


class CompensationRequested(BusinessOutcome):
    """An execution input with ``"compensate": true`` (``ops repair --action compensate``): the first
    step raises it before doing anything, and the saga's catch sends the execution straight to the
    compensations (stacks/order_constructs/order_saga.py, ``compensate_all_on``). A routing outcome the
    saga handles by design: raised through the step middleware, it counts as an expected error and
    never pages (an operator's action is not an incident)."""


def compensation_requested(event: Any) -> bool:
    """Whether a step's input is an operator's request to compensate (``"compensate": true`` exactly)."""
    return isinstance(event, dict) and event.get("compensate") is True


class SagaStarter:
    def __init__(self, state_machine_arn: str, *, client: Any) -> None:
        """``client``: the Step Functions client."""
        self.state_machine_arn = state_machine_arn
        self.client = client

    def start(self, order_id: str, attempt: int, correlation_id: str) -> dict[str, Any]:
        """Start (or find) the attempt's execution; an existing execution counts as success."""
        name = execution_name(order_id, attempt)
        payload = saga_input(order_id, attempt, correlation_id)
        # The order's trace as X-Ray's header: the execution joins it, sampled as the edge decided (0019).
        header = xray_trace_header(payload[TRACEPARENT])
        try:
            response = self.client.start_execution(
                stateMachineArn=self.state_machine_arn,
                name=name,
                input=json.dumps(payload),
                **({"traceHeader": header} if header else {}),
            )
            return {"execution_arn": response["executionArn"], "already_started": False}
        except ClientError as exc:
            if error_code(exc) != "ExecutionAlreadyExists":
                raise
            arn = self.state_machine_arn.replace(":stateMachine:", ":execution:") + f":{name}"
            return {"execution_arn": arn, "already_started": True}
