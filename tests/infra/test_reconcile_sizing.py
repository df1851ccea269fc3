"""Issue 40, point 5: reconciliation capacity sized to the seeds' rate and the providers' read limits, and a
deferral alarm that fires only when the backlog is not draining."""

from __future__ import annotations

import math

import pytest

import order_domain.env as env_names
from order_domain import reconcile_sizing, seed_load
from order_domain.reconcile_sizing import CAPACITY, size_reconciliation
from order_domain.settings.sweeper import SweeperSettings
from order_domain.settle_poll import POLL_MAX_ORDERS
from stacks.order_constructs.sweeper import SWEEP_RATE, SWEEPER_TIMEOUT, deferral_grace_seconds
from tests.infra.conftest import SynthResult


def test_reconcile_sizing_exceeds_the_seeds_average_with_headroom() -> None:
    """10 million orders a month is about 3.86 a second, 1,157 a sweep: the sweeper reconciles at least twice that
    (200 a sweep, the hand-set figure, was a sixth of it: orders left the window unchecked on an ordinary day)."""
    average = seed_load.ORDERS_PER_MONTH / (30 * 24 * 3600) * SWEEP_RATE.to_seconds()
    assert CAPACITY.average_per_sweep == average
    assert CAPACITY.reconcile_per_sweep >= 2 * average > 200 * 5
    assert SweeperSettings("t", "arn", "url", None, None).reconcile_max_orders == CAPACITY.reconcile_per_sweep  # type: ignore[arg-type]


def test_reconcile_sizing_never_exceeds_the_providers_read_limit() -> None:
    """Stripe: 25 requests a second per endpoint (live); the sweeper keeps to half of it, and in any one second
    (its pacer's bucket holds one second of its rate) to the whole of it at most."""
    assert CAPACITY.reads_per_second == reconcile_sizing.PROVIDER_READS_PER_SECOND * reconcile_sizing.READ_SHARE
    assert 2 * CAPACITY.reads_per_second <= reconcile_sizing.PROVIDER_READS_PER_SECOND
    work = SWEEPER_TIMEOUT.to_seconds() - reconcile_sizing.RESERVE_SECONDS
    assert CAPACITY.reconcile_per_sweep + POLL_MAX_ORDERS == CAPACITY.reads_per_sweep
    assert CAPACITY.reads_per_sweep <= work * CAPACITY.reads_per_second
    # enough lookups at once to reach the paced rate at the assumed latency
    assert CAPACITY.workers * 1 / reconcile_sizing.LOOKUP_SECONDS >= CAPACITY.reads_per_second


def test_reconcile_sizing_uses_the_stacks_schedule_and_timeout() -> None:
    """The figures are the deployed sweeper's: a sweep ends before the next starts."""
    assert SWEEP_RATE.to_seconds() == reconcile_sizing.SWEEP_SECONDS
    assert SWEEPER_TIMEOUT.to_seconds() == reconcile_sizing.SWEEPER_TIMEOUT_SECONDS < reconcile_sizing.SWEEP_SECONDS
    with pytest.raises(ValueError, match="cannot reconcile"):  # the old 2-minute sweep: 1,375 lookups at most
        size_reconciliation(timeout_seconds=120)


def test_reconcile_sizing_states_the_peaks_drain_and_the_limit_the_window_needs() -> None:
    """The seeds' peak (250,000 orders) takes about 18 hours at the capacity the average leaves; checking it inside
    the 15-minute window would take a read limit of about 840/s (a limit increase), hence webhooks first."""
    spare = (CAPACITY.reconcile_per_sweep - CAPACITY.average_per_sweep) / reconcile_sizing.SWEEP_SECONDS
    assert math.isclose(CAPACITY.peak_drain_seconds, seed_load.peak_orders() / spare)
    assert 17 * 3600 < CAPACITY.peak_drain_seconds < 19 * 3600
    assert CAPACITY.peak_reads_per_second_for_window > 30 * reconcile_sizing.PROVIDER_READS_PER_SECOND


def test_reconcile_sizing_deferral_alarms_only_past_the_peaks_deferral(dev: SynthResult) -> None:
    """SweepDeferred pages a ticket only after deferrals in every period for longer than the seeds' peak
    legitimately defers (its orders becoming terminal, then the window): one deferring sweep is not a ticket."""
    props = dev.properties(dev.logical_id(dev.stack.sweep_deferred_alarm))
    period = props["Period"]
    assert props["MetricName"] == "SweepDeferred" and props["Statistic"] == "Minimum"
    assert props["EvaluationPeriods"] == props["DatapointsToAlarm"]
    assert (props["EvaluationPeriods"] - 1) * period >= deferral_grace_seconds() > 1800
    assert props["TreatMissingData"] == "notBreaching"
    env = [
        f["Properties"]["Environment"]["Variables"]
        for f in dev.of_type("AWS::Lambda::Function").values()
        if env_names.RECONCILE_WINDOW_SECONDS in f["Properties"].get("Environment", {}).get("Variables", {})
    ]
    assert env and int(env[0][env_names.RECONCILE_WINDOW_SECONDS]) == reconcile_sizing.RECONCILE_WINDOW_SECONDS
