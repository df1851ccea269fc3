"""A second provider outage while the first is still paging is announced (docs/decisions/0023): the payment
provider and the carrier each have their own outage alarm, so the carrier going down during a payment outage
pages within a minute although the payment outage alarm is in ALARM (CloudWatch notifies on a change only).

The template's alarms, deployed into moto and evaluated as CloudWatch does; the datapoints are what the
steps publish during an outage (every call a transient failure of the provider: tests/handlers/test_expected_errors.py),
or while their own DynamoDB calls are throttled (transient failures, none of them the provider's: issue 41)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lambda_resilience.step import DEPENDENCY_FAILURES_METRIC, TRANSIENT_FAILURES_METRIC
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


def _calls(
    deployment: LocalDeployment, store: MetricStore, step: str, service: str, at: float, n: int, provider: bool = True
) -> None:
    """``n`` invocations of ``step`` in the minute from ``at`` (every 15 s), each failing transiently: the
    provider's failure (``provider``), or the step's own (a throttled DynamoDB call: TransientFailures only)."""
    (fn,) = [f for f in deployment.functions.values() if f.logical_id.startswith(step)]
    counted = (TRANSIENT_FAILURES_METRIC, DEPENDENCY_FAILURES_METRIC) if provider else (TRANSIENT_FAILURES_METRIC,)
    for i in range(n):
        when = at + 15 * (i % 4)
        store.add(metric_key("AWS/Lambda", "Invocations", {"FunctionName": fn.name}), when, 1.0)
        for name in counted:
            store.add(metric_key(metrics_namespace("dev"), name, {"service": service}), when, 1.0)


def _outage_alarms(deployment: LocalDeployment) -> list[str]:
    return [n for n, a in deployment.alarms.items() if DEPENDENCY_FAILURES_METRIC in str(a.get("Metrics"))]


def test_outage_alarms_carrier_outage_during_a_payment_outage_pages(
    pager: tuple[LocalDeployment, MetricStore, AlarmEvaluator, AlarmActions],
) -> None:
    deployment, store, evaluator, actions = pager
    clock = deployment.clock
    outage_alarms = _outage_alarms(deployment)
    assert len(outage_alarms) == 2
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


def test_outage_alarms_throttled_dynamodb_inside_the_provider_steps_pages_no_outage(
    pager: tuple[LocalDeployment, MetricStore, AlarmEvaluator, AlarmActions],
) -> None:
    """Issue 41: three minutes in which every charge, refund and shipment fails on its own throttled DynamoDB calls
    (or finds its idempotency record held by a crashed invocation) while both providers answer: no outage page."""
    deployment, store, evaluator, actions = pager
    clock = deployment.clock
    evaluator.evaluate()
    for _ in range(3):
        for step, service in (("ChargePayment", "charge-payment"), ("RefundPayment", "refund-payment")):
            _calls(deployment, store, step, service, clock.now(), 40, provider=False)
        _calls(deployment, store, "ShipOrder", "ship-order", clock.now(), 40, provider=False)
        clock.advance(60)
        evaluator.evaluate()
    outage_alarms = set(_outage_alarms(deployment))
    assert len(outage_alarms) == 2
    assert [(n.alarm, n.state) for n in actions.history if n.alarm in outage_alarms] == []
