"""ReserveInventory's and ReleaseInventory's settings."""

from __future__ import annotations

from typing import NamedTuple

from order_domain.settings import DEFAULT_IDEMPOTENCY_TTL_SECONDS


class InventoryStepSettings(NamedTuple):
    """ReserveInventory and ReleaseInventory."""

    idempotency_table: str
    orders_table: str
    inventory_table: str
    idempotency_ttl_seconds: int = DEFAULT_IDEMPOTENCY_TTL_SECONDS
