"""A small scaled spike: intake's throttle backoff keeps valid orders out of the DLQ (today's behaviour does
not), and ``ops capacity`` predicts the measured backlog and drain time.

The spike is 1:100 with a StartExecution quota of 30/s (bucket 130) at 1:1, 6,000 orders/min for
4 minutes: 240 orders, 0.3 starts/s measured, a backlog that lasts longer than 3 receives of the
queue's 180 s visibility timeout. (The drain ends with the last requeued records' jittered delays,
up to a minute: a 4-minute peak keeps that tail small next to the drain the model predicts.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.run import synthesize
from harness.spike import SpikeOptions, run_spike
from local_cloud.limits import Quotas
from ops.capacity import predict, template_figures

QUOTAS = Quotas(sfn_start_bucket=130, sfn_start_refill=30)
pytestmark = pytest.mark.e2e

SPIKE: dict[str, Any] = {
    "peak_per_second": 100.0,
    "baseline_per_second": 0.5,
    "minutes": 4.0,
    "scale": 100.0,
    "quotas": QUOTAS,
}


def _spike(tmp: Path, backoff: bool) -> tuple[dict[str, Any], Path]:
    out = tmp / ("backoff" if backoff else "today")
    synthesize(out, "dev", {"intake_throttle_backoff": backoff})
    options = SpikeOptions(**SPIKE, throttle_backoff=backoff, assembly_dir=out, plot=None)
    return run_spike(options), out


@pytest.fixture(scope="module")
def with_backoff(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    return _spike(tmp_path_factory.mktemp("spike"), backoff=True)


@pytest.fixture(scope="module")
def today(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    return _spike(tmp_path_factory.mktemp("spike"), backoff=False)


# One spike per xdist worker: each module fixture is computed once, the two in parallel (Makefile: --dist loadgroup).
@pytest.mark.xdist_group("spike-backoff")
def test_spike_with_backoff_dead_letters_no_valid_order(with_backoff: tuple[dict[str, Any], Path]) -> None:
    report, _ = with_backoff
    assert report["orders"]["submitted"] >= 240
    assert report["throttles"]["stepfunctions:StartExecution"] > 0  # the quota did bind
    assert report["valid_orders_dead_lettered"] == 0
    assert report["not_terminal"] == []
    assert report["check_problems"] == []
    assert report["backlog"]["drained_after_seconds"] is not None
    assert report["latency_seconds"]["p99"] > report["latency_seconds"]["p50"] > 0  # the spike became latency


@pytest.mark.xdist_group("spike-today")
def test_spike_today_dead_letters_valid_orders(today: tuple[dict[str, Any], Path]) -> None:
    report, _ = today
    assert report["throttles"]["stepfunctions:StartExecution"] > 0
    assert report["valid_orders_dead_lettered"] > 0
    assert any("dead-lettered" in p for p in report["check_problems"])


@pytest.mark.xdist_group("spike-backoff")
def test_capacity_predicts_the_measured_spike_within_20_percent(with_backoff: tuple[dict[str, Any], Path]) -> None:
    from local_cloud.template import CloudAssembly

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
