"""``ops orders --status NEEDS_ATTENTION|<status>|stuck``: orders by status through the orders table's
``by-status`` index (hash ``status``, range ``updated_at``), oldest first.

A Query per status, one page of at most ``--max`` items each: the calls grow with the statuses asked for,
never with the table (a Scan reads every item). It replaces looking at the needs-attention queue, where every
ReceiveMessage counts toward the queue's maxReceiveCount and three looks move a parked order's message to
its DLQ (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-dead-letter-queues.html).
The index projects the keys and the correlation ID only: no customer data can be shown.
"""

from __future__ import annotations

import time
from typing import Any

from ops.errors import UsageError
from ops.target import Target, TargetError
from order_domain.status import TERMINAL, OrderStatus

INDEX = "by-status"
STUCK = "stuck"
#: The statuses an execution still owns: an order in one of them, not updated for longer than the saga's
#: timeout, is stuck (no execution can still be moving it: decision 0005).
OPEN = tuple(s.value for s in OrderStatus if s not in TERMINAL)
DEFAULT_MAX = 50
#: Without the stack's SagaTimeoutSeconds output.
DEFAULT_STUCK_SECONDS = 3600
FIELDS = ("order_id", "status", "updated_at", "correlation_id")


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def _query(target: Target, status: str, before: str | None, max_items: int) -> list[dict[str, Any]]:
    names = {"#s": "status", "#u": "updated_at", "#o": "order_id", "#c": "correlation_id"}
    values: dict[str, Any] = {":s": {"S": status}}
    condition = "#s = :s"
    if before is not None:
        condition += " AND #u < :before"
        values[":before"] = {"S": before}
    answer = target.client("dynamodb").query(
        TableName=target.output("OrdersTableName"),
        IndexName=INDEX,
        KeyConditionExpression=condition,
        ProjectionExpression="#o, #s, #u, #c",
        ExpressionAttributeNames=names,
        ExpressionAttributeValues=values,
        ScanIndexForward=True,
        Limit=max_items,
    )
    return [{k: next(iter(item[k].values())) for k in FIELDS if k in item} for item in answer.get("Items", [])]


def _stuck_seconds(target: Target) -> int:
    try:
        return int(target.output("SagaTimeoutSeconds"))
    except (TargetError, ValueError):
        return DEFAULT_STUCK_SECONDS


def orders_by_status(
    target: Target,
    status: str,
    *,
    max_items: int = DEFAULT_MAX,
    older_than_seconds: float | None = None,
    now: float | None = None,
) -> list[dict[str, Any]]:
    """At most ``max_items`` orders in ``status`` (or ``stuck``: any open status, not updated for longer than
    the saga's timeout), oldest first; each its ID, status, last update and correlation ID."""
    now = time.time() if now is None else now
    if status == STUCK:
        statuses = OPEN
        older_than_seconds = _stuck_seconds(target) if older_than_seconds is None else older_than_seconds
    elif status in {s.value for s in OrderStatus}:
        statuses = (status,)
    else:
        raise UsageError(f"unknown status {status!r}; choose from {', '.join(s.value for s in OrderStatus)}, stuck")
    before = None if older_than_seconds is None else _iso(now - older_than_seconds)
    found = [o for s in statuses for o in _query(target, s, before, max_items)]
    return sorted(found, key=lambda o: str(o.get("updated_at", "")))[:max_items]


def format_orders(orders: list[dict[str, Any]]) -> str:
    lines = [f"{'order':<28} {'status':<20} {'updated at':<22} correlation id"]
    lines += [
        f"{o.get('order_id', '-'):<28} {o.get('status', '-'):<20} {o.get('updated_at', '-'):<22} "
        f"{o.get('correlation_id', '-')}"
        for o in orders
    ]
    return "\n".join(lines) if orders else "no order found"
