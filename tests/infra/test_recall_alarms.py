"""The recall alarms (docs/decisions/0023): a provider outage pages as a rate of transient failures (a
retried flaky call never does), the sweeper's heartbeat and the parked-orders gauge."""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk import App, Duration, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Template

from constructs_lib.alarms import TransientShareAlarm, TransientShareAlarmProps
from stacks.order_constructs.functions import metrics_namespace
from stacks.order_constructs.sweeper import StuckOrderSweeperProps
from tests.infra.conftest import SynthResult


def _functions(stack: Stack, n: int) -> tuple[tuple[lambda_.IFunction, str], ...]:
    return tuple((lambda_.Function.from_function_name(stack, f"F{i}", f"fn-{i}"), f"service-{i}") for i in range(n))


def _props(stack: Stack, n: int = 1, **options: Any) -> TransientShareAlarmProps:
    """Props over ``n`` functions of ``stack`` (namespace ``App``, a new topic), with ``options`` on top."""
    return TransientShareAlarmProps(
        functions=_functions(stack, n),
        namespace="App",
        alarm_topic=sns.Topic(stack, "Topic"),
        description="provider down",
        **options,
    )


def _alarm(stack: Stack, props: TransientShareAlarmProps) -> dict[str, Any]:
    """The one alarm a :class:`TransientShareAlarm` of ``props`` synthesizes."""
    TransientShareAlarm(stack, "Outage", props=props)
    (alarm,) = Template.from_stack(stack).find_resources("AWS::CloudWatch::Alarm").values()
    return dict(alarm)


def test_transient_share_alarm_pages_on_a_share_of_invocations() -> None:
    stack = Stack(App(), "Outage")
    alarm = _alarm(stack, _props(stack, 2))
    p = alarm["Properties"]
    (expression,) = [m["Expression"] for m in p["Metrics"] if "Expression" in m]
    assert expression == "(FILL(failed0, 0) + FILL(failed1, 0)) - 0.5 * (FILL(invoked0, 0) + FILL(invoked1, 0))"
    assert (p["Threshold"], p["ComparisonOperator"], p["EvaluationPeriods"]) == (5, "GreaterThanThreshold", 1)
    assert p["TreatMissingData"] == "notBreaching" and p["AlarmActions"] and "OKActions" not in p
    failed = {m["MetricStat"]["Metric"]["MetricName"] for m in p["Metrics"] if m["Id"].startswith("failed")}
    assert failed == {"TransientFailures"}
    first = next(m for m in p["Metrics"] if "MetricStat" in m)  # what tools/rehearse.py keeps on MiniStack
    assert first["MetricStat"]["Metric"]["MetricName"] == "TransientFailures"

    # How CloudWatch's evaluation of it pages (an outage) or not (flaky calls):
    # packages/local_cloud/tests/test_outage_expression.py


def test_transient_share_alarm_reads_the_failure_metric_it_is_given() -> None:
    """``failures_metric``: an application whose steps count their dependency's failures apart (the middleware's
    ``DependencyFailures``) has the alarm read those; the invocations and the expression stay as they are."""
    stack = Stack(App(), "Outage")
    alarm = _alarm(stack, _props(stack, 2, failures_metric="DependencyFailures"))
    metrics = {m["Id"]: m["MetricStat"]["Metric"] for m in alarm["Properties"]["Metrics"] if "MetricStat" in m}
    assert {(m["Namespace"], m["MetricName"]) for i, m in metrics.items() if i.startswith("failed")} == {
        ("App", "DependencyFailures")
    }
    assert {m["MetricName"] for i, m in metrics.items() if i.startswith("invoked")} == {"Invocations"}
    assert next(iter(metrics.values()))["MetricName"] == "DependencyFailures"  # first, as tools/rehearse.py keeps


def test_transient_share_alarm_metric_names_are_the_middlewares() -> None:
    """constructs_lib names the middleware's counts without importing it (the product's stacks never load it)."""
    from constructs_lib import alarms
    from lambda_resilience import step

    assert (
        alarms.TRANSIENT_FAILURES_METRIC,
        alarms.DEPENDENCY_FAILURES_METRIC,
        alarms.FIRST_CALLS_METRIC,
        alarms.FIRST_CALL_FAILURES_METRIC,
    ) == (
        step.TRANSIENT_FAILURES_METRIC,
        step.DEPENDENCY_FAILURES_METRIC,
        step.FIRST_CALLS_METRIC,
        step.FIRST_CALL_FAILURES_METRIC,
    )


def test_transient_share_alarm_counts_the_calls_metric_it_is_given() -> None:
    """``calls_metric``: the failures as a share of the functions' own count of operations (the middleware's
    first calls), per service, instead of their invocations; still two metrics per function (10 at most)."""
    stack = Stack(App(), "Outage")
    props = _props(
        stack, 5, failures_metric="DependencyFirstCallFailures", calls_metric="DependencyFirstCalls", floor=2
    )
    alarm = _alarm(stack, props)
    metrics = {m["Id"]: m["MetricStat"]["Metric"] for m in alarm["Properties"]["Metrics"] if "MetricStat" in m}
    assert len(metrics) == 10 and alarm["Properties"]["Threshold"] == 2
    called = {i: m for i, m in metrics.items() if i.startswith("invoked")}
    assert {(m["Namespace"], m["MetricName"]) for m in called.values()} == {("App", "DependencyFirstCalls")}
    assert [m["Dimensions"] for m in called.values()] == [
        [{"Name": "service", "Value": f"service-{i}"}] for i in range(5)
    ]


