"""Finding stuck orders: non-terminal for longer than a threshold (orders table, by-status index)."""

from __future__ import annotations

from typing import Any

from lambda_resilience.aws import client, from_item
from order_domain import clock
from order_domain.status import TERMINAL, OrderStatus

STATUS_INDEX = "by-status"
NON_TERMINAL = tuple(s for s in OrderStatus if s not in TERMINAL)


def cutoff_iso(now: float, stuck_after_seconds: int) -> str:
    """The ``updated_at`` before which a non-terminal order counts as stuck."""
    return clock.iso(now - stuck_after_seconds)


def find_stuck(orders_table: str, stuck_after_seconds: int, now: float | None = None) -> list[dict[str, Any]]:
    """Orders whose status is non-terminal and whose last update is older than the threshold."""
    cutoff = cutoff_iso(clock.now() if now is None else now, stuck_after_seconds)
    stuck: list[dict[str, Any]] = []
    paginator = client("dynamodb").get_paginator("query")
    for status in NON_TERMINAL:
        pages = paginator.paginate(
            TableName=orders_table,
            IndexName=STATUS_INDEX,
            KeyConditionExpression="#s = :s AND updated_at < :cutoff",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":s": {"S": status.value}, ":cutoff": {"S": cutoff}},
        )
        for page in pages:
            stuck.extend(from_item(item) for item in page.get("Items", []))
    return stuck
