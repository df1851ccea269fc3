"""A saga step's settings when it needs the orders table only."""

from __future__ import annotations

from typing import NamedTuple

from order_domain.settings import DEFAULT_IDEMPOTENCY_TTL_SECONDS, Env, environ, idempotent_order_fields


class StepSettings(NamedTuple):
    """A saga step that needs the orders table only (the base every step has)."""

    idempotency_table: str
    orders_table: str
    idempotency_ttl_seconds: int = DEFAULT_IDEMPOTENCY_TTL_SECONDS

    @classmethod
    def from_env(cls, env: Env | None = None) -> StepSettings:
        env = environ(env)
        return cls(
            **idempotent_order_fields(env),
        )
