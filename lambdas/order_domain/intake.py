"""Accepting an order: record it, then start its saga (both idempotent on their own too)."""

from __future__ import annotations

from typing import Any

from order_domain.orders import OrderRepository
from order_domain.saga_start import SagaStarter
from shared.correlation import current_correlation_id, new_correlation_id


class IntakeService:
    def __init__(self, orders: OrderRepository, starter: SagaStarter) -> None:
        self.orders = orders
        self.starter = starter

    def accept(self, order: dict[str, Any]) -> dict[str, Any]:
        cid = current_correlation_id() or new_correlation_id()
        created = self.orders.create(order, cid)
        started = self.starter.start(order, cid)
        return {"order_id": order["order_id"], "created": created, **started}
