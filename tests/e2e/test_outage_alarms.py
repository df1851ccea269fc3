"""A second provider outage while the first is still paging is announced (docs/decisions/0023): the payment
provider and the carrier each have their own outage alarm, so the carrier going down during a payment outage
pages within a minute although the payment outage alarm is in ALARM (CloudWatch notifies on a change only).

The template's alarms, deployed into moto and evaluated as CloudWatch does; the datapoints are what the
steps publish during an outage (every call a transient failure of the provider: tests/handlers/test_expected_errors.py),
or while their own DynamoDB calls are throttled (transient failures, none of them the provider's: issue 41)."""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from lambda_resilience.step import (
    DEPENDENCY_FAILURES_METRIC,
    FIRST_CALL_FAILURES_METRIC,
    FIRST_CALLS_METRIC,
    TRANSIENT_FAILURES_METRIC,
)
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


def _invocation(
    deployment: LocalDeployment,
    store: MetricStore,
    step: str,
    service: str,
    when: float,
    *,
    first: bool,
    failed: bool = True,
    provider: bool = True,
) -> None:
    """What one invocation of ``step`` publishes (lambda_resilience.step): its ``Invocations``; failed transiently,
    ``TransientFailures``, and ``DependencyFailures`` when the provider failed (``provider``: not the step's own
    throttled DynamoDB call); the operation's first call (its intent newly recorded: ``first``), also
    ``DependencyFirstCalls`` and, the provider failing it, ``DependencyFirstCallFailures``."""
    (fn,) = [f for f in deployment.functions.values() if f.logical_id.startswith(step)]
    store.add(metric_key("AWS/Lambda", "Invocations", {"FunctionName": fn.name}), when, 1.0)
    counted = [FIRST_CALLS_METRIC] if first else []
    if failed:
        counted.append(TRANSIENT_FAILURES_METRIC)
        if provider:
            counted += [DEPENDENCY_FAILURES_METRIC] + ([FIRST_CALL_FAILURES_METRIC] if first else [])
    for name in counted:
        store.add(metric_key(metrics_namespace("dev"), name, {"service": service}), when, 1.0)


def _calls(
    deployment: LocalDeployment, store: MetricStore, step: str, service: str, at: float, n: int, provider: bool = True
) -> None:
    """``n`` orders' first calls of ``step`` in the minute from ``at`` (every 15 s), each failing transiently: the
    provider's failure (``provider``), or the step's own (a throttled DynamoDB call: TransientFailures only)."""
    for i in range(n):
        _invocation(deployment, store, step, service, at + 15 * (i % 4), first=True, provider=provider)


def _refused_with_retries(
    deployment: LocalDeployment, store: MetricStore, step: str, service: str, arrivals: list[float], until: float
) -> None:
    """Each operation's first call at its arrival, refused by the provider, then retried by the saga's outage
    retrier (decision 0032: 2 s doubling to 60 s; jitter left out) until ``until``, every retry refused too."""
    for at in arrivals:
        _invocation(deployment, store, step, service, at, first=True)
        delay, when = 2.0, at + 2.0
        while when < until:
            _invocation(deployment, store, step, service, when, first=False)
            delay = min(2 * delay, 60.0)
            when += delay


def _minute_after(clock: SimClock, seconds: float = 0.0) -> float:
    return math.floor(clock.now() / 60) * 60 + 60 + seconds


def _outage_alarms(deployment: LocalDeployment) -> list[str]:
    return [n for n, a in deployment.alarms.items() if FIRST_CALL_FAILURES_METRIC in str(a.get("Metrics"))]


def _pages(deployment: LocalDeployment, actions: AlarmActions, name: str) -> list[float]:
    (alarm,) = [n for n in _outage_alarms(deployment) if name in n]
    return [n.at for n in actions.history if n.state == "ALARM" and n.alarm == alarm]


def _run(evaluator: AlarmEvaluator, clock: SimClock, until: float) -> None:
    """Evaluate the alarms as CloudWatch does, every minute, up to ``until``."""
    while clock.now() < until:
        clock.advance(min(60.0, until - clock.now()))
        evaluator.evaluate()


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


