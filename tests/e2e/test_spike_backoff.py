"""A small scaled spike with intake's throttle backoff: no valid order reaches the DLQ, and ``ops capacity``
predicts the measured backlog and drain time (the spike: :mod:`tests.e2e.spike_setup`)."""

from __future__ import annotations

import pytest

from harness.spike.capacity import predict, template_figures
from local_cloud.template import CloudAssembly
from tests.e2e.spike_setup import QUOTAS, SPIKE, Spike, spike_fixture

pytestmark = pytest.mark.e2e
with_backoff = spike_fixture(backoff=True)


def test_spike_with_backoff_dead_letters_no_valid_order(with_backoff: Spike) -> None:
    report, _ = with_backoff
    assert report["orders"]["submitted"] >= 240
    assert report["throttles"]["stepfunctions:StartExecution"] > 0  # the quota did bind
    assert report["valid_orders_dead_lettered"] == 0
    assert report["not_terminal"] == []
    assert report["check_problems"] == []
    assert report["backlog"]["drained_after_seconds"] is not None
    assert report["latency_seconds"]["p99"] > report["latency_seconds"]["p50"] > 0  # the spike became latency


def test_capacity_predicts_the_measured_spike_within_20_percent(with_backoff: Spike) -> None:
    report, out = with_backoff
    figures = template_figures(CloudAssembly(out, "OrderPipeline-dev"))
    k = SPIKE["scale"]
    prediction = predict(SPIKE["peak_per_second"] / k, SPIKE["minutes"], QUOTAS.scaled(k), figures, baseline=0.5 / k)
    measured_backlog = report["backlog"]["max_depth"]
    measured_drain = report["backlog"]["drained_after_seconds"]
    assert report["executions"]["settle_timeouts"] == 0  # simulated time never ran ahead of the executions
    assert prediction["binds_first"] == "sfn_start_refill"
    assert measured_backlog == pytest.approx(prediction["predicted_peak_backlog"], rel=0.2)
    assert measured_drain == pytest.approx(prediction["predicted_drain_seconds"], rel=0.2)
    measured_terminal = report["executions"]["all_terminal_after_seconds"]
    assert measured_terminal == pytest.approx(prediction["predicted_terminal_after_seconds"], rel=0.2)
