"""Issue 40, point 5: reconciliation capacity sized to the seeds' rate and the providers' read limits
(order_domain.reconcile_sizing), and the deployed sweeper's schedule and timeout taken from it."""

from __future__ import annotations

import math

import pytest

import order_domain.env as env_names
from order_domain import https_providers, reconcile_sizing, seed_load
from order_domain.reconcile_sizing import CAPACITY, size_reconciliation
from order_domain.settings.sweeper import SweeperSettings
from order_domain.settle_poll import POLL_MAX_ORDERS
from order_domain.sweeper import RESERVE_SECONDS as SWEEPER_RESERVE
from stacks.order_constructs.sweeper import SWEEP_RATE, SWEEPER_TIMEOUT
from tests.infra.conftest import SynthResult


def test_reconcile_sizing_covers_the_seeds_average_rate_twice() -> None:
    """10 million orders a month (seed_load: the project's month for the seeds' 50,000-a-minute Black Friday) is
    about 3.86 a second, 1,157 a sweep: the sweeper reconciles at least twice that. The hand-set 200 a sweep
    (40 a minute) was a sixth of it: on an ordinary day orders left the reconcile window unchecked."""
    average = seed_load.ORDERS_PER_MONTH / (30 * 24 * 3600) * SWEEP_RATE.to_seconds()
    assert math.isclose(CAPACITY.average_per_sweep, average)
    assert CAPACITY.reconcile_per_sweep >= 2 * average > 6 * 200
    assert seed_load.ORDERS_PER_MONTH / (30 * 24 * 60) > seed_load.STAGING_ORDERS_PER_MINUTE  # the cautious side
    settings = SweeperSettings("t", "arn", "url", None, None)  # type: ignore[arg-type]
    assert settings.reconcile_max_orders == CAPACITY.reconcile_per_sweep


def test_reconcile_sizing_never_exceeds_the_providers_read_limit() -> None:
    """Stripe: 25 requests a second per endpoint, 100 per account (live). The sweeper keeps to half an endpoint's
    limit per provider, its pacer's bucket holds one second of that (so at most the whole endpoint limit in any
    second), and a sweep's lookups at the payment provider (reconciliation, then the refund poll) fit its time."""
    assert CAPACITY.reads_per_second == reconcile_sizing.PROVIDER_READS_PER_SECOND * reconcile_sizing.READ_SHARE
    assert 2 * CAPACITY.reads_per_second <= reconcile_sizing.PROVIDER_READS_PER_SECOND
    assert CAPACITY.reads_per_second < reconcile_sizing.PROVIDER_ACCOUNT_REQUESTS_PER_SECOND
    work = SWEEPER_TIMEOUT.to_seconds() - reconcile_sizing.RESERVE_SECONDS
    assert CAPACITY.reads_per_sweep == math.floor(work * CAPACITY.reads_per_second)
    assert CAPACITY.reconcile_per_sweep + POLL_MAX_ORDERS <= CAPACITY.reads_per_sweep
    assert CAPACITY.reconcile_seconds < work


def test_reconcile_sizing_runs_enough_orders_at_once_to_reach_the_paced_rate() -> None:
    """An order's two lookups run one after the other (charge, then shipment): at the assumed second a lookup,
    a worker reconciles half an order a second, so the paced rate takes 25 at once."""
    per_worker = 1 / (reconcile_sizing.LOOKUPS_PER_ORDER * reconcile_sizing.LOOKUP_SECONDS)
    assert CAPACITY.workers * per_worker >= CAPACITY.reads_per_second
    assert (CAPACITY.workers - 1) * per_worker < CAPACITY.reads_per_second


def test_reconcile_sizing_reserve_covers_an_orders_lookups_at_their_longest() -> None:
    """A sweep stops taking orders early enough for one already taken to finish its two lookups at the HTTPS
    client's connect and read timeouts, and the handler to publish its metrics, before the timeout."""
    longest = https_providers.DEFAULT_CONNECT_TIMEOUT + https_providers.DEFAULT_READ_TIMEOUT
    assert reconcile_sizing.LOOKUPS_PER_ORDER * longest <= reconcile_sizing.RESERVE_SECONDS
    assert SWEEPER_RESERVE == reconcile_sizing.RESERVE_SECONDS


def test_reconcile_sizing_uses_the_stacks_schedule_and_timeout(dev: SynthResult) -> None:
    """The figures are the deployed sweeper's: a sweep ends before the next one starts."""
    assert SWEEP_RATE.to_seconds() == reconcile_sizing.SWEEP_SECONDS
    assert SWEEPER_TIMEOUT.to_seconds() == reconcile_sizing.SWEEPER_TIMEOUT_SECONDS < reconcile_sizing.SWEEP_SECONDS
    function = dev.properties(dev.logical_id(dev.stack.sweeper.function))
    assert function["Timeout"] == reconcile_sizing.SWEEPER_TIMEOUT_SECONDS <= 900  # Lambda's maximum
    env = function["Environment"]["Variables"]
    assert int(env[env_names.RECONCILE_WINDOW_SECONDS]) == reconcile_sizing.RECONCILE_WINDOW_SECONDS
    with pytest.raises(ValueError, match="cannot reconcile"):  # the old 2-minute sweep
        size_reconciliation(timeout_seconds=120)
    with pytest.raises(ValueError, match="must end before the next"):
        size_reconciliation(timeout_seconds=300)


def test_reconcile_sizing_states_what_the_seeds_peak_would_need() -> None:
    """The seeds' peak, 50,000 orders a minute, is 250,000 a sweep: 100 times this capacity. Checking it inside the
    15-minute window would take about 840 lookups a second per provider, above Stripe's 100 a second per account:
    no share of the documented limit covers it, per-order lookups cannot; at the peak the webhooks settle."""
    assert math.isclose(CAPACITY.peak_per_sweep, 250_000)
    assert CAPACITY.peak_per_sweep > 100 * CAPACITY.reconcile_per_sweep
    needed = CAPACITY.peak_reads_per_second_for_window
    assert 800 < needed < 900
    assert needed > reconcile_sizing.PROVIDER_ACCOUNT_REQUESTS_PER_SECOND
