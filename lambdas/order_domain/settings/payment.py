"""ChargePayment's and RefundPayment's settings."""

from __future__ import annotations

from typing import NamedTuple

from order_domain.settings import DEFAULT_IDEMPOTENCY_TTL_SECONDS
from order_domain.settings.providers import Provider


class PaymentStepSettings(NamedTuple):
    """ChargePayment and RefundPayment: the orders table and the payment provider."""

    idempotency_table: str
    orders_table: str
    payment: Provider
    idempotency_ttl_seconds: int = DEFAULT_IDEMPOTENCY_TTL_SECONDS
