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
