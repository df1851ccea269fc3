"""ReserveInventory's and ReleaseInventory's settings."""

from __future__ import annotations

from typing import NamedTuple

from order_domain import env as names
from order_domain.settings import DEFAULT_IDEMPOTENCY_TTL_SECONDS, Env, environ, idempotent_order_fields, required


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
            **idempotent_order_fields(env),
            inventory_table=required(env, names.INVENTORY_TABLE_NAME),
        )
