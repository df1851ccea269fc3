"""A saga step's settings when it needs the orders table only."""

from __future__ import annotations

from typing import NamedTuple

from order_domain.settings import DEFAULT_IDEMPOTENCY_TTL_SECONDS


class StepSettings(NamedTuple):
    """A saga step that needs the orders table only (the base every step has)."""

    idempotency_table: str
    orders_table: str
    idempotency_ttl_seconds: int = DEFAULT_IDEMPOTENCY_TTL_SECONDS
