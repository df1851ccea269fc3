"""Alarms that reach someone: every function, the saga and intake throttles alarm on the one topic;
the dashboard shows them; ResilienceChecks fails synth when a function or state machine has none."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Annotations, Match, Matcher

from constructs_lib.checks import MISSING_FUNCTION_ALARM, MISSING_STATE_MACHINE_ALARM
from tests.infra.conftest import InlineFunctionFactory, SynthResult, join_to_string

STACK = "/ChecksUnderTest"
FIRST_FAILURE = {
    "Threshold": 0,
    "ComparisonOperator": "GreaterThanThreshold",
    "EvaluationPeriods": 1,
    "TreatMissingData": "notBreaching",
    "Statistic": "Sum",
}


def _alarms_on(synth: SynthResult, namespace: str, metric: str) -> dict[str, dict[str, Any]]:
    return {
        k: a["Properties"]
        for k, a in synth.of_type("AWS::CloudWatch::Alarm").items()
        if a["Properties"].get("Namespace") == namespace and a["Properties"].get("MetricName") == metric
    }


def _topic(synth: SynthResult, alarm: dict[str, Any]) -> list[dict[str, str]]:
    """The topic of the alarm's severity (its description's ``[page]`` or ``[ticket]``; test_alarm_routing.py)."""
    # An alarm that keeps no action notifies through the OrdersAtRisk composite, a page (decision 0030); a silent
    # level (the needs-attention queue's depth) nobody.
    if "Notifies nobody" in alarm["AlarmDescription"]:
        return []
    page = alarm["AlarmDescription"].startswith("[page] ") or not alarm.get("AlarmActions")
    return [{"Ref": synth.logical_id(synth.stack.alarm_topic if page else synth.stack.ticket_topic)}]


def _unexpected_errors_alarms(synth: SynthResult) -> dict[str, dict[str, Any]]:
    """Function logical ID -> its alarm on ``errors - FILL(expected, 0)`` (metric math, decision 0020)."""
    found = {}
    for props in synth.of_type("AWS::CloudWatch::Alarm").values():
        queries = {q["Id"]: q for q in props["Properties"].get("Metrics", [])}
        if "errors" not in queries:
            continue
        errors = queries["errors"]["MetricStat"]
        (dim,) = errors["Metric"]["Dimensions"]
        assert (errors["Metric"]["Namespace"], errors["Metric"]["MetricName"], dim["Name"]) == (
            "AWS/Lambda",
            "Errors",
            "FunctionName",
        )
        found[dim["Value"]["Ref"]] = props["Properties"]
    return found


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_alarms_every_function_has_errors_alarm_on_topic(stage: str, request: pytest.FixtureRequest) -> None:
    """Each function pages on its errors minus the business outcomes and retried transient failures
    the middleware counts as ``ExpectedErrors`` for its service, within one minute."""
    synth: SynthResult = request.getfixturevalue(stage)
    by_function = _unexpected_errors_alarms(synth)
    functions = set(synth.of_type("AWS::Lambda::Function"))
    assert set(by_function) == functions
    assert len(functions) == (13 if stage == "dev" else 11)  # with the providers' webhook
    for logical_id, props in by_function.items():
        queries = {q["Id"]: q for q in props["Metrics"]}
        expression = next(q for q in props["Metrics"] if "Expression" in q)
        assert expression["Expression"] == "errors - FILL(expected, 0)" and expression.get("ReturnData", True)
        expected = queries["expected"]["MetricStat"]
        assert (expected["Metric"]["MetricName"], expected["Stat"], expected["Period"]) == ("ExpectedErrors", "Sum", 60)
        assert queries["errors"]["MetricStat"]["Period"] == 60 and queries["errors"]["MetricStat"]["Stat"] == "Sum"
        first = {k: v for k, v in FIRST_FAILURE.items() if k != "Statistic"}
        assert {k: props[k] for k in first} == first, logical_id
        assert synth.notifies(props) == _topic(synth, props), logical_id


def test_alarms_dlq_replay_has_errors_alarm(dev: SynthResult) -> None:
    """The review found the replay Lambda without one."""
    alarm = dev.stack.dlq_replay.errors_alarm
    assert alarm is not None
    assert dev.logical_id(alarm) in {
        k for k, a in dev.of_type("AWS::CloudWatch::Alarm").items() if a["Properties"].get("Metrics")
    }
    assert dev.logical_id(dev.stack.dlq_replay.function) in _unexpected_errors_alarms(dev)


@pytest.mark.parametrize(
    ("metric", "key"),
    [
        ("ExecutionsFailed", "failed"),
        ("ExecutionsTimedOut", "timed_out"),
        ("ExecutionsAborted", "aborted"),
        ("ExecutionThrottled", "throttled"),
    ],
)
def test_alarms_state_machine_executions(dev: SynthResult, metric: str, key: str) -> None:
    (props,) = _alarms_on(dev, "AWS/States", metric).values()
    assert dev.logical_id(dev.stack.saga.alarms[key]) in _alarms_on(dev, "AWS/States", metric)
    assert props["Dimensions"] == [
        {"Name": "StateMachineArn", "Value": {"Ref": dev.logical_id(dev.stack.saga.state_machine)}}
    ]
    assert {k: props[k] for k in FIRST_FAILURE} == FIRST_FAILURE
    assert props["Period"] in (60, 300)
    assert dev.notifies(props) == _topic(dev, props)


def test_alarms_intake_throttles_only(dev: SynthResult) -> None:
    alarms = _alarms_on(dev, "AWS/Lambda", "Throttles")
    (props,) = alarms.values()
    assert props["Dimensions"] == [
        {"Name": "FunctionName", "Value": {"Ref": dev.logical_id(dev.stack.intake.function)}}
    ]
    assert {k: props[k] for k in FIRST_FAILURE} == FIRST_FAILURE
    assert dev.notifies(props) == _topic(dev, props)


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_alarms_every_alarm_acts_on_its_severity_topic(stage: str, request: pytest.FixtureRequest) -> None:
    synth: SynthResult = request.getfixturevalue(stage)
    synth.template.resource_count_is("AWS::SNS::Topic", 2)  # page and ticket
    alarms = synth.of_type("AWS::CloudWatch::Alarm")
    # With the order API's 5XX alarm and the orders queue's oldest-message age; the arrivals alarms of both
    # DLQs and the needs-attention queue, the sweeper's heartbeat and parked orders, one outage alarm per
    # provider (payment, carrier: 0023).
    # + SweepDeferred (a ticket), + the providers' webhook's errors and 5XX alarms
    assert len(alarms) == (34 if stage == "dev" else 32)
    for logical_id, alarm in alarms.items():
        assert synth.notifies(alarm["Properties"]) == _topic(synth, alarm["Properties"]), logical_id
        assert alarm["Properties"].get("ActionsEnabled", True) is not False, logical_id


def test_alarms_prod_topic_has_email_subscription(prod: SynthResult) -> None:
    prod.template.has_resource_properties(
        "AWS::SNS::Subscription",
        {
            "Protocol": "email",
            "Endpoint": "ops@example.com",
            "TopicArn": {"Ref": prod.logical_id(prod.stack.alarm_topic)},
        },
    )


def _arn_name(arn: str) -> str:
    found = re.fullmatch(r"ARN<(\w+)\.Arn>", arn)
    assert found is not None, arn
    return found[1]


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_alarms_dashboard_shows_every_alarm(stage: str, request: pytest.FixtureRequest) -> None:
    synth: SynthResult = request.getfixturevalue(stage)
    (dashboard,) = synth.of_type("AWS::CloudWatch::Dashboard").values()
    body = json.loads(join_to_string(dashboard["Properties"]["DashboardBody"]))
    shown = {
        _arn_name(arn)
        for widget in body["widgets"]
        if widget["type"] == "alarm"
        for arn in widget["properties"]["alarms"]
    }
    assert shown == set(synth.of_type("AWS::CloudWatch::Alarm"))


# --- ResilienceChecks: a function or state machine without a failure alarm fails synth ------------------


def _regexp(message: str) -> Matcher:
    return Match.string_like_regexp(re.escape(message))


def _errors_alarm(stack: Stack, fn: Any, topic: sns.ITopic | None, threshold: float = 0) -> cloudwatch.Alarm:
    alarm = fn.metric_errors(period=Duration.minutes(5)).create_alarm(
        stack,
        f"{fn.node.id}Errors",
        threshold=threshold,
        evaluation_periods=1,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    )
    if topic is not None:
        alarm.add_alarm_action(cw_actions.SnsAction(topic))
    return alarm


def _machine(stack: Stack) -> sfn.StateMachine:
    return sfn.StateMachine(
        stack, "Machine", definition_body=sfn.DefinitionBody.from_chainable(sfn.Pass(stack, "Noop"))
    )


def test_checks_function_without_errors_alarm_fails(
    checked_stack: Stack, inline_function: InlineFunctionFactory
) -> None:
    topic = sns.Topic(checked_stack, "Alarms")
    alarmed = inline_function(checked_stack, "Alarmed")
    _errors_alarm(checked_stack, alarmed, topic)
    inline_function(checked_stack, "Silent")  # omitted on purpose
    annotations = Annotations.from_stack(checked_stack)
    annotations.has_error(f"{STACK}/Silent/Resource", _regexp(MISSING_FUNCTION_ALARM))
    annotations.has_no_error(f"{STACK}/Alarmed/Resource", Match.any_value())
    assert len(annotations.find_error("*", Match.any_value())) == 1


def test_checks_errors_alarm_without_sns_action_fails(
    checked_stack: Stack, inline_function: InlineFunctionFactory
) -> None:
    fn = inline_function(checked_stack, "Fn")
    _errors_alarm(checked_stack, fn, None)
    Annotations.from_stack(checked_stack).has_error(f"{STACK}/Fn/Resource", _regexp(MISSING_FUNCTION_ALARM))


def test_checks_errors_alarm_with_high_threshold_fails(
    checked_stack: Stack, inline_function: InlineFunctionFactory
) -> None:
    fn = inline_function(checked_stack, "Fn")
    _errors_alarm(checked_stack, fn, sns.Topic(checked_stack, "Alarms"), threshold=100)
    Annotations.from_stack(checked_stack).has_error(f"{STACK}/Fn/Resource", _regexp(MISSING_FUNCTION_ALARM))


def test_checks_errors_alarm_on_another_function_does_not_count(
    checked_stack: Stack, inline_function: InlineFunctionFactory
) -> None:
    topic = sns.Topic(checked_stack, "Alarms")
    a, b = inline_function(checked_stack, "A"), inline_function(checked_stack, "B")
    _errors_alarm(checked_stack, a, topic)
    # B only has a Throttles alarm: not an alarm on its failures
    b.metric_throttles().create_alarm(checked_stack, "BThrottles", threshold=0, evaluation_periods=1).add_alarm_action(
        cw_actions.SnsAction(topic)
    )
    annotations = Annotations.from_stack(checked_stack)
    annotations.has_error(f"{STACK}/B/Resource", _regexp(MISSING_FUNCTION_ALARM))
    annotations.has_no_error(f"{STACK}/A/Resource", Match.any_value())


def test_checks_errors_alarm_on_imported_topic_arn_counts(
    checked_stack: Stack, inline_function: InlineFunctionFactory
) -> None:
    topic = sns.Topic.from_topic_arn(checked_stack, "Oncall", "arn:aws:sns:us-east-1:123456789012:oncall")
    _errors_alarm(checked_stack, inline_function(checked_stack, "Fn"), topic)
    Annotations.from_stack(checked_stack).has_no_error("*", Match.any_value())


def test_checks_state_machine_without_failed_alarm_fails(checked_stack: Stack) -> None:
    topic = sns.Topic(checked_stack, "Alarms")
    machine = _machine(checked_stack)
    # a timed-out alarm is not a failure alarm
    machine.metric_timed_out().create_alarm(
        checked_stack, "TimedOut", threshold=0, evaluation_periods=1
    ).add_alarm_action(cw_actions.SnsAction(topic))
    annotations = Annotations.from_stack(checked_stack)
    annotations.has_error(f"{STACK}/Machine/Resource", _regexp(MISSING_STATE_MACHINE_ALARM))


def test_checks_state_machine_with_failed_alarm_passes(checked_stack: Stack) -> None:
    topic = sns.Topic(checked_stack, "Alarms")
    machine = _machine(checked_stack)
    machine.metric_failed(period=Duration.minutes(1)).create_alarm(
        checked_stack,
        "Failed",
        threshold=0,
        evaluation_periods=1,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    ).add_alarm_action(cw_actions.SnsAction(topic))
    Annotations.from_stack(checked_stack).has_no_error("*", Match.any_value())


def test_checks_pipeline_prod_stack_has_no_errors(prod: SynthResult) -> None:
    Annotations.from_stack(prod.stack).has_no_error("*", Match.any_value())
