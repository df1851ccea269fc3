"""Accepting an order: record it, then start its saga (both idempotent on their own too)."""

from __future__ import annotations

from typing import Any

from lambda_resilience.correlation import current_correlation_id, new_correlation_id
from order_domain.orders import SUPERSEDED, OrderRepository, attempt_of
from order_domain.saga_start import SagaStarter


class IntakeService:
    def __init__(self, orders: OrderRepository, starter: SagaStarter) -> None:
        self.orders = orders
        self.starter = starter

    def accept(self, order: dict[str, Any], caller: str | None = None) -> dict[str, Any]:
        """Record the order (or its new payment attempt) for ``caller`` (the IAM principal the order
        API saw; None straight from the queue) and start that attempt's saga.

        A message for an attempt older than the order's current one is acknowledged and
        nothing starts: a newer attempt replaced it.
        """
        cid = current_correlation_id() or new_correlation_id()
        order_id, attempt = order["order_id"], attempt_of(order)
        recorded = self.orders.create(order, cid, caller=caller)
        result: dict[str, Any] = {"order_id": order_id, "payment_attempt": attempt, "recorded": recorded}
        if recorded == SUPERSEDED:
            return {**result, "execution_arn": None, "already_started": False}
        return {**result, **self.starter.start(order_id, attempt, cid)}

    def refused(self, order_id: str, rule: str, caller: str | None, idempotency_key: str | None) -> None:
        """Leave a refused message's rule on its order, for ``GET /orders/{id}`` (decision 0018)."""
        self.orders.record_refusal(order_id, rule, caller=caller, idempotency_key=idempotency_key)
