"""The load the pipeline is sized for: the seeds' figures, in one place (pure numbers, no AWS).

- Black Friday: 50,000 orders a minute for 5 minutes (the seeds' spike; /work/shared/BRIEF.md, "Limits":
  "50,000 events/min, about 833/s"); ``make spike`` runs it at 1:100.
- An ordinary month: 10 million orders (harness/costs_all_in.py spreads fixed monthly charges over the same
  figure: a shop whose Black Friday peaks at 50,000 a minute), about 231 a minute on average.

Intake's concurrency and requeues (``stacks/order_constructs/intake_sizing.py``) and the sweeper's
reconciliation capacity (:mod:`order_domain.reconcile_sizing`) are derived from these.
"""

from __future__ import annotations

PEAK_ORDERS_PER_MINUTE = 50_000
PEAK_MINUTES = 5
ORDERS_PER_MONTH = 10_000_000
SECONDS_PER_MONTH = 30 * 24 * 3600


def peak_per_second() -> float:
    return PEAK_ORDERS_PER_MINUTE / 60


def peak_orders() -> float:
    """Orders of the whole peak (250,000)."""
    return PEAK_ORDERS_PER_MINUTE * PEAK_MINUTES


def average_per_second() -> float:
    """The month's average rate (about 3.86 orders a second)."""
    return ORDERS_PER_MONTH / SECONDS_PER_MONTH
