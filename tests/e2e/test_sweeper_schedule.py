"""The local run fires the sweeper on its EventBridge schedule (read from the template), on the simulated
clock: a run spanning several heartbeat windows pages nobody while it runs, and pages when it stops."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.reporting.pager import alarm_kind
from harness.run.run import RunOptions
from harness.stack.pipeline import PipelineRun, local_pipeline
from harness.workload.orders import OrderMix, make_orders
from local_cloud.template import CloudAssembly

pytestmark = pytest.mark.e2e

#: Four heartbeat windows of the template's alarm (10 minutes).
SPAN_SECONDS = 40 * 60


@pytest.fixture
def run(assembly: CloudAssembly) -> Iterator[PipelineRun]:
    with local_pipeline(RunOptions(orders=3, seed=5, mix=OrderMix(), assembly_dir=assembly.outdir)) as run:
        orders = make_orders(3, 5, OrderMix(decline_rate=0, ship_fail_rate=0, out_of_stock_rate=0))
        run.submit(orders)
        run.drain()
        yield run


def _pages(run: PipelineRun) -> list[tuple[str, str, float]]:
    dlqs = {run.deployment.queues[lid]["name"] for lid in run.deployment.dlq_ids}
    actions = run.cloud.alarm_actions
    return [
        (n.alarm, alarm_kind(run.deployment.alarms[n.alarm], dlqs), n.at)
        for n in (actions.history if actions else [])
        if n.state in ("ALARM", "INSUFFICIENT_DATA")
    ]


def test_sweeper_schedule_fires_on_the_template_rate_and_pages_nobody(run: PipelineRun) -> None:
    started = run.clock.now()
    run.advance(SPAN_SECONDS)
    sweeper = run.schedule("Sweeper")
    assert sweeper.interval == 300  # rate(5 minutes), as the template's rule says
    fired = [at for at in sweeper.fired if at >= started]
    assert len(fired) >= SPAN_SECONDS // 300 - 1
    assert _pages(run) == []
    assert run.alarm_evaluator.states[_heartbeat(run)] == "OK"


def test_sweeper_schedule_stopped_pages_within_a_minute_of_its_window(run: PipelineRun) -> None:
    run.advance(10 * 60)
    sweeper = run.schedule("Sweeper")
    last_run = sweeper.fired[-1]
    run.pause_schedule("Sweeper", run.clock.now(), run.clock.now() + SPAN_SECONDS)
    run.advance(SPAN_SECONDS)
    pages = _pages(run)
    assert [kind for _, kind, _ in pages] == ["sweeper_stopped"], pages
    window = float(run.deployment.alarms[_heartbeat(run)]["Period"])
    assert last_run + window < pages[0][2] <= last_run + window + 60


def _heartbeat(run: PipelineRun) -> str:
    return next(name for name, alarm in run.deployment.alarms.items() if alarm.get("MetricName") == "SweeperRuns")
