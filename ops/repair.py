"""``ops repair``: move a stuck or parked order to a terminal state, only where that is safe.

- ``redrive``: start a new saga execution for the order. Every step is idempotent on its business
  key, so the steps that already ran return their recorded result and the saga continues where it
  stopped. Allowed only while no compensation ran for the order's current payment attempt (status
  RECEIVED, INVENTORY_RESERVED, PAYMENT_CHARGED or SHIPPED, and no COMPENSATING or
  NEEDS_ATTENTION in the attempt's history): after a refund or a release, the forward steps would
  answer from their records ("captured", "reserved") although the money or stock went back, and the
  saga would ship an order that is no longer paid for.
- ``compensate``: start a saga execution that goes straight to the compensations (CancelShipment ->
  RefundPayment -> ReleaseInventory -> COMPENSATED: a shipped order's parcel is cancelled before any
  refund, and a parcel that cannot be cancelled parks the order instead). Allowed from every
  non-terminal status, NEEDS_ATTENTION included: each compensation looks up what really moved.

Refused (:class:`RepairRefused`, one line and exit status 2 from the CLI, nothing started): an
unknown order, a terminal order (COMPLETED, COMPENSATED), an order with a running execution, a
redrive where a compensation or a park already happened, and an order another actor holds or that
moved since it was read. Repeating a command is therefore safe.

Serialized with the sweeper (and other operators) by a conditional lease on the order row
(``order_domain.lease``), taken before StartExecution and held for the saga's execution timeout:
the sweeper leaves a leased order alone even while ListExecutions (eventually consistent) does not
list the repair's execution yet, and a repair never starts on an order the sweeper is finishing.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from botocore.exceptions import ClientError

from ops.errors import OpsError
from ops.target import Target, TargetError

Action = Literal["redrive", "compensate"]
ACTIONS = ("redrive", "compensate")
TERMINAL = ("COMPLETED", "COMPENSATED")  # NEEDS_ATTENTION is repairable (compensate): that is what it is for
#: Statuses (current, or in the attempt's history) that mean a compensation ran or the order was parked.
COMPENSATION_STARTED = ("COMPENSATING", "NEEDS_ATTENTION")
EXECUTION_PREFIX = "order-"
#: The lease's length when the stack has no ``SagaTimeoutSeconds`` output: an hour, above the budget.
DEFAULT_LEASE_SECONDS = 3600


class RepairRefused(OpsError):
    """The repair would be unsafe or pointless; the message says what, why, and what to do instead."""


def load_order(target: Target, order_id: str) -> dict[str, Any] | None:
    item = target.client("dynamodb").get_item(
        TableName=target.output("OrdersTableName"), Key={"order_id": {"S": order_id}}, ConsistentRead=True
    )
    if "Item" not in item:
        return None
    from lambda_resilience.aws import from_item

    return from_item(item["Item"])


def _name_pattern(order_id: str, attempt: int | None) -> re.Pattern[str]:
    n = r"\d+" if attempt is None else str(int(attempt))
    return re.compile(rf"{re.escape(EXECUTION_PREFIX + order_id)}-attempt-{n}(-repair-\d+)?")


def order_executions(
    target: Target, order_id: str, attempt: int | None = None, *, status: str | None = None
) -> list[dict[str, Any]]:
    """Executions whose name belongs to the order: ``order-<id>-attempt-<N>`` and their repairs
    ``order-<id>-attempt-<N>-repair-<k>``, for every attempt or only ``attempt``; only those in
    ``status`` (e.g. ``RUNNING``: ListExecutions filters on the server) if given."""
    sfn = target.client("stepfunctions")
    pattern = _name_pattern(order_id, attempt)
    kwargs: dict[str, Any] = {"stateMachineArn": target.output("StateMachineArn")}
    if status is not None:
        kwargs["statusFilter"] = status
    pages = sfn.get_paginator("list_executions").paginate(**kwargs)
    return [e for p in pages for e in p["executions"] if pattern.fullmatch(e["name"])]


def _attempt_history(order: dict[str, Any], attempt: int) -> list[str]:
    """Statuses the attempt went through (entries written without an attempt count as this one's:
    the safe reading for a redrive check)."""
    return [
        str(h.get("status"))
        for h in order.get("history") or []
        if isinstance(h, dict) and int(h.get("attempt", attempt)) == attempt
    ]


def check_repair(order_id: str, order: dict[str, Any] | None, action: str, running: list[dict[str, Any]]) -> None:
    """Raise :class:`RepairRefused` unless ``action`` is safe for ``order`` (its item) now."""
    if order is None:
        raise RepairRefused(f"cannot repair order {order_id}: not in the orders table; check the order ID and --stack")
    status = str(order.get("status"))
    attempt = int(order.get("payment_attempt", 1))
    if status in TERMINAL:
        raise RepairRefused(
            f"refusing to {action} order {order_id}: it is already {status} (terminal); nothing to repair"
        )
    if running:
        raise RepairRefused(
            f"refusing to {action} order {order_id}: execution {running[0]['name']} is still running; "
            "wait for it to finish (or stop it) and run the command again"
        )
    if action == "redrive":
        seen = [s for s in (status, *_attempt_history(order, attempt)) if s in COMPENSATION_STARTED]
        if seen:
            raise RepairRefused(
                f"refusing to redrive order {order_id}: attempt {attempt} is {status} and was {seen[-1]} "
                "(a compensation ran or it was parked), so a redrive could ship an order whose money or stock "
                "went back; use --action compensate"
            )


def repair(target: Target, order_id: str, action: Action) -> dict[str, Any]:
    """Repair one order: start the repair execution and return what was started, or raise
    :class:`RepairRefused` (nothing started)."""
    if action not in ACTIONS:
        raise ValueError(f"action must be redrive or compensate, got {action!r}")
    order = load_order(target, order_id)
    attempt = int(order.get("payment_attempt", 1)) if order else 1
    running = order_executions(target, order_id, attempt, status="RUNNING") if order else []
    check_repair(order_id, order, action, running)
    assert order is not None  # check_repair refused an unknown order
    from order_domain.saga_start import execution_name

    executions = order_executions(target, order_id, attempt)
    # The attempt's own execution name (the runtime's one rule), plus which repair this is.
    name = f"{execution_name(order_id, attempt)}-repair-{len(executions)}"
    # References only, as intake starts it: the steps read the order from the table.
    saga_input = {
        "order_id": order_id,
        "payment_attempt": attempt,
        "correlation_id": order.get("correlation_id"),
        "compensate": action == "compensate",
    }
    holder = _take_lease(target, order, action, name)
    sfn = target.client("stepfunctions")
    try:
        arn = sfn.start_execution(
            stateMachineArn=target.output("StateMachineArn"), name=name, input=json.dumps(saga_input)
        )["executionArn"]
    except ClientError as exc:
        from order_domain import lease

        lease.release(target.client("dynamodb"), target.output("OrdersTableName"), order_id, holder=holder)
        if exc.response.get("Error", {}).get("Code") != "ExecutionAlreadyExists":
            raise
        raise RepairRefused(
            f"refusing to {action} order {order_id}: execution {name} was started meanwhile; "
            "wait for it to finish and run the command again"
        ) from None
    return {
        "order_id": order_id,
        "result": "started",
        "action": action,
        "execution_arn": arn,
        "execution_name": name,
        "status": order["status"],
    }


def _lease_seconds(target: Target) -> float:
    try:
        return float(target.output("SagaTimeoutSeconds"))
    except (TargetError, ValueError):
        return DEFAULT_LEASE_SECONDS


def _take_lease(target: Target, order: dict[str, Any], action: str, name: str) -> str:
    """The order's lease for the repair's execution, or :class:`RepairRefused` (nothing started)."""
    from order_domain import lease

    order_id, holder = str(order["order_id"]), f"ops-repair:{name}"
    other = lease.held_by_other(order, holder)
    replaces = other if other is not None and _repair_ended(target, other) else None
    if replaces is not None:
        other = None
    taken = other is None and lease.acquire(
        target.client("dynamodb"),
        target.output("OrdersTableName"),
        order_id,
        holder=holder,
        seconds=_lease_seconds(target),
        status=str(order.get("status")),
        updated_at=str(order.get("updated_at")),
        replaces=replaces,
    )
    if not taken:
        raise RepairRefused(
            f"refusing to {action} order {order_id}: "
            + (f"{other} is handling it" if other else "it changed while this command looked at it")
            + "; run the command again to see its status"
        )
    return holder


def _repair_ended(target: Target, holder: str) -> bool:
    """Whether the lease ``holder`` is an earlier repair whose execution is no longer running."""
    prefix = "ops-repair:"
    if not holder.startswith(prefix):
        return False
    machine = target.output("StateMachineArn")
    arn = machine.replace(":stateMachine:", ":execution:", 1) + ":" + holder[len(prefix) :]
    try:
        status = target.client("stepfunctions").describe_execution(executionArn=arn)["status"]
    except ClientError:
        return False
    return bool(status != "RUNNING")
