"""The recall alarms (docs/decisions/0023): a provider outage pages as a rate of transient failures (a
retried flaky call never does), the sweeper's heartbeat and the parked-orders gauge."""

from __future__ import annotations

import pytest
from aws_cdk import App, Duration, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk.assertions import Template

from constructs_lib.alarms import TransientShareAlarm, TransientShareAlarmProps
from stacks.order_constructs.sweeper import StuckOrderSweeperProps
from tests.infra.conftest import SynthResult


def _functions(stack: Stack, n: int) -> tuple[tuple[lambda_.IFunction, str], ...]:
    return tuple((lambda_.Function.from_function_name(stack, f"F{i}", f"fn-{i}"), f"service-{i}") for i in range(n))


def test_transient_share_alarm_pages_on_a_share_of_invocations() -> None:
    stack = Stack(App(), "Outage")
    topic = sns.Topic(stack, "Topic")
    props = TransientShareAlarmProps(
        functions=_functions(stack, 2), namespace="App", alarm_topic=topic, description="provider down"
    )
    TransientShareAlarm(stack, "Outage", props=props)
    (alarm,) = Template.from_stack(stack).find_resources("AWS::CloudWatch::Alarm").values()
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


@pytest.mark.parametrize(
    ("n", "share", "floor"),
    [(0, 0.5, 5), (6, 0.5, 5), (1, 0.0, 5), (1, 1.0, 5), (1, 0.5, -1)],
)
def test_transient_share_alarm_props_reject_bad_values(n: int, share: float, floor: int) -> None:
    stack = Stack(App(), "Bad")
    with pytest.raises(ValueError):
        TransientShareAlarmProps(
            functions=_functions(stack, n),
            namespace="App",
            alarm_topic=sns.Topic(stack, "Topic"),
            description="d",
            share=share,
            floor=floor,
        )


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
