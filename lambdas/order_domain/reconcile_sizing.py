"""How many orders the sweeper reconciles per sweep, derived from the seeds' rate and the providers' read limits.

Webhooks are the primary path (:mod:`order_domain.webhook_endpoint`); the sweeper's provider lookups are the
fallback: the reconciliation of every terminal order (one lookup at each provider per attempt, the charge then
the shipment: :mod:`order_domain.reconcile`) and the poll of the ``unsettled`` index (one refund lookup per
pending refund: :mod:`order_domain.settle_poll`). Sized here:

- **Never above the provider's read limit.** Stripe: 100 requests a second per account in live mode, and 25 a
  second on each API endpoint unless noted (https://docs.stripe.com/rate-limits); background jobs should keep
  to "a subset of the maximum" so that live charges succeed
  (https://support.stripe.com/questions/rate-limit-error-when-creating-bulk-api-requests). The sweeper takes
  :data:`READ_SHARE` of one endpoint's limit per provider, all its lookups at that provider counted together
  (charges and refunds: one pacer, :mod:`order_domain.pacing`); the saga's own lookups keep the rest. The
  carrier stand-in documents no limit (docs/providers.md): the same figure is assumed.
- **Above the seeds' average, with headroom.** 10 million orders a month (:mod:`order_domain.seed_load`), about
  3.86 a second, 1,157 a sweep: reconciliation takes :data:`HEADROOM` times that.
- **In the sweep's time.** A sweep starts every :data:`SWEEP_SECONDS` and ends before the next
  (:data:`SWEEPER_TIMEOUT_SECONDS`; Lambda allows up to 900 s:
  https://docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html), so two sweeps never check the same
  attempt at once. It stops taking orders :data:`RESERVE_SECONDS` before its timeout: what the orders already
  taken may still need (an order's two lookups, each up to the HTTPS client's connect and read timeouts) and the
  handler's own end (the parked-orders count and the metrics). A lookup is assumed to take
  :data:`LOOKUP_SECONDS`; an order's lookups run one after the other, so reaching the paced rate takes
  ``rate x LOOKUPS_PER_ORDER x LOOKUP_SECONDS`` orders at once.
- **The seeds' peak** (50,000 orders a minute) is out of reach of per-order lookups under the documented
  limits: checking it inside the reconcile window would take
  :attr:`ReconcileCapacity.peak_reads_per_second_for_window` (about 840 a second, above even Stripe's account
  limit). At the peak the sweeper checks its capacity's worth of the oldest orders each sweep, the rest leave
  the window unchecked (``SweepDeferred`` says so) and the webhooks settle them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from order_domain import seed_load

#: Stripe: each API endpoint 25 requests a second unless noted (live mode); the account 100 (the page above).
PROVIDER_READS_PER_SECOND = 25.0
PROVIDER_ACCOUNT_REQUESTS_PER_SECOND = 100.0
#: The sweeper's part of an endpoint's limit: "a subset of the maximum" (Stripe's support note above).
READ_SHARE = 0.5
#: Reconciliation capacity over the seeds' average rate.
HEADROOM = 2.0
#: An assumed lookup: one HTTPS round trip (Stripe's GETs usually answer well under a second).
LOOKUP_SECONDS = 1.0
#: Lookups per order, one after the other: the charge at the payment provider, the shipment at the carrier.
LOOKUPS_PER_ORDER = 2
#: The HTTPS client's connect and read timeouts (order_domain.https_providers.DEFAULT_CONNECT_TIMEOUT and
#: DEFAULT_READ_TIMEOUT; not imported: the settings load without the HTTPS adapter).
LOOKUP_CONNECT_SECONDS, LOOKUP_READ_SECONDS = 3.05, 10.0
#: The handler's own end after the sweep: the parked-orders count and the metrics.
CLOSE_SECONDS = 2.0
#: Stop taking orders this long before the timeout: an order taken just before may need its two lookups at
#: their longest (the client's retries are not counted: they wait only when the invocation's time allows).
RESERVE_SECONDS = LOOKUPS_PER_ORDER * (LOOKUP_CONNECT_SECONDS + LOOKUP_READ_SECONDS) + CLOSE_SECONDS
#: The sweeper's schedule and timeout (stacks/order_constructs/sweeper.py uses these).
SWEEP_SECONDS = 300
SWEEPER_TIMEOUT_SECONDS = 280
#: The reconcile window (three sweeps: a failed sweep or two still leave each order checked once).
RECONCILE_WINDOW_SECONDS = 900


@dataclass(frozen=True)
class ReconcileCapacity:
    """Per provider: lookups a second and per sweep, and the orders a sweep reconciles."""

    reads_per_second: float
    reads_per_sweep: int
    workers: int
    reconcile_per_sweep: int
    average_per_sweep: float

    @property
    def headroom(self) -> float:
        """Reconciliation capacity over the seeds' average."""
        return self.reconcile_per_sweep / self.average_per_sweep

    @property
    def reconcile_seconds(self) -> float:
        """How long a sweep's reconciliation takes at the paced rate (one lookup per order at each provider)."""
        return self.reconcile_per_sweep / self.reads_per_second

    @property
    def peak_per_sweep(self) -> float:
        """The seeds' peak rate over one sweep interval (250,000 orders)."""
        return seed_load.peak_per_second() * SWEEP_SECONDS

    @property
    def peak_reads_per_second_for_window(self) -> float:
        """The read limit that checks the whole peak before it leaves the window (at this share, plus the
        average): what per-order lookups would need of the provider."""
        checks = seed_load.peak_orders() / (RECONCILE_WINDOW_SECONDS - SWEEP_SECONDS) + seed_load.average_per_second()
        return checks / READ_SHARE


def size_reconciliation(
    *, sweep_seconds: float = SWEEP_SECONDS, timeout_seconds: float = SWEEPER_TIMEOUT_SECONDS
) -> ReconcileCapacity:
    """The sweeper's per-sweep figures (see the module doc)."""
    if timeout_seconds >= sweep_seconds:
        raise ValueError(f"a sweep ({timeout_seconds:g} s) must end before the next ({sweep_seconds:g} s)")
    rate = PROVIDER_READS_PER_SECOND * READ_SHARE
    reads = math.floor(rate * (timeout_seconds - RESERVE_SECONDS))
    average = seed_load.average_per_second() * sweep_seconds
    reconcile = math.ceil(HEADROOM * average)
    if reconcile > reads:
        raise ValueError(f"{reads} reads a sweep cannot reconcile {reconcile} orders: a longer sweep or a larger limit")
    return ReconcileCapacity(
        reads_per_second=rate,
        reads_per_sweep=reads,
        workers=math.ceil(rate * LOOKUPS_PER_ORDER * LOOKUP_SECONDS),
        reconcile_per_sweep=reconcile,
        average_per_sweep=average,
    )


CAPACITY = size_reconciliation()
