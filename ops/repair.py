"""``ops repair``: move a stuck or parked order to a terminal state, only where that is safe.

A repair is a command on the order (docs/decisions/0029): it first moves the order itself, with one
conditional write under the order's lease (``order_domain.operator_actions``), recorded in the order's
history (who: the caller's IAM principal; when; why: ``--reason``; which execution), and only then
starts the repair's execution.

- ``redrive`` (finish): start a new saga execution for the order. Every step is idempotent on its
  business key, so the steps that already ran return their recorded result and the saga continues
  where it stopped. Allowed only while no compensation ran for the order's current payment attempt (no
  COMPENSATING in the attempt's history): after a refund or a release, the forward steps would answer
  from their records ("captured", "reserved") although the money or stock went back. A parked order
  no compensation touched (the sweeper parked it stuck, or its outcome write failed after the effect)
  is moved back to the forward status it was parked from, and the saga finishes it.
- ``compensate``: the order moves to COMPENSATING, then a saga execution goes straight to the
  compensations (CancelShipment -> RefundPayment -> ReleaseInventory -> COMPENSATED: a shipped order's
  parcel is cancelled before any refund, and a parcel that cannot be cancelled parks the order
  instead). Allowed from every non-terminal status, NEEDS_ATTENTION included: each compensation looks
  up what really moved, and one that already ran answers from its record.

Refused (:class:`RepairRefused`, one line and exit status 2 from the CLI, nothing moved or started): an
unknown order, a terminal order (COMPLETED, COMPENSATED), an order with a running execution, a
redrive where a compensation already ran, and an order another actor holds or that moved since it was
read. Repeating a command is therefore safe.

Whether an execution of the order runs is asked by name, with DescribeExecution
(https://docs.aws.amazon.com/step-functions/latest/apireference/API_DescribeExecution.html): the
attempt's own ``order-<id>-attempt-<N>`` and the order's last repair (``last_repair`` on the order),
never by listing the state machine's executions, so a repair makes the same few calls however long
the state machine's history. DescribeExecution is eventually consistent (the same page): an execution
started a moment ago may not be seen, which the lease covers for repairs and the sweeper, and the
steps' idempotency keys for anything else. The lease is held for the saga's execution timeout.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal, get_args

from botocore.exceptions import ClientError

from ops.errors import OpsError
from ops.order_view import describe_execution
from ops.target import Target, TargetError

Action = Literal["redrive", "compensate"]
ACTIONS = ("redrive", "compensate")
TERMINAL = ("COMPLETED", "COMPENSATED")  # NEEDS_ATTENTION is repairable: that is what it is for
EXECUTION_PREFIX = "order-"
REPAIR_HOLDER = "ops-repair:"
#: The lease's length when the stack has no ``SagaTimeoutSeconds`` output: an hour, above the budget.
DEFAULT_LEASE_SECONDS = 3600


#: Why a repair is refused: the order is unknown or terminal, a compensation ran (redrive), its park names no step
#: (redrive), the reason is refused, an execution still runs, another actor holds or moved it, the name is taken.
Refusal = Literal[
    "unknown_order",
    "terminal",
    "compensation_ran",
    "unknown_step",
    "bad_reason",
    "execution_running",
    "order_busy",
    "name_taken",
]
REFUSALS: tuple[str, ...] = get_args(Refusal)


class RepairRefused(OpsError):
    """The repair would be unsafe or pointless; the message says what, why, and what to do instead; ``kind``
    names the rule that refused it (one of :data:`REFUSALS`, checked by mypy at each raise), for a caller that
    counts refusals."""

    def __init__(self, message: str, kind: Refusal) -> None:
        if kind not in REFUSALS:
            raise ValueError(f"unknown refusal kind {kind!r}")
        super().__init__(message)
        self.kind: Refusal = kind


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
    """Executions whose name belongs to the order (ListExecutions over the whole state machine: for
    ``ops trace`` and tests; ``repair`` never calls it)."""
    sfn = target.client("stepfunctions")
    pattern = _name_pattern(order_id, attempt)
    kwargs: dict[str, Any] = {"stateMachineArn": target.output("StateMachineArn")}
    if status is not None:
        kwargs["statusFilter"] = status
    pages = sfn.get_paginator("list_executions").paginate(**kwargs)
    return [e for p in pages for e in p["executions"] if pattern.fullmatch(e["name"])]


def check_repair(order_id: str, order: dict[str, Any] | None, action: str) -> str:
    """The status ``action`` moves ``order`` (its item) to, or :class:`RepairRefused`."""
    from order_domain.operator_actions import compensation_ran, parked_from

    if order is None:
        raise RepairRefused(
            f"cannot repair order {order_id}: not in the orders table; check the order ID and --stack", "unknown_order"
        )
    status = str(order.get("status"))
    attempt = int(order.get("payment_attempt", 1))
    if status in TERMINAL:
        raise RepairRefused(
            f"refusing to {action} order {order_id}: it is already {status} (terminal); nothing to repair", "terminal"
        )
    if action == "compensate":
        return "COMPENSATING"
    if compensation_ran(order):
        raise RepairRefused(
            f"refusing to redrive order {order_id}: attempt {attempt} is {status} and was COMPENSATING "
            "(a compensation ran), so a redrive could ship an order whose money or stock went back; "
            "use --action compensate (or ops resolve once a person has settled it)",
            "compensation_ran",
        )
    if status != "NEEDS_ATTENTION":
        return status
    back = parked_from(order)
    if back is None:
        raise RepairRefused(
            f"refusing to redrive order {order_id}: it is parked and its history cannot tell which step it was "
            "parked from; use --action compensate, or ops resolve once a person has settled it",
            "unknown_step",
        )
    return back.value


def repair(target: Target, order_id: str, action: Action, *, reason: str | None = None) -> dict[str, Any]:
    """Repair one order: move it, start the repair execution and return what was started, or raise
    :class:`RepairRefused` (nothing moved, nothing started)."""
    if action not in ACTIONS:
        raise ValueError(f"action must be redrive or compensate, got {action!r}")
    from order_domain.operator_actions import reason_problem

    order = load_order(target, order_id)
    to = check_repair(order_id, order, action)
    assert order is not None  # check_repair refused an unknown order
    problem = reason_problem(reason, order.get("order")) if reason is not None else None
    if problem:
        raise RepairRefused(f"refusing to {action} order {order_id}: {problem}", "bad_reason")
    attempt = int(order.get("payment_attempt", 1))
    ended = _ended_executions(target, order, action)
    name = _next_name(order, attempt)
    holder = _take_lease(target, order, action, name, to=to, reason=reason, ended=ended)
    # References only, as intake starts it: the steps read the order from the table.
    saga_input = {
        "order_id": order_id,
        "payment_attempt": attempt,
        "correlation_id": order.get("correlation_id"),
        "compensate": action == "compensate",
    }
    arn = _start(target, order_id, action, name, holder, saga_input)
    return {
        "order_id": order_id,
        "result": "started",
        "action": action,
        "execution_arn": arn,
        "execution_name": name,
        "status": order["status"],
        "moved_to": to,
    }


def execution_status(target: Target, name: str) -> str | None:
    """The execution's status by its name, or None if there is no such execution."""
    found = describe_execution(target.client("stepfunctions"), target.output("StateMachineArn"), name)
    return None if found is None else str(found["status"])


