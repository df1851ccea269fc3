"""The stuck-order sweeper's settings."""

from __future__ import annotations

from typing import NamedTuple

from order_domain import env as names
from order_domain.settings import Env, environ, integer, required
from order_domain.settings.providers import Provider, carrier_from_env, payment_from_env


class SweeperSettings(NamedTuple):
    """The stuck-order sweeper: orders, state machine, needs-attention queue and both providers."""

    orders_table: str
    state_machine_arn: str
    needs_attention_queue_url: str
    payment: Provider
    carrier: Provider
    stuck_after_seconds: int = 1800
    #: The sweeper reconciles orders that became COMPLETED or COMPENSATED this recently (three
    #: 5-minute sweeps: a failed sweep or two still leaves each order checked once).
    reconcile_window_seconds: int = 900
    #: ... at most this many per sweep (two provider lookups each), the oldest first.
    reconcile_max_orders: int = 200

    @classmethod
    def from_env(cls, env: Env | None = None) -> SweeperSettings:
        env = environ(env)
        return cls(
            orders_table=required(env, names.ORDERS_TABLE_NAME),
            state_machine_arn=required(env, names.STATE_MACHINE_ARN),
            needs_attention_queue_url=required(env, names.NEEDS_ATTENTION_QUEUE_URL),
            payment=payment_from_env(env),
            carrier=carrier_from_env(env),
            stuck_after_seconds=integer(env, names.STUCK_AFTER_SECONDS, 1800),
            reconcile_window_seconds=integer(env, names.RECONCILE_WINDOW_SECONDS, 900),
            reconcile_max_orders=integer(env, names.RECONCILE_MAX_ORDERS, 200),
        )
