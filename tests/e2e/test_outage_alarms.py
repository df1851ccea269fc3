"""A second provider outage while the first is still paging is announced (docs/decisions/0023): the payment
provider and the carrier each have their own outage alarm, so the carrier going down during a payment outage
pages within a minute although the payment outage alarm is in ALARM (CloudWatch notifies on a change only).

The template's alarms, deployed into moto and evaluated as CloudWatch does; the datapoints are what the
steps publish during an outage (every call a transient failure: tests/handlers/test_expected_errors.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from local_cloud.alarm_actions import AlarmActions
from local_cloud.alarms import AlarmEvaluator
from local_cloud.capture import LineCapture
from local_cloud.clock import SimClock
from local_cloud.deploy import LocalDeployment
from local_cloud.environment import local_aws
from local_cloud.metrics import MetricStore, metric_key
from local_cloud.template import CloudAssembly
from stacks.order_constructs.functions import metrics_namespace

pytestmark = pytest.mark.e2e


@pytest.fixture
def pager(assembly: CloudAssembly) -> Iterator[tuple[LocalDeployment, MetricStore, AlarmEvaluator, AlarmActions]]:
    clock = SimClock()
    with local_aws(clock):
        deployment = LocalDeployment(assembly, clock).deploy()
        actions = AlarmActions(deployment)
        capture = LineCapture()
        store = MetricStore({}, [], capture, clock)
        evaluator = AlarmEvaluator(deployment.alarms, deployment.queues, capture, actions, store=store, clock=clock)
        yield deployment, store, evaluator, actions


def _calls(deployment: LocalDeployment, store: MetricStore, step: str, service: str, at: float, n: int) -> None:
    """``n`` invocations of ``step`` in the minute from ``at`` (every 15 s), each failing transiently."""
    (fn,) = [f for f in deployment.functions.values() if f.logical_id.startswith(step)]
    for i in range(n):
        when = at + 15 * (i % 4)
        store.add(metric_key("AWS/Lambda", "Invocations", {"FunctionName": fn.name}), when, 1.0)
        store.add(metric_key(metrics_namespace("dev"), "TransientFailures", {"service": service}), when, 1.0)


def test_outage_alarms_carrier_outage_during_a_payment_outage_pages(
    pager: tuple[LocalDeployment, MetricStore, AlarmEvaluator, AlarmActions],
) -> None:
    deployment, store, evaluator, actions = pager
    clock = deployment.clock
    outage_alarms = [n for n, a in deployment.alarms.items() if "TransientFailures" in str(a.get("Metrics"))]
    evaluator.evaluate()
    carrier_down = 0.0
    for minute in range(6):  # the payment provider is down for six minutes: charges keep failing
        _calls(deployment, store, "ChargePayment", "charge-payment", clock.now(), 40)
        if minute >= 3:  # the carrier goes down too: the orders charged before the outage fail to ship
            carrier_down = carrier_down or clock.now()
            _calls(deployment, store, "ShipOrder", "ship-order", clock.now(), 20)
        clock.advance(60)
        evaluator.evaluate()
    pages = [n for n in actions.history if n.state == "ALARM" and n.alarm in outage_alarms]
    assert len(pages) == 2 and all(p.delivered for p in pages), [(p.alarm, p.at) for p in pages]
    first, second = pages
    assert evaluator.states[first.alarm] == "ALARM"  # the payment outage alarm never left ALARM
    assert 0 <= second.at - carrier_down <= 61  # the first evaluation after a minute of it (wall time moves the clock)
