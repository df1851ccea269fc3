"""How much the sweeper reconciles and polls per sweep, derived from the seeds' rate and the providers' read limits.

Webhooks are the primary path (:mod:`order_domain.webhook_endpoint`); the sweeper's provider lookups are the
fallback: the reconciliation of every terminal order (one lookup at each provider per attempt:
:mod:`order_domain.reconcile`) and the poll of the ``unsettled`` index (one refund lookup per pending refund:
:mod:`order_domain.settle_poll`). Sized here:

- **Never above the provider's read limit.** Stripe allows 100 requests a second per account in live mode
  and 25 a second on each endpoint unless noted (https://docs.stripe.com/rate-limits), and asks that
  background jobs keep to a subset of the maximum so that live charges succeed
  (https://support.stripe.com/questions/rate-limit-error-when-creating-bulk-api-requests). The sweeper takes
  :data:`READ_SHARE` of an endpoint's limit, paced (:mod:`order_domain.pacing`), the rest left to the saga's own
  lookups. The carrier stand-in documents no limit (docs/providers.md): the same figure is assumed.
- **Above the seeds' average, with headroom.** 10 million orders a month (:mod:`order_domain.seed_load`),
  about 3.9 a second: reconciliation takes :data:`HEADROOM` times a sweep's share of them; the poll the rest.
- **In the sweep's time.** A sweep works ``work_seconds`` (its timeout less the reserve); a lookup is assumed to
  take :data:`LOOKUP_SECONDS`, so reaching the paced rate needs ``rate x LOOKUP_SECONDS`` lookups at once.
- **The seeds' peak** (250,000 orders in 5 minutes) is more than this rate can check inside the reconcile
  window: :attr:`ReconcileCapacity.peak_drain_seconds` says how long the backlog would take at the spare rate,
  :attr:`ReconcileCapacity.peak_reads_per_second_for_window` what read limit checking it inside the window takes
  (a limit increase Stripe grants on request, six weeks ahead); until then, at the peak, the webhooks settle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from order_domain import seed_load

#: Stripe: each endpoint 25 requests a second unless noted, live mode (the rate-limits page above).
PROVIDER_READS_PER_SECOND = 25.0
#: The sweeper's part of it: "a subset of the maximum" (Stripe's support note above); the saga keeps the rest.
READ_SHARE = 0.5
#: Reconciliation capacity over the seeds' average rate.
HEADROOM = 2.0
#: An assumed lookup (one HTTPS round trip; the client's worst case is 13 s: connect 3.05 + read 10).
LOOKUP_SECONDS = 1.0
#: The sweeper's schedule and timeout (stacks/order_constructs/sweeper.py uses these): a sweep ends before the
#: next one starts, and works all but :data:`RESERVE_SECONDS` of it.
SWEEP_SECONDS = 300
SWEEPER_TIMEOUT_SECONDS = 280
RESERVE_SECONDS = 10.0
#: The reconcile window (three sweeps: a failed sweep or two still leave each order checked once).
RECONCILE_WINDOW_SECONDS = 900


@dataclass(frozen=True)
class ReconcileCapacity:
    """Per provider: reads a second and per sweep, and how they are split."""

    reads_per_second: float
    reads_per_sweep: int
    workers: int
    reconcile_per_sweep: int
    poll_per_sweep: int
    average_per_sweep: float

    @property
    def headroom(self) -> float:
        """Reconciliation capacity over the seeds' average."""
        return self.reconcile_per_sweep / self.average_per_sweep

    @property
    def peak_drain_seconds(self) -> float:
        """How long the seeds' peak would take to check at the capacity the average leaves."""
        spare = (self.reconcile_per_sweep - self.average_per_sweep) / SWEEP_SECONDS
        return seed_load.peak_orders() / spare

    @property
    def peak_reads_per_second_for_window(self) -> float:
        """The read limit that checks the peak before it leaves the window (at this share, plus the average)."""
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
        workers=math.ceil(rate * LOOKUP_SECONDS),
        reconcile_per_sweep=reconcile,
        poll_per_sweep=reads - reconcile,
        average_per_sweep=average,
    )


CAPACITY = size_reconciliation()
