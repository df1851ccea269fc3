"""``ops capacity``'s model: which quota binds and what it does to the executions."""

from __future__ import annotations

from typing import Any

import pytest

from local_cloud.limits import Quotas
from ops.capacity import predict

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
