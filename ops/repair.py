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
    from shared.aws import from_item

    return from_item(item["Item"])


def order_executions(target: Target, order_id: str) -> list[dict[str, Any]]:
    """Executions whose name belongs to the order (``order-<id>`` and ``order-<id>-repair-N``)."""
    sfn = target.client("stepfunctions")
    name = f"{EXECUTION_PREFIX}{order_id}"
    pages = sfn.get_paginator("list_executions").paginate(stateMachineArn=target.output("StateMachineArn"))
    return [e for p in pages for e in p["executions"] if e["name"] == name or e["name"].startswith(f"{name}-repair-")]


def repair(target: Target, order_id: str, action: Action) -> dict[str, Any]:
    """Repair one order; returns what was done (``started`` / ``already_terminal`` / ``running``)."""
    if action not in ("redrive", "compensate"):
        raise ValueError(f"action must be redrive or compensate, got {action!r}")
    order = load_order(target, order_id)
    if order is None:
        return {"order_id": order_id, "result": "unknown_order"}
    if order["status"] in TERMINAL:
        return {"order_id": order_id, "result": "already_terminal", "status": order["status"]}
    executions = order_executions(target, order_id)
    running = [e for e in executions if e["status"] == "RUNNING"]
    if running:
        return {"order_id": order_id, "result": "running", "execution_arn": running[0]["executionArn"]}
    name = f"{EXECUTION_PREFIX}{order_id}-repair-{len(executions)}"[:80]
    saga_input = {
        "order_id": order_id,
        "correlation_id": order.get("correlation_id"),
        "order": order["order"],
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