def _ended_executions(target: Target, order: dict[str, Any], action: str) -> set[str]:
    """Ask, by name, after the order's executions that may still run (the attempt's own, its last repair,
    a repair holding the lease); :class:`RepairRefused` if one runs, else the names that ended."""
    from order_domain.saga_start import execution_name

    order_id, attempt = str(order["order_id"]), int(order.get("payment_attempt", 1))
    names = [execution_name(order_id, attempt)]
    last = order.get("last_repair")
    if isinstance(last, dict) and int(last.get("attempt", 0)) == attempt and last.get("execution"):
        names.append(str(last["execution"]))
    holder = str((order.get("lease") or {}).get("holder", ""))
    if holder.startswith(REPAIR_HOLDER):
        names.append(holder[len(REPAIR_HOLDER) :])
    ended = set()
    for name in dict.fromkeys(names):
        status = execution_status(target, name)
        if status == "RUNNING":
            raise RepairRefused(
                f"refusing to {action} order {order_id}: execution {name} is still running; "
                "wait for it to finish (or stop it) and run the command again",
                "execution_running",
            )
        ended.add(name)
    return ended


def _next_name(order: dict[str, Any], attempt: int) -> str:
    """``order-<id>-attempt-<N>-repair-<k>``: the attempt's own execution name (the runtime's one rule)
    and which repair of the attempt this is (``last_repair`` on the order: no listing)."""
    from order_domain.saga_start import execution_name

    last = order.get("last_repair")
    k = int(last["k"]) + 1 if isinstance(last, dict) and int(last.get("attempt", 0)) == attempt else 0
    return f"{execution_name(str(order['order_id']), attempt)}-repair-{k}"


