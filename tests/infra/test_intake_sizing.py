"""Issue 40, point 1: intake's starts sized from Lambda's documented scaling, so that the seeds' Black Friday
cancels no valid order (the saga's steps keep their share of the account's concurrency)."""

from __future__ import annotations

from typing import Any

import pytest

from order_domain import seed_load
from order_domain.settings.intake import THROTTLE_MAX_DELAY_SECONDS, THROTTLE_MAX_REQUEUES
from stacks.order_constructs.intake_sizing import (
    REQUEUE_CAP_SECONDS,
    SAGA_TASKS,
    STEP_SECONDS,
    peak_throttle_seconds,
    requeues_to_outlast,
    saga_concurrency,
    size_intake,
    webhook_concurrency,
)
from stacks.order_constructs.throttle import BATCH_SECONDS, ServiceQuotas
from tests.infra.conftest import SynthResult


@pytest.fixture(scope="module")
def figures(dev: SynthResult) -> dict[str, Any]:
    """Intake's figures as its construct reports them (``ops capacity`` reads the same from the template:
    tests/ops/test_capacity.py)."""
    return dict(dev.stack.intake_capacity_figures)


def _happy_path_tasks(definition: dict[str, Any]) -> list[str]:
    """The Task states an order enters when nothing fails (StartAt, then each Next)."""
    states, name, tasks = definition["States"], definition["StartAt"], []
    while name is not None:
        state = states[name]
        if state["Type"] == "Task":
            tasks.append(name)
        name = None if state.get("End") else state.get("Next")
    return tasks


def test_intake_sizing_leaves_the_saga_its_share_at_the_seeds_peak(figures: dict[str, Any]) -> None:
    """At the seeds' peak intake runs at its MaximumConcurrency and starts executions as fast as its batches
    and the StartExecution refill allow; those executions' steps, intake, the webhook at its bound and the
    scheduled functions fit the account's default concurrency (1,000): no step is throttled for long."""
    quotas = ServiceQuotas()
    c = figures["maximum_concurrency"]
    starts = min(c * figures["batch_size"] / BATCH_SECONDS, quotas.sfn_start_refill, seed_load.peak_per_second())
    total = c + saga_concurrency(starts) + webhook_concurrency() + 2  # the sweeper and the replay
    assert total <= quotas.lambda_concurrency, (c, starts, total)


def test_intake_sizing_takes_what_the_account_leaves(figures: dict[str, Any]) -> None:
    """The template's MaximumConcurrency is the derived one: the largest that fits (one more would not)."""
    sizing = size_intake(ServiceQuotas(), figures["batch_size"])
    assert figures["maximum_concurrency"] == sizing.max_concurrency
    assert sizing.total <= sizing.account
    one_more = sizing.max_concurrency + 1
    starts = min(one_more * figures["batch_size"] / BATCH_SECONDS, ServiceQuotas().sfn_start_refill)
    assert one_more + saga_concurrency(starts) + sizing.webhook + sizing.scheduled > sizing.account
    # Lambda gives each step its share in one 10-second scaling step, far inside what its throttle retrier waits.
    assert sizing.scale_up_seconds <= 10


def test_intake_sizing_counts_the_templates_saga_steps(saga_definition: dict[str, Any]) -> None:
    assert len(_happy_path_tasks(saga_definition)) == SAGA_TASKS
    assert STEP_SECONDS >= BATCH_SECONDS  # a step is not assumed faster than an intake batch


def test_intake_sizing_requeues_outlast_the_peaks_start_throttle() -> None:
    """StartExecution refuses for the peak and its backlog's drain at the refill (829 s in the large regions);
    intake's requeues, at their shortest delays, outlast it: no valid order burns its receives on a quota."""
    seconds = peak_throttle_seconds(ServiceQuotas())
    assert seconds == pytest.approx(300 + ((50_000 / 60 - 300) * 300 - 1_300) / 300)
    needed = requeues_to_outlast(seconds)
    assert THROTTLE_MAX_REQUEUES == needed == size_intake(ServiceQuotas(), 10).requeues
    assert THROTTLE_MAX_DELAY_SECONDS == REQUEUE_CAP_SECONDS
    shortest = sum(min(REQUEUE_CAP_SECONDS, 5 * 2**n) // 2 for n in range(needed))
    assert shortest >= seconds > shortest - REQUEUE_CAP_SECONDS / 2


def test_intake_sizing_requeues_to_outlast_counts_half_delays() -> None:
    assert requeues_to_outlast(0) == 0
    assert requeues_to_outlast(2) == 1  # a 5 s ceiling: at least int(2.5) s
    assert requeues_to_outlast(37) == 4  # 2 + 5 + 10 + 20
    assert requeues_to_outlast(37.5) == 5
