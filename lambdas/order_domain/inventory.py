"""Inventory: stock per SKU and one reservation per order, changed only in transactions."""

from __future__ import annotations

from collections import Counter
from typing import Any

from botocore.exceptions import ClientError

from lambda_resilience.aws import cancelled_only_by_conditions, error_code, from_item, to_item
from lambda_resilience.exceptions import UncachedAnswer
from order_domain import intents
from order_domain.errors import (
    InsufficientStock,
    InvalidOrder,
    InvalidTransition,
    InventoryContention,
    OrderMovedOn,
)
from order_domain.orders import OrderRepository, compensating
from order_domain.status import OrderStatus

RESERVED = "RESERVED"
RELEASED = "RELEASED"
RESERVE = "reserve-inventory"


def _transient(exc: ClientError, what: str) -> InventoryContention:
    reasons = [r.get("Code") for r in exc.response.get("CancellationReasons") or []]
    return InventoryContention(f"{what}: transaction cancelled ({reasons}); retry")


def sku_key(sku: str) -> dict[str, Any]:
    return to_item({"pk": f"sku#{sku}"})


def reservation_key(order_id: str, attempt: int = 1) -> dict[str, Any]:
    """One reservation per payment attempt: attempt 2 reserves again after attempt 1 released."""
    return to_item({"pk": f"reservation#{order_id}#attempt-{attempt}"})


