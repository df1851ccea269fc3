"""``ops repair``: move a stuck order to a terminal state, idempotently.

- ``redrive``: start a new saga execution for the order. Every step is idempotent on its
  business key, so the steps that already ran return their recorded result and the saga
  continues where it stopped.
- ``compensate``: start a saga execution that goes straight to the compensations
  (RefundPayment -> ReleaseInventory -> COMPENSATED).

Repeating the command is safe: a terminal order, or an order with a running execution, is left alone.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from botocore.exceptions import ClientError

from ops.lambda_packages import ensure_importable
from ops.target import Target

Action = Literal["redrive", "compensate"]
TERMINAL = ("COMPLETED", "COMPENSATED")  # NEEDS_ATTENTION is repairable: that is what it is for
EXECUTION_PREFIX = "order-"


def load_order(target: Target, order_id: str) -> dict[str, Any] | None:
    item = target.client("dynamodb").get_item(
        TableName=target.output("OrdersTableName"), Key={"order_id": {"S": order_id}}, ConsistentRead=True
    )
    if "Item" not in item:
        return None
    ensure_importable()
    from lambda_resilience.aws import from_item

    return from_item(item["Item"])


def order_executions(target: Target, order_id: str, attempt: int | None = None) -> list[dict[str, Any]]:
    """Executions whose name belongs to the order: ``order-<id>-attempt-<N>`` and their repairs
    ``order-<id>-attempt-<N>-repair-<k>``, for every attempt or only ``attempt``."""
    sfn = target.client("stepfunctions")
    n = r"\d+" if attempt is None else str(int(attempt))
    pattern = re.compile(rf"{re.escape(EXECUTION_PREFIX + order_id)}-attempt-{n}(-repair-\d+)?")
    pages = sfn.get_paginator("list_executions").paginate(stateMachineArn=target.output("StateMachineArn"))
    return [e for p in pages for e in p["executions"] if pattern.fullmatch(e["name"])]


def repair(target: Target, order_id: str, action: Action) -> dict[str, Any]:
    """Repair one order; returns what was done (``started`` / ``already_terminal`` / ``running``)."""
    if action not in ("redrive", "compensate"):
        raise ValueError(f"action must be redrive or compensate, got {action!r}")
    order = load_order(target, order_id)
    if order is None:
        return {"order_id": order_id, "result": "unknown_order"}
    if order["status"] in TERMINAL:
        return {"order_id": order_id, "result": "already_terminal", "status": order["status"]}
    attempt = int(order.get("payment_attempt", 1))
    executions = order_executions(target, order_id, attempt)
    running = [e for e in executions if e["status"] == "RUNNING"]
    if running:
        return {"order_id": order_id, "result": "running", "execution_arn": running[0]["executionArn"]}
    ensure_importable()
    from order_domain.saga_start import execution_name

    # The attempt's own execution name (the runtime's one rule), plus which repair this is.
    name = f"{execution_name(order_id, attempt)}-repair-{len(executions)}"
    # References only, as intake starts it: the steps read the order from the table.
    saga_input = {
        "order_id": order_id,
        "payment_attempt": attempt,
        "correlation_id": order.get("correlation_id"),
        "compensate": action == "compensate",
    }
    sfn = target.client("stepfunctions")
    try:
        arn = sfn.start_execution(
            stateMachineArn=target.output("StateMachineArn"), name=name, input=json.dumps(saga_input)
        )["executionArn"]
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "ExecutionAlreadyExists":
            raise
        return {"order_id": order_id, "result": "running", "execution_name": name}
    return {
        "order_id": order_id,
        "result": "started",
        "action": action,
        "execution_arn": arn,
        "status": order["status"],
    }
