"""The load the sweeper's reconciliation is sized for, in one place (pure numbers, no AWS), each with its source.

- **The seeds' peak**: 50,000 orders a minute on Black Friday (the seeds' own figure: "Traffic spikes to 50,000
  events per minute", the first two seed articles; /work/shared/BRIEF.md, "Limits": "50,000 events/min, about
  833/s"). How long it lasts the seeds do not say: 5 minutes is ``make spike``'s assumption
  (``harness/spike/spike.py``, ``SpikeOptions.minutes``), kept here.
- **An ordinary month**: 10 million orders, about 3.86 a second, 231 a minute. Not a seed figure (the seeds give
  50 a minute, in staging): the project's assumption for a shop whose Black Friday peaks at 50,000 a minute,
  the figure ``harness/reporting/costs_all_in.py`` (``ORDERS_PER_MONTH``) spreads monthly charges over. It is above the
  seeds' 50 a minute, so sizing to it is the cautious side.

The sweeper's reconciliation capacity (:mod:`order_domain.reconcile_sizing`) is derived from these.
"""

from __future__ import annotations

PEAK_ORDERS_PER_MINUTE = 50_000
PEAK_MINUTES = 5
#: The seeds' staging rate (the ordinary rate they name); the sizing uses the larger monthly figure below.
STAGING_ORDERS_PER_MINUTE = 50
ORDERS_PER_MONTH = 10_000_000
SECONDS_PER_MONTH = 30 * 24 * 3600


def peak_per_second() -> float:
    """The seeds' Black Friday rate (about 833 a second)."""
    return PEAK_ORDERS_PER_MINUTE / 60


def peak_orders() -> float:
    """Orders of the whole peak (250,000)."""
    return PEAK_ORDERS_PER_MINUTE * PEAK_MINUTES


def average_per_second() -> float:
    """The month's average rate (about 3.86 orders a second)."""
    return ORDERS_PER_MONTH / SECONDS_PER_MONTH
