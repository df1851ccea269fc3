"""The stuck-order sweeper's settings."""

from __future__ import annotations

from typing import NamedTuple

from order_domain.reconcile_sizing import CAPACITY, RECONCILE_WINDOW_SECONDS
from order_domain.settings.providers import Provider


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
    reconcile_window_seconds: int = RECONCILE_WINDOW_SECONDS
    #: ... at most this many per sweep (two provider lookups each), the oldest first: twice the seeds' average
    #: rate (order_domain.reconcile_sizing).
    reconcile_max_orders: int = CAPACITY.reconcile_per_sweep
