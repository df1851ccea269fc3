"""ReserveInventory's and ReleaseInventory's settings."""

from __future__ import annotations

from typing import NamedTuple

from order_domain import env as names
from order_domain.settings import DEFAULT_IDEMPOTENCY_TTL_SECONDS, Env, environ, idempotency_ttl, required


class InventoryStepSettings(NamedTuple):
    """ReserveInventory and ReleaseInventory."""

    idempotency_table: str
    orders_table: str
    inventory_table: str
    idempotency_ttl_seconds: int = DEFAULT_IDEMPOTENCY_TTL_SECONDS

    @classmethod
    def from_env(cls, env: Env | None = None) -> InventoryStepSettings:
        env = environ(env)
        return cls(
            idempotency_table=required(env, names.IDEMPOTENCY_TABLE_NAME),
            orders_table=required(env, names.ORDERS_TABLE_NAME),
            inventory_table=required(env, names.INVENTORY_TABLE_NAME),
            idempotency_ttl_seconds=idempotency_ttl(env),
        )
