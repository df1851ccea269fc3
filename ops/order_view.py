"""``ops order <order-id>``: what happened to one order, read by key, never by a scan.

One GetItem on the orders table, projected to the fields the order status API shows (never ``order``, which
holds the card token, name and address, nor ``owner``), then the order's executions by their deterministic
names (``order-<id>-attempt-<N>`` and the repairs ``...-repair-<k>``) with DescribeExecution: the number of
calls grows with this order's attempts and repairs, never with the table's or the state machine's history
(ListExecutions pages through every execution: https://docs.aws.amazon.com/step-functions/latest/apireference/API_ListExecutions.html).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from boto3.dynamodb.types import TypeDeserializer

from lambda_resilience.replay_history import plain
from ops.errors import OpsError
from ops.target import Target
from order_domain.saga_start import execution_name

#: The order item's fields shown (the order status API's projection, stacks/order_constructs/api_mapping.py,
#: plus the current correlation ID).
SHOWN = ("order_id", "status", "payment_attempt", "correlation_id", "created_at", "updated_at", "attempts", "history")
#: The keys of a history or attempts entry shown (anything else an entry may carry is dropped).
ENTRY_KEYS = ("status", "at", "attempt", "received_at", "correlation_id", "outcome", "previous_outcome")
#: Repairs looked up per attempt (``-repair-1`` ...): the first name that does not exist ends the lookup.
MAX_REPAIRS = 20


class UnknownOrder(OpsError):
    """No order by that ID in the stack's orders table."""


def _read_item(target: Target, order_id: str) -> dict[str, Any]:
    table = target.output("OrdersTableName")
    names = {f"#f{i}": field for i, field in enumerate(SHOWN)}
    item = (
        target.client("dynamodb")
        .get_item(
            TableName=table,
            Key={"order_id": {"S": order_id}},
            ProjectionExpression=", ".join(names),
            ExpressionAttributeNames=names,
        )
        .get("Item")
    )
    if not item:
        raise UnknownOrder(f"no order {order_id!r} in table {table}")
    deserialize = TypeDeserializer().deserialize
    return {k: plain(deserialize(v)) for k, v in item.items()}


def _entries(item: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [{k: e[k] for k in ENTRY_KEYS if k in e} for e in item.get(name) or [] if isinstance(e, dict)]


def describe_execution(sfn: Any, machine_arn: str, name: str) -> dict[str, Any] | None:
    """The execution named ``name`` of the state machine (DescribeExecution by its ARN: no listing), or None."""
    arn = machine_arn.replace(":stateMachine:", ":execution:", 1) + ":" + name
    try:
        found = sfn.describe_execution(executionArn=arn)
    except sfn.exceptions.ExecutionDoesNotExist:
        return None
    stop = found.get("stopDate")
    return {
        "name": name,
        "status": found["status"],
        "started": _iso(found.get("startDate")),
        "stopped": _iso(stop) if stop else None,
        "arn": arn,
    }


def _iso(value: Any) -> str | None:
    return value.isoformat() if isinstance(value, datetime) else None


def executions(target: Target, order_id: str, attempts: int, *, first: int = 1) -> list[dict[str, Any]]:
    """The order's executions, each attempt's (``first`` to ``attempts``) then its repairs', by name
    (DescribeExecution only). Repairs are ``-repair-0``, ``-repair-1``, ... (ops/repair.py ``_next_name``; repairs
    named before decision 0029 start at 1): a missing ``-repair-0`` does not end the lookup, and an attempt whose
    own execution never started (the sweeper parked it) may still have repairs."""
    sfn = target.client("stepfunctions")
    machine = target.output("StateMachineArn")
    found: list[dict[str, Any]] = []
    for attempt in range(first, attempts + 1):
        base = execution_name(order_id, attempt)
        execution = describe_execution(sfn, machine, base)
        if execution is not None:
            found.append({**execution, "attempt": attempt})
        for k in range(MAX_REPAIRS + 1):
            repair = describe_execution(sfn, machine, f"{base}-repair-{k}")
            if repair is None and k > 0:
                break
            if repair is not None:
                found.append({**repair, "attempt": attempt})
    return found


#: Attempts looked up by name when the order's own count is not known (``ops trace``).
MAX_ATTEMPTS = 20


def executions_by_name(target: Target, order_id: str) -> list[dict[str, Any]]:
    """The order's executions, attempt 1, 2, ... until the first name that does not exist."""
    found: list[dict[str, Any]] = []
    for attempt in range(1, MAX_ATTEMPTS + 1):
        more = executions(target, order_id, attempt, first=attempt)
        if not more:
            break
        found += more
    return found


def order_view(target: Target, order_id: str) -> dict[str, Any]:
    """Status, attempts, timeline, correlation IDs and executions of one order; no customer data."""
    item = _read_item(target, order_id)
    timeline, attempts = _entries(item, "history"), _entries(item, "attempts")
    ids = {item.get("correlation_id"), *(e.get("correlation_id") for e in timeline + attempts)}
    count = int(item.get("payment_attempt", 1))
    return {
        "order_id": item["order_id"],
        "status": item.get("status"),
        "attempts": count,
        "created_at": item.get("created_at"),
        "updated_at": item.get("updated_at"),
        "correlation_ids": sorted(str(i) for i in ids if i),
        "attempt_details": attempts,
        "timeline": timeline,
        "executions": executions(target, order_id, count),
    }


def format_order(view: dict[str, Any]) -> str:
    lines = [
        f"order {view['order_id']}: {view['status']} (attempt {view['attempts']}), "
        f"correlation IDs: {', '.join(view['correlation_ids']) or '-'}",
        "timeline:",
        *(
            f"  {e.get('at', '-'):<26} attempt {e.get('attempt', '-')!s:<3} {e.get('status', '-'):<20} "
            f"{e.get('correlation_id', '')}"
            for e in view["timeline"]
        ),
        "executions:",
        *(f"  {e['name']:<48} {e['status']:<10} {e['started']} -> {e['stopped'] or '...'}" for e in view["executions"]),
    ]
    if not view["executions"]:
        lines.append("  none found by name (the saga never started, or it was started under another name)")
    return "\n".join(lines)