def test_outage_alarms_a_few_refunds_refused_on_every_retry_in_a_quiet_minute_page_no_outage(
    pager: tuple[LocalDeployment, MetricStore, AlarmEvaluator, AlarmActions],
) -> None:
    """Issue 41 (make chaos): four refunds the provider keeps refusing (the sandbox's ``refund_broken`` profile),
    each retried by the outage retrier for five minutes, in minutes of three charges: four operations refused,
    not an outage of the payment provider (their retries, two dozen refused calls a minute, count once each)."""
    deployment, store, evaluator, actions = pager
    clock = deployment.clock
    evaluator.evaluate()
    start = _minute_after(clock, 5.0)
    until = start + 300.0
    _refused_with_retries(
        deployment, store, "RefundPayment", "refund-payment", [start + 10 * i for i in range(4)], until
    )
    for minute in range(5):
        for i in range(3):
            when = start + 60 * minute + 20 * i
            _invocation(deployment, store, "ChargePayment", "charge-payment", when, first=True, failed=False)
    _run(evaluator, clock, until + 60.0)
    assert _pages(deployment, actions, "PaymentOutage") == []


def test_outage_alarms_an_outage_at_the_seeds_rate_pages_in_its_first_minute(
    pager: tuple[LocalDeployment, MetricStore, AlarmEvaluator, AlarmActions],
) -> None:
    """The seeds' rate, 50 orders a minute: every charge refused from the outage's first second; the first
    evaluation after its first minute pages, once, while the orders are retried."""
    deployment, store, evaluator, actions = pager
    clock = deployment.clock
    evaluator.evaluate()
    start = _minute_after(clock)
    until = start + 180.0
    arrivals = [start + 1.2 * i for i in range(150)]
    _refused_with_retries(deployment, store, "ChargePayment", "charge-payment", arrivals, until)
    _run(evaluator, clock, until + 60.0)
    pages = _pages(deployment, actions, "PaymentOutage")
    assert len(pages) == 1 and pages[0] - start <= 61, [p - start for p in pages]


@pytest.mark.parametrize("offset", [0.0, 30.0, 50.0])
def test_outage_alarms_the_chaos_runs_outage_pages_however_it_falls_on_the_minutes(
    pager: tuple[LocalDeployment, MetricStore, AlarmEvaluator, AlarmActions], offset: float
) -> None:
    """make chaos's outage (harness/run/incidents.py): 90 s of 503s while 16 orders arrive. Wherever it starts in
    a minute, one of the (at most three) minutes it spans holds at least 6 of the 16 first calls, all refused:
    6 - 0.5 x 6 > 2 pages, once, within a minute of that minute's end."""
    deployment, store, evaluator, actions = pager
    clock = deployment.clock
    evaluator.evaluate()
    start = _minute_after(clock, offset)
    until = start + 90.0
    arrivals = [start + 90.0 * i / 16 for i in range(16)]
    _refused_with_retries(deployment, store, "ChargePayment", "charge-payment", arrivals, until)
    _run(evaluator, clock, until + 180.0)
    pages = _pages(deployment, actions, "PaymentOutage")
    assert len(pages) == 1 and pages[0] - start <= 120, [p - start for p in pages]


def test_outage_alarms_a_long_outage_at_a_low_rate_pages_once(
    pager: tuple[LocalDeployment, MetricStore, AlarmEvaluator, AlarmActions],
) -> None:
    """A 12-minute outage while orders trickle in (issue 41, one notification per incident): 10 new operations in
    most minutes (a fifth of the seeds' rate), none in a few; every call refused. The alarm counts operations, not
    retries (decision 0033), so a minute without new ones is below the floor; the alarm stays in ALARM through such
    minutes (it clears after five in a row) instead of returning to OK and paging again at the next busy minute."""
    deployment, store, evaluator, actions = pager
    clock = deployment.clock
    evaluator.evaluate()
    start = _minute_after(clock, 5.0)
    quiet = {3, 6, 7, 10}
    arrivals = [start + 60 * minute + 6 * i for minute in range(12) if minute not in quiet for i in range(10)]
    _refused_with_retries(deployment, store, "ChargePayment", "charge-payment", arrivals, start + 720.0)
    _run(evaluator, clock, start + 900.0)
    pages = _pages(deployment, actions, "PaymentOutage")
    assert len(pages) == 1 and pages[0] - start <= 120, [p - start for p in pages]
