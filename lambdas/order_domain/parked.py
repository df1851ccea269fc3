"""How many orders are parked for an operator right now (NEEDS_ATTENTION in the orders table).

The sweeper publishes it every run as the ``ParkedOrders`` gauge: an order stays announced for as
long as it is parked, whatever the needs-attention queue's retention (docs/decisions/0023).
"""

from __future__ import annotations

from typing import Any

from order_domain.status import OrderStatus

STATUS_INDEX = "by-status"


def count_parked(orders_table: str, *, client: Any) -> int:
    """NEEDS_ATTENTION orders, counted on the by-status index (``Select=COUNT``: no item is read out;
    https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_Query.html#DDB-Query-request-Select)."""
    pages = client.get_paginator("query").paginate(
        TableName=orders_table,
        IndexName=STATUS_INDEX,
        KeyConditionExpression="#s = :s",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":s": {"S": OrderStatus.NEEDS_ATTENTION.value}},
        Select="COUNT",
    )
    return sum(int(page.get("Count", 0)) for page in pages)
