"""Composite alarms as CloudWatch evaluates and refuses them
(https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutCompositeAlarm.html), and the one
notification a composite sends while its children pile up
(https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-combining.html)."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from moto import mock_aws

from local_cloud.composite_alarms import Composites, NotEmulated, RuleError, parse_rule, validate

ARN = "arn:aws:cloudwatch:us-east-1:000000000000:alarm:"


def test_composite_alarms_moto_has_no_put_composite_alarm() -> None:
    """Canary: the day moto implements PutCompositeAlarm, compare it with this emulation (or adopt it)."""
    with mock_aws():
        cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
        with pytest.raises(NotImplementedError):
            cloudwatch.put_composite_alarm(AlarmName="c", AlarmRule="ALARM(a)")


@pytest.mark.parametrize(
    ("rule", "states", "holds"),
    [
        ("ALARM(a)", {"a": "ALARM"}, True),
        ("ALARM(a)", {"a": "INSUFFICIENT_DATA"}, False),
        ("OK(a)", {"a": "OK"}, True),
        ('INSUFFICIENT_DATA("a")', {"a": "INSUFFICIENT_DATA"}, True),
        (f'ALARM("{ARN}a")', {"a": "ALARM"}, True),  # by ARN, quoted
        (f"ALARM({ARN}a)", {"a": "ALARM"}, True),  # by ARN, bare
        ("ALARM(a) AND ALARM(b)", {"a": "ALARM", "b": "OK"}, False),
        ("ALARM(a) OR ALARM(b)", {"a": "OK", "b": "ALARM"}, True),
        ("ALARM(a) AND NOT ALARM(b)", {"a": "ALARM", "b": "OK"}, True),  # the page's deployment example
        ("NOT (ALARM(a) OR ALARM(b))", {"a": "OK", "b": "OK"}, True),
        ("(ALARM(a) OR ALARM(b)) AND OK(c)", {"a": "ALARM", "b": "OK", "c": "INSUFFICIENT_DATA"}, False),
        ("TRUE", {}, True),
        ("FALSE", {}, False),
        ('ALARM("name with spaces")', {"name with spaces": "ALARM"}, True),
    ],
)
def test_composite_alarms_rule_grammar(rule: str, states: dict[str, str], holds: bool) -> None:
    assert parse_rule(rule).holds(states) is holds


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ("()", "Error in AlarmRule [Unsupported token ')' at char 1]"),  # what AWS answered (aws-cdk#34662)
        ("ALARM(a) XOR ALARM(b)", "Unsupported token 'X' at char 9"),
        ("ALARM(a) AND", "Unsupported token '<EOF>'"),
        ("alarm(a)", "Unsupported token 'a' at char 0"),
        ("ALARM(a", "Unsupported token"),
    ],
)
def test_composite_alarms_refuses_an_unsupported_token(rule: str, message: str) -> None:
    with pytest.raises(RuleError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")) as e:
        parse_rule(rule)
    assert e.value.code == "ValidationError"


def test_composite_alarms_refuses_a_rule_naming_a_missing_alarm() -> None:
    with pytest.raises(RuleError, match=r"Could not save the composite alarm as alarms \['b'\] in the alarm rule"):
        validate("c", {"AlarmRule": "ALARM(a) OR ALARM(b)"}, {"a"})


def test_composite_alarms_refuses_more_than_100_underlying_alarms() -> None:
    names = [f"a{i}" for i in range(101)]
    with pytest.raises(RuleError, match="100 underlying alarms"):
        validate("c", {"AlarmRule": " OR ".join(f"ALARM({n})" for n in names)}, names)


@pytest.mark.parametrize(
    "props",
    [
        {"AlarmRule": "AT_LEAST(2, ALARM, (a, b))"},
        {"AlarmRule": "ALARM(a)", "ActionsSuppressor": "b"},
    ],
)
def test_composite_alarms_refuses_what_it_does_not_emulate(props: dict[str, Any]) -> None:
    with pytest.raises(NotEmulated):
        validate("c", props, {"a", "b"})


def test_composite_alarms_one_notification_while_children_pile_up() -> None:
    """Created INSUFFICIENT_DATA, evaluated at once (OK: no child in ALARM); ALARM once on the first child;
    silent while a second child joins and the first leaves; OK when none is; ALARM again on the next."""
    composites = Composites({"c": {"AlarmRule": "ALARM(a) OR ALARM(b)"}}, {"a", "b"})
    assert composites.states == {"c": "INSUFFICIENT_DATA"}
    changes: list[tuple[str, str]] = []

    def step(a: str, b: str) -> None:
        changes.extend((old, new) for _, old, new, _ in composites.evaluate({"a": a, "b": b}))

    step("INSUFFICIENT_DATA", "INSUFFICIENT_DATA")
    step("ALARM", "OK")
    step("ALARM", "ALARM")
    step("OK", "ALARM")
    step("OK", "OK")
    step("OK", "ALARM")
    assert changes == [("INSUFFICIENT_DATA", "OK"), ("OK", "ALARM"), ("ALARM", "OK"), ("OK", "ALARM")]


def test_composite_alarms_of_composites_settle_in_one_evaluation() -> None:
    definitions = {"outer": {"AlarmRule": "ALARM(inner)"}, "inner": {"AlarmRule": "ALARM(a)"}}
    composites = Composites(definitions, {"a"})
    composites.evaluate({"a": "ALARM"})
    assert composites.states == {"outer": "ALARM", "inner": "ALARM"}


def _errors_alarm(name: str) -> dict[str, Any]:
    """Sum of ``Errors`` > 0 over one minute, missing data not breaching (a function's errors alarm)."""
    return {
        "AlarmName": name,
        "Namespace": "App",
        "MetricName": "Errors",
        "Dimensions": [{"Name": "fn", "Value": name}],
        "Statistic": "Sum",
        "Period": 60,
        "EvaluationPeriods": 1,
        "Threshold": 0.0,
        "ComparisonOperator": "GreaterThanThreshold",
        "TreatMissingData": "notBreaching",
    }


class _Notices:
    """The alarm actions as a log: (alarm, new state, simulated time) of each transition."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, float]] = []

    def execute(self, alarm: dict[str, Any], old: str, new: str, reason: str, at: float | None = None) -> list[Any]:
        self.sent.append((alarm["AlarmName"], new, at or 0.0))
        return []


def test_composite_alarms_a_caught_up_evaluation_replays_the_children_in_time_order() -> None:
    """Two children in ALARM in the same minute, both OK the minute after, read in one evaluation after the
    clock jumped (the local run skips idle time): CloudWatch evaluated them minute by minute, so the composite
    went ALARM once and OK once. Replayed child by child, it went ALARM, OK, then ALARM again *at the same
    minute* when the second child's replay started over from that minute (three pages for one incident in
    ``make chaos``)."""
    from local_cloud.alarms import AlarmEvaluator
    from local_cloud.capture import LineCapture
    from local_cloud.clock import SimClock
    from local_cloud.environment import local_aws
    from local_cloud.metrics import MetricStore, metric_key

    clock = SimClock()
    with local_aws(clock):
        cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
        alarms = {name: _errors_alarm(name) for name in ("a", "b")}
        for props in alarms.values():
            cloudwatch.put_metric_alarm(**props)
        notices = _Notices()
        store = MetricStore({}, [], LineCapture(), clock)
        composites = Composites({"c": {"AlarmName": "c", "AlarmRule": "ALARM(a) OR ALARM(b)"}}, alarms)
        evaluator = AlarmEvaluator(
            alarms,
            {},
            LineCapture(),
            notices,  # type: ignore[arg-type]
            store=store,
            clock=clock,
            composites=composites,
        )
        evaluator.evaluate()
        clock.advance(60 - clock.now() % 60 + 10)
        for name in alarms:
            store.add(metric_key("App", "Errors", {"fn": name}), clock.now(), 1.0)
        clock.advance(5 * 60)
        evaluator.evaluate()
    composite = [(new, at) for name, new, at in notices.sent if name == "c"]
    assert [new for new, _ in composite] == ["OK", "ALARM", "OK"], composite
    times = [at for _, at in composite]
    assert times == sorted(times), composite