@pytest.mark.parametrize("metric", ["failures_metric", "calls_metric"])
def test_transient_share_alarm_props_reject_an_empty_metric_name(metric: str) -> None:
    stack = Stack(App(), "Bad")
    empty: dict[str, Any] = {metric: ""}
    with pytest.raises(ValueError, match=metric):
        _props(stack, 1, **empty)


def test_provider_outage_alarms_count_the_providers_failed_operations(dev: SynthResult, prod: SynthResult) -> None:
    """Issue 41: the PaymentOutage and CarrierOutage alarms count operations, not invocations (decision 0033): each
    operation's first call and whether the provider failed it, under each stage's own namespace; never the steps'
    throttled DynamoDB calls, idempotency records left in progress by a crash, or a refused key's retries."""
    for synth, stage in ((dev, "dev"), (prod, "prod")):
        alarms = synth.of_type("AWS::CloudWatch::Alarm")
        namespace = metrics_namespace(stage)
        for alarm in synth.stack.provider_outage_alarms:
            props = alarms[synth.logical_id(alarm)]["Properties"]
            metrics = {q["Id"]: q["MetricStat"]["Metric"] for q in props["Metrics"] if "MetricStat" in q}
            assert {i: (m["Namespace"], m["MetricName"]) for i, m in metrics.items()} == {
                "failed0": (namespace, "DependencyFirstCallFailures"),
                "failed1": (namespace, "DependencyFirstCallFailures"),
                "invoked0": (namespace, "DependencyFirstCalls"),
                "invoked1": (namespace, "DependencyFirstCalls"),
            }
            assert props["Threshold"] == 2
            assert {q["MetricStat"]["Period"] for q in props["Metrics"] if "MetricStat" in q} == {60}
            # Pages at the first breaching minute, clears after five quiet ones (a long, low-rate outage: one page).
            assert (props["DatapointsToAlarm"], props["EvaluationPeriods"]) == (1, 5)


@pytest.mark.parametrize("periods", [0, 1441])
def test_transient_share_alarm_props_reject_clear_after_periods_beyond_what_cloudwatch_evaluates(periods: int) -> None:
    """At least one period, and at most a day of them (PutMetricAlarm: EvaluationPeriods x Period <= 86,400 s)."""
    stack = Stack(App(), "Outage")
    with pytest.raises(ValueError, match="clear_after_periods"):
        _props(stack, 1, clear_after_periods=periods)


@pytest.mark.parametrize(
    ("n", "share", "floor"),
    [(0, 0.5, 5), (6, 0.5, 5), (1, 0.0, 5), (1, 1.0, 5), (1, 0.5, -1)],
)
def test_transient_share_alarm_props_reject_bad_values(n: int, share: float, floor: int) -> None:
    stack = Stack(App(), "Bad")
    with pytest.raises(ValueError):
        _props(stack, n, share=share, floor=floor)


def test_recall_alarms_of_the_pipeline(dev: SynthResult) -> None:
    """The sweeper's heartbeat pages on INSUFFICIENT_DATA (never at creation), the parked-orders gauge's
    alarm and the provider outage alarm notify the one topic (docs/decisions/0023)."""
    stack = dev.stack
    alarms = dev.of_type("AWS::CloudWatch::Alarm")
    heartbeat = alarms[dev.logical_id(stack.sweeper_heartbeat_alarm)]["Properties"]
    assert (heartbeat["MetricName"], heartbeat["Statistic"], heartbeat["Period"]) == ("SweeperRuns", "Sum", 600)
    assert heartbeat["TreatMissingData"] == "missing"
    assert heartbeat["InsufficientDataActions"] == heartbeat["AlarmActions"] != []
    parked = alarms[dev.logical_id(stack.parked_alarm)]["Properties"]
    assert (parked["MetricName"], parked["Statistic"], parked["Threshold"]) == ("ParkedOrders", "Maximum", 0)
    assert parked["TreatMissingData"] == "ignore"  # a stopped sweeper publishes nothing: the orders are still parked
    # One outage alarm per provider: the carrier failing during a payment outage pages although the
    # payment outage alarm is already in ALARM (tests/e2e/test_outage_alarms.py).
    by_alarm = []
    for alarm in stack.provider_outage_alarms:
        outage = alarms[dev.logical_id(alarm)]["Properties"]
        by_alarm.append(
            {
                d["Value"]
                for m in outage["Metrics"]
                if "MetricStat" in m
                for d in m["MetricStat"]["Metric"]["Dimensions"]
                if d["Name"] == "service"
            }
        )
    assert by_alarm == [{"charge-payment", "refund-payment"}, {"ship-order", "cancel-shipment"}]


def test_sweeper_props_reject_a_heartbeat_window_shorter_than_two_sweeps() -> None:
    with pytest.raises(ValueError, match="heartbeat_window"):
        StuckOrderSweeperProps(
            functions=None,  # type: ignore[arg-type]  # checked before anything is built
            orders_table=None,  # type: ignore[arg-type]
            state_machine=None,  # type: ignore[arg-type]
            saga_timeout=Duration.minutes(30),
            needs_attention_queue=None,  # type: ignore[arg-type]
            providers=None,  # type: ignore[arg-type]
            stuck_after_minutes=60,
            heartbeat_window=Duration.minutes(5),
        )
