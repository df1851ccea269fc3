"""Charging and refunding through the payment provider, keyed by business identity."""

from __future__ import annotations

from typing import Any

from lambda_resilience.idempotency import business_key
from order_domain.errors import PaymentDeclined, PaymentIncomplete, ProviderUnavailable
from order_domain.model import order_total_cents
from order_domain.orders import OrderRepository
from order_domain.ports import AUTHORIZED, CAPTURED, PARTIALLY_CAPTURED, REFUND_STATUSES, PaymentProvider
from order_domain.status import OrderStatus

CHARGE = "charge-payment"
REFUND = "refund-payment"


class PaymentService:
    """The provider receives our business key as its idempotency key, so a retried or
    duplicated charge is deduplicated by the provider too (belt and braces)."""

    def __init__(self, provider: PaymentProvider, orders: OrderRepository) -> None:
        self.provider = provider
        self.orders = orders

    def charge(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Charge this attempt's total with its token (both read from the orders table)."""
        order_id, attempt = payload["order_id"], payload["payment_attempt"]
        order = self.orders.for_step(order_id, attempt)
        result = self.provider.charge(
            business_key(order_id, CHARGE, attempt),
            order_id=order_id,
            amount_cents=order_total_cents(order),
            currency=order["currency"],
            payment_token=order["payment_token"],
        )
        if result.status in (PARTIALLY_CAPTURED, AUTHORIZED):
            # Money may be held or moved: the saga must refund/void, not just release stock.
            raise PaymentIncomplete(f"order {order_id}: charge ended {result.status} ({result.reason})")
        if result.status != CAPTURED:
            raise PaymentDeclined(f"order {order_id}: payment {result.status} ({result.reason or 'no reason'})")
        self.orders.transition(order_id, OrderStatus.PAYMENT_CHARGED, attempt=attempt)
        return {"status": CAPTURED, "payment_id": result.payment_id, "amount_cents": result.amount_cents}

    def refund(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Refund whatever this attempt's charge reached; the provider looks the charge up by its key.

        An order the table does not know was never charged (charge refuses unknown orders before
        calling the provider): nothing to undo, and no provider call.
        """
        order_id, attempt = payload["order_id"], payload["payment_attempt"]
        if self.orders.find(order_id) is None:
            return {"status": "nothing_to_undo", "reason": "unknown order", "amount_cents": 0}
        self.orders.transition(order_id, OrderStatus.COMPENSATING, attempt=attempt)
        result = self.provider.refund(
            business_key(order_id, REFUND, attempt),
            charge_key=business_key(order_id, CHARGE, attempt),
            order_id=order_id,
        )
        if result.status not in REFUND_STATUSES:
            raise ProviderUnavailable(f"order {order_id}: refund ended {result.status}")
        return {"status": result.status, "amount_cents": result.amount_cents}
