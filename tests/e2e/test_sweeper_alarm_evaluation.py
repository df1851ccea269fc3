"""The sweeper's SweepDeferred and ParkedOrders alarms as synthesized, evaluated by the emulator minute by minute
while the sweeper publishes one datapoint a run (issue 41: a burst is no ticket, a stopped sweeper is one page)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from local_cloud.template import CloudAssembly
from tests.e2e.alarm_replay import alarm_notifications

pytestmark = pytest.mark.e2e


def _alarm(assembly: CloudAssembly, logical_prefix: str) -> dict[str, Any]:
    """The synthesized properties of the dev stack's alarm whose logical ID starts with ``logical_prefix``."""
    template = json.loads((assembly.outdir / "OrderPipeline-dev.template.json").read_text())
    (props,) = [r["Properties"] for k, r in template["Resources"].items() if k.startswith(logical_prefix)]
    return dict(props)


@pytest.mark.parametrize(
    ("sweeps", "tickets"),
    [
        ([0] * 3 + [2, 27, 257, 164] + [0] * 20, 0),  # make chaos's first drain: four sweeps, then caught up
        ([40, 12] + [0] * 20, 0),  # the burst at the first sweeps after the deploy (make chaos CHAOS_ORDERS=500)
        ([0] * 3 + [50] * 30 + [0] * 10, 1),  # deferral in every sweep for 2.5 hours: one ticket
        ([0] * 3 + [50] * 14 + [0] * 2 + [50] * 14, 2),  # two sustained stretches of 70 minutes: two
    ],
    ids=["a-burst-caught-up", "a-burst-at-the-first-sweep", "sustained", "sustained-twice"],
)
def test_settlement_sweep_deferred_alarm_tickets_sustained_deferral_once(
    assembly: CloudAssembly, sweeps: list[int], tickets: int
) -> None:
    props = _alarm(assembly, "SweepDeferredAlarm")
    assert len(alarm_notifications(props, "SweepDeferred", sweeps)) == tickets


def test_recall_alarms_parked_orders_notify_once_across_a_stopped_sweeper(assembly: CloudAssembly) -> None:
    """Orders parked, then the sweeper stops for 25 minutes and resumes, the orders still parked: one
    notification. Missing data treated as not breaching moved ParkedOrders (and OrdersAtRisk) to OK while the
    sweeper published nothing, and the first sweep after the restart notified again (tests/e2e/test_incidents.py:
    a stopped sweeper's heartbeat page and a second OrdersAtRisk page)."""
    props = _alarm(assembly, "ParkedOrdersAlarm")
    runs: list[float | None] = [0, 0, 3, 3, 3, None, None, None, None, None, 3, 3, 3]
    assert len(alarm_notifications(props, "ParkedOrders", runs)) == 1
