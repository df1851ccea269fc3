"""FinalizeOrder's settings."""

from __future__ import annotations

from typing import NamedTuple

from order_domain import env as names
from order_domain.settings import DEFAULT_IDEMPOTENCY_TTL_SECONDS, Env, environ, idempotent_order_fields, required


class FinalizeSettings(NamedTuple):
    """FinalizeOrder (and the park): the orders table and the needs-attention queue."""

    idempotency_table: str
    orders_table: str
    #: Required: refuse to start rather than park an order that nobody would hear about.
    needs_attention_queue_url: str
    idempotency_ttl_seconds: int = DEFAULT_IDEMPOTENCY_TTL_SECONDS

    @classmethod
    def from_env(cls, env: Env | None = None) -> FinalizeSettings:
        env = environ(env)
        return cls(
            **idempotent_order_fields(env),
            needs_attention_queue_url=required(env, names.NEEDS_ATTENTION_QUEUE_URL),
        )
