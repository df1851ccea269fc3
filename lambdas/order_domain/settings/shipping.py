"""ShipOrder's and CancelShipment's settings."""

from __future__ import annotations

from typing import NamedTuple

from order_domain.settings import DEFAULT_IDEMPOTENCY_TTL_SECONDS
from order_domain.settings.providers import Provider


class ShippingStepSettings(NamedTuple):
    """ShipOrder and CancelShipment: the orders table and the carrier."""

    idempotency_table: str
    orders_table: str
    carrier: Provider
    idempotency_ttl_seconds: int = DEFAULT_IDEMPOTENCY_TTL_SECONDS