def _lease_seconds(target: Target) -> float:
    try:
        return float(target.output("SagaTimeoutSeconds"))
    except (TargetError, ValueError):
        return DEFAULT_LEASE_SECONDS


def operator_arn(target: Target) -> str:
    """Who runs the command: the caller's IAM principal (GetCallerIdentity needs no permission:
    https://docs.aws.amazon.com/STS/latest/APIReference/API_GetCallerIdentity.html)."""
    return str(target.client("sts").get_caller_identity()["Arn"])


def _take_lease(
    target: Target,
    order: dict[str, Any],
    action: str,
    name: str,
    *,
    to: str,
    reason: str | None,
    ended: set[str],
) -> str:
    """Move the order to ``to`` and take its lease for the repair's execution ``name`` (one conditional
    write), or :class:`RepairRefused` (nothing moved). ``ended``: executions known to have ended (a
    lease their repair holds is replaced)."""
    from order_domain import lease, operator_actions
    from order_domain.status import OrderStatus

    order_id, holder, attempt = str(order["order_id"]), f"{REPAIR_HOLDER}{name}", int(order.get("payment_attempt", 1))
    other = lease.held_by_other(order, holder)
    replaces = other if other is not None and other.startswith(REPAIR_HOLDER) else None
    if replaces is not None and replaces[len(REPAIR_HOLDER) :] in ended:
        other = None
    made = operator_actions.entry(
        OrderStatus(to), attempt, by=operator_arn(target), action=f"repair-{action}", reason=reason, execution=name
    )
    k = int(name.rsplit("-", 1)[1])
    moved = other is None and operator_actions.move(
        target.client("dynamodb"),
        target.output("OrdersTableName"),
        order,
        OrderStatus(to),
        made,
        lease_for=(holder, _lease_seconds(target)),
        replaces=replaces,
        also={"last_repair": {"attempt": attempt, "k": k, "execution": name}},
    )
    if not moved:
        raise RepairRefused(
            f"refusing to {action} order {order_id}: "
            + (f"{other} is handling it" if other else "it changed while this command looked at it")
            + "; run the command again to see its status",
            "order_busy",
        )
    return holder


def _start(target: Target, order_id: str, action: str, name: str, holder: str, saga_input: dict[str, Any]) -> str:
    """StartExecution; on failure the lease is released (the order stays where the repair moved it, and
    the command can be run again: the next run takes the next name)."""
    try:
        return str(
            target.client("stepfunctions").start_execution(
                stateMachineArn=target.output("StateMachineArn"), name=name, input=json.dumps(saga_input)
            )["executionArn"]
        )
    except ClientError as exc:
        from order_domain import lease

        lease.release(target.client("dynamodb"), target.output("OrdersTableName"), order_id, holder=holder)
        if exc.response.get("Error", {}).get("Code") != "ExecutionAlreadyExists":
            raise
        raise RepairRefused(
            f"refusing to {action} order {order_id}: execution {name} already exists (an earlier repair); "
            "run the command again: the next repair takes the next name",
            "name_taken",
        ) from None
