"""FinalizeOrder's settings."""

from __future__ import annotations

from typing import NamedTuple

from order_domain import env as names
from order_domain.settings import DEFAULT_IDEMPOTENCY_TTL_SECONDS, Env, environ, idempotency_ttl, required


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
            idempotency_table=required(env, names.IDEMPOTENCY_TABLE_NAME),
            orders_table=required(env, names.ORDERS_TABLE_NAME),
            needs_attention_queue_url=required(env, names.NEEDS_ATTENTION_QUEUE_URL),
            idempotency_ttl_seconds=idempotency_ttl(env),
        )
