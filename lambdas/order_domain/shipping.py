"""Shipping through the carrier, keyed by business identity."""

from __future__ import annotations

from typing import Any

from lambda_resilience.idempotency import business_key
from order_domain.errors import ShippingUnavailable
from order_domain.orders import OrderRepository
from order_domain.ports import SHIPPED, Carrier
from order_domain.status import OrderStatus

SHIP = "ship-order"


class ShippingService:
    def __init__(self, carrier: Carrier, orders: OrderRepository) -> None:
        self.carrier = carrier
        self.orders = orders

    def ship(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Ship this attempt's items to its address (both read from the orders table)."""
        order_id, attempt = payload["order_id"], payload["payment_attempt"]
        order = self.orders.for_step(order_id, attempt)
        result = self.carrier.ship(
            business_key(order_id, SHIP, attempt),
            order_id=order_id,
            address=order["shipping_address"],
            items=order["items"],
        )
        if result.status != SHIPPED:
            raise ShippingUnavailable(f"order {order_id}: carrier {result.status} ({result.reason or ''})")
        self.orders.transition(order_id, OrderStatus.SHIPPED, attempt=attempt)
        return {"status": SHIPPED, "tracking_id": result.tracking_id}