class InventoryService:
    """Reserve and release stock for an order.

    A reservation and its stock decrements commit together (TransactWriteItems), so a
    reservation is never partly made. Releasing when nothing was reserved writes a RELEASED
    tombstone first, so a late reserve for the same order cannot take stock afterwards.
    """

    def __init__(self, table_name: str, orders: OrderRepository, *, client: Any) -> None:
        """``client``: the DynamoDB client of the inventory table."""
        self.table_name = table_name
        self.orders = orders
        self.client = client

    def _quantities(self, order: dict[str, Any]) -> Counter[str]:
        """Quantities per SKU; refuses anything but positive integers (stock must never grow here)."""
        counts: Counter[str] = Counter()
        for item in order.get("items") or []:
            quantity = item.get("quantity") if isinstance(item, dict) else None
            if isinstance(quantity, bool) or not isinstance(quantity, int) or quantity < 1:
                raise InvalidOrder(f"order {order.get('order_id')}: every quantity must be a positive integer")
            counts[str(item["sku"])] += quantity
        if not counts:
            raise InvalidOrder(f"order {order.get('order_id')}: no items")
        return counts

    def get_reservation(self, order_id: str, attempt: int = 1) -> dict[str, Any] | None:
        response = self.client.get_item(
            TableName=self.table_name, Key=reservation_key(order_id, attempt), ConsistentRead=True
        )
        return from_item(response["Item"]) if "Item" in response else None

    def reserve(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Reserve every item of the order or none; InsufficientStock if any SKU is short.

        The order is read from the orders table first, with the reserve's intent recorded (decision
        0028): an unknown order, a replaced attempt or an order outside the step's stage (COMPENSATING,
        terminal) is refused before any stock moves. A status write refused after the stock moved
        (another actor moved the order meanwhile) raises :class:`OrderMovedOn`, never success.
        """
        order_id, attempt = payload["order_id"], payload["payment_attempt"]
        stage = intents.FORWARD_STAGES[RESERVE]
        order = dict(intents.record(self.orders, order_id, attempt, RESERVE, stage)["order"])
        quantities = self._quantities(order)
        reservation = {
            **reservation_key(order_id, attempt),
            **to_item({"status": RESERVED, "order_id": order_id, "items": dict(quantities)}),
        }
        actions: list[dict[str, Any]] = [
            {
                "Put": {
                    "TableName": self.table_name,
                    "Item": reservation,
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            }
        ]
        for sku, qty in sorted(quantities.items()):
            actions.append(
                {
                    "Update": {
                        "TableName": self.table_name,
                        "Key": sku_key(sku),
                        "UpdateExpression": "SET available = available - :q",
                        "ConditionExpression": "attribute_exists(pk) AND available >= :q",
                        "ExpressionAttributeValues": to_item({":q": qty}),
                    }
                }
            )
        try:
            self.client.transact_write_items(TransactItems=actions)
        except ClientError as exc:
            if error_code(exc) != "TransactionCanceledException":
                raise
            if not cancelled_only_by_conditions(exc):
                raise _transient(exc, f"order {order_id}: reserve") from exc
            existing = self.get_reservation(order_id, attempt)
            if existing is None:
                raise InsufficientStock(f"order {order_id}: not enough stock for {dict(quantities)}") from exc
            if existing["status"] == RELEASED:
                raise InvalidTransition(f"order {order_id}: reservation was already released") from exc
        moved = self.orders.transition(order_id, OrderStatus.INVENTORY_RESERVED, attempt=attempt)
        if moved == "stale" and intents.moved_on(self.orders, order_id, attempt, RESERVE):
            raise OrderMovedOn(f"order {order_id}: stock reserved, but the order moved past INVENTORY_RESERVED")
        return {"status": "reserved", "items": dict(quantities)}

    def release(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Give back whatever this attempt reserved; safe if nothing or everything was released.

        An order the table does not know has nothing to undo (reserve refuses unknown orders
        before any stock moves): the release succeeds without writing anything.
        """
        order_id, attempt = payload["order_id"], payload["payment_attempt"]
        if self.orders.find(order_id) is None:
            raise UncachedAnswer({"status": "nothing_to_undo", "reason": "unknown order"})
        if compensating(self.orders, order_id, attempt, payload) == "stale":
            # Terminal (e.g. COMPLETED) or replaced (parked with no operator asking raised OrderParked): its
            # stock stays where it is. An answer of this moment, never cached.
            raise UncachedAnswer({"status": "stale"})
        for _ in range(3):
            existing = self.get_reservation(order_id, attempt)
            if existing is None:
                try:
                    self.client.put_item(
                        TableName=self.table_name,
                        Item={
                            **reservation_key(order_id, attempt),
                            **to_item({"status": RELEASED, "order_id": order_id, "items": {}}),
                        },
                        ConditionExpression="attribute_not_exists(pk)",
                    )
                    return {"status": "nothing_reserved"}
                except ClientError as exc:
                    if error_code(exc) != "ConditionalCheckFailedException":
                        raise
                    continue  # a reserve just landed: release it
            if existing["status"] == RELEASED:
                return {"status": "already_released"}
            actions = self._release_actions(order_id, attempt, existing.get("items", {}))
            try:
                self.client.transact_write_items(TransactItems=actions)
                return {"status": "released", "items": existing.get("items", {})}
            except ClientError as exc:
                if error_code(exc) != "TransactionCanceledException":
                    raise
                if not cancelled_only_by_conditions(exc):
                    raise _transient(exc, f"order {order_id}: release") from exc
        # Three races in a row: never claim a release that did not happen; let the saga retry.
        raise InventoryContention(f"order {order_id}: reservation kept changing while releasing it")

    def _release_actions(self, order_id: str, attempt: int, items: dict[str, Any]) -> list[dict[str, Any]]:
        """One transaction: the reservation RESERVED -> RELEASED, and each SKU's quantity given back."""
        actions: list[dict[str, Any]] = [
            {
                "Update": {
                    "TableName": self.table_name,
                    "Key": reservation_key(order_id, attempt),
                    "UpdateExpression": "SET #s = :released",
                    "ConditionExpression": "#s = :reserved",
                    "ExpressionAttributeNames": {"#s": "status"},
                    "ExpressionAttributeValues": to_item({":released": RELEASED, ":reserved": RESERVED}),
                }
            }
        ]
        for sku, qty in sorted(items.items()):
            actions.append(
                {
                    "Update": {
                        "TableName": self.table_name,
                        "Key": sku_key(sku),
                        "UpdateExpression": "SET available = available + :q",
                        "ExpressionAttributeValues": to_item({":q": int(qty)}),
                    }
                }
            )
        return actions
