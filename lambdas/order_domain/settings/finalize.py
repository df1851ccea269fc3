"""FinalizeOrder's settings."""

from __future__ import annotations

from typing import NamedTuple

from order_domain.settings import DEFAULT_IDEMPOTENCY_TTL_SECONDS


class FinalizeSettings(NamedTuple):
    """FinalizeOrder (and the park): the orders table and the needs-attention queue."""

    idempotency_table: str
    orders_table: str
    #: Required: refuse to start rather than park an order that nobody would hear about.
    needs_attention_queue_url: str
    idempotency_ttl_seconds: int = DEFAULT_IDEMPOTENCY_TTL_SECONDS
