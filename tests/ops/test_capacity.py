"""``ops capacity``'s model: which quota binds and what it does to the executions."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from harness.spike.capacity import REQUEUE_MAX_SECONDS, api_throttle, load_template, predict, template_figures
from local_cloud.limits import LARGE_REGIONS as EMULATOR_LARGE_REGIONS
from local_cloud.limits import Quotas
from stacks.order_constructs.throttle import LARGE_REGIONS, ServiceQuotas
from tests.infra.conftest import synth_pipeline

PEAK = 50_000 / 60  # the seeds' day, orders per second


def figures(states_per_order: int) -> dict[str, Any]:
    return {
        "batch_size": 10,
        "maximum_concurrency": 100,
        "reserved_concurrency": None,
        "intake_timeout_seconds": 30,
        "visibility_timeout_seconds": 180,
        "workflow": "STANDARD",
        "states_per_order": states_per_order,
        "throttle_requeue": True,
        "tasks_per_order": 4,
    }


def test_capacity_start_quota_binds_and_executions_are_not_slowed_at_four_states() -> None:
    p = predict(PEAK, 5, Quotas(), figures(4))
    assert p["binds_first"] == "sfn_start_refill"
    # 300 starts/s x 4 states = 1,200 transitions/s, under the 1,500/s refill
    assert p["execution_slowdown"] == 1.0
    assert p["predicted_peak_backlog"] == pytest.approx((PEAK - 300) * 300 - 1_300, rel=1e-3)
    # the backlog is gone only with both quotas raised: 833 starts/s need 3,333 transitions/s
    assert set(p["quota_increases_to_remove_backlog"]) == {"sfn_start_refill", "sfn_transition_refill"}


def test_capacity_transition_quota_slows_executions_when_starts_are_raised() -> None:
    quotas = Quotas().with_overrides({"sfn_start_refill": 1_000})
    p = predict(PEAK, 5, quotas, figures(6))
    assert p["binds_first"] == "sfn_transition_refill"
    assert p["predicted_peak_backlog"] == 0  # starts keep up: the queue does not grow
    assert p["execution_slowdown"] == round(PEAK * 6 / 1_500, 2)
    assert p["predicted_terminal_after_seconds"] > 0  # but orders end at 1,500 / 6 a second


# -- the product's quota table and throttle agree with the emulator's ------------------------------------
@pytest.mark.parametrize("region", ["us-east-1", "us-west-2", "eu-west-1", "eu-central-1", "ap-southeast-2"])
def test_capacity_product_quota_table_agrees_with_the_emulators(region: str) -> None:
    """stacks/order_constructs/throttle.py owns the quotas the API throttle is sized by; every one is
    the emulator's figure for the region's class (local_cloud.limits)."""
    product = ServiceQuotas.for_region(region)
    emulator = Quotas.for_region_class("large" if region in LARGE_REGIONS else "other")
    assert LARGE_REGIONS == EMULATOR_LARGE_REGIONS
    for field in dataclasses.fields(ServiceQuotas):
        assert getattr(product, field.name) == getattr(emulator, field.name), field.name


@pytest.fixture(scope="module")
def dev_assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synth_pipeline(tmp_path_factory.mktemp("cdk-dev"), stage="dev").outdir


def test_capacity_api_throttle_of_the_template_is_what_ops_capacity_computes(dev_assembly: Path) -> None:
    """The stage's throttle is ``ops capacity``'s figure, read from the synthesized template with the
    emulator's quotas."""
    figures = template_figures(load_template(dev_assembly))
    expected = dict(zip(("rate_per_second", "burst"), api_throttle(Quotas(), figures), strict=True))
    assert predict(1.0, 1, Quotas(), figures)["api_throttle"] == expected == {"rate_per_second": 300, "burst": 1300}
    template = json.loads((dev_assembly / "OrderPipeline-dev.template.json").read_text())
    (stage,) = (r["Properties"] for r in template["Resources"].values() if r["Type"] == "AWS::ApiGateway::Stage")
    for setting in stage["MethodSettings"]:
        if setting["ResourcePath"] == "/~1webhooks~1provider":  # the providers' webhook: its own limit
            continue
        assert (setting["ThrottlingRateLimit"], setting["ThrottlingBurstLimit"]) == (300, 1300), setting


def test_capacity_drain_ends_with_the_largest_of_the_last_requeued_delays() -> None:
    """The queue is empty only when the last requeued record's delay has run out: the largest of the
    jittered delays (uniform between half the cap and the cap) of the records requeued in the last
    cap seconds, about ``mu x cap`` of them, which approaches the cap (lambda_resilience.backoff)."""
    quotas = Quotas(sfn_start_bucket=130, sfn_start_refill=30).scaled(100.0)  # the e2e spike's
    p = predict(1.0, 4, quotas, figures(4), baseline=0.005)
    assert p["predicted_peak_backlog"] > 100
    mu = p["queue_served_per_second"]
    n = mu * REQUEUE_MAX_SECONDS
    largest = REQUEUE_MAX_SECONDS - REQUEUE_MAX_SECONDS / 2 / (n + 1)
    fluid = p["predicted_peak_backlog"] / (mu - 0.005)
    assert p["predicted_drain_seconds"] == pytest.approx(fluid + largest, abs=0.1)
    assert largest > 0.95 * REQUEUE_MAX_SECONDS  # not the mean delay (3/4 of the cap)
    without = predict(1.0, 4, quotas, {**figures(4), "throttle_requeue": False}, baseline=0.005)
    assert without["predicted_drain_seconds"] == pytest.approx(fluid, abs=0.1)
