"""The orders table: one item per order, status changes as conditional writes."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from order_domain.status import TERMINAL, OrderStatus, predecessors, sources_of
from shared import clock
from shared.aws import client, error_code, from_item, to_item
from shared.exceptions import InvalidTransition, PayloadMismatch, UnknownOrder


class OrderRepository:
    """Orders keyed by ``order_id``; ``status`` only moves along :data:`TRANSITIONS`."""

    def __init__(self, table_name: str) -> None:
        self.table_name = table_name

    def create(self, order: dict[str, Any], correlation_id: str) -> bool:
        """Record a new order as RECEIVED. Returns False if it already existed (same content)."""
        now = _now()
        item = {
            "order_id": order["order_id"],
            "status": OrderStatus.RECEIVED.value,
            "correlation_id": correlation_id,
            "order": order,
            "created_at": now,
            "updated_at": now,
            "history": [{"status": OrderStatus.RECEIVED.value, "at": now}],
        }
        try:
            client("dynamodb").put_item(
                TableName=self.table_name,
                Item=to_item(item),
                ConditionExpression="attribute_not_exists(order_id)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
            return True
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise
            existing = from_item(exc.response.get("Item") or {}) or self.get(order["order_id"])
            if existing.get("order") != order:
                raise PayloadMismatch(f"order {order['order_id']} already exists with different content") from exc
            return False

    def get(self, order_id: str) -> dict[str, Any]:
        """The order item; :class:`UnknownOrder` if absent."""
        response = client("dynamodb").get_item(
            TableName=self.table_name, Key=to_item({"order_id": order_id}), ConsistentRead=True
        )
        if "Item" not in response:
            raise UnknownOrder(f"order {order_id} not found")
        return from_item(response["Item"])

    def transition(self, order_id: str, to: OrderStatus, *, error: dict[str, Any] | None = None) -> str:
        """Move the order to ``to`` if allowed; a repeat or a late (backwards) move is a no-op.

        Returns ``"moved"``, ``"already"`` (already there) or ``"stale"`` (order is past ``to``).
        Raises :class:`InvalidTransition` for a skip (e.g. RECEIVED -> COMPLETED).
        """
        allowed = sorted(s.value for s in sources_of(to))
        now = _now()
        names = {"#s": "status", "#u": "updated_at", "#h": "history"}
        values: dict[str, Any] = {":to": to.value, ":now": now, ":entry": [{"status": to.value, "at": now}]}
        placeholders = []
        for i, status in enumerate(allowed):
            values[f":f{i}"] = status
            placeholders.append(f":f{i}")
        update = "SET #s = :to, #u = :now, #h = list_append(#h, :entry)"
        if error is not None:
            names["#e"] = "last_error"
            values[":err"] = error
            update += ", #e = :err"
        try:
            client("dynamodb").update_item(
                TableName=self.table_name,
                Key=to_item({"order_id": order_id}),
                UpdateExpression=update,
                ConditionExpression=f"attribute_exists(order_id) AND #s IN ({', '.join(placeholders)})",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=to_item(values),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
            return "moved"
        except ClientError as exc:
            if error_code(exc) != "ConditionalCheckFailedException":
                raise
            old = exc.response.get("Item")
            if not old:
                raise UnknownOrder(f"order {order_id} not found") from exc
            current = OrderStatus(from_item(old)["status"])
            if current == to:
                return "already"
            if current in TERMINAL or to in predecessors(current):
                return "stale"
            raise InvalidTransition(f"order {order_id}: {current.value} -> {to.value} is not allowed") from exc


def _now() -> str:
    return clock.iso()
