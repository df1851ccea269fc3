"""The stuck-order sweeper: schedule, StuckOrders alarm, least-privilege index query, threshold context."""

from __future__ import annotations

from typing import Any

import pytest

from stacks.app_builder import build_app
from tests.infra.conftest import SynthResult, as_list, synth_pipeline


@pytest.fixture(scope="module")
def sweeper_env(dev: SynthResult) -> dict[str, str]:
    return dict(dev.properties(dev.logical_id(dev.stack.sweeper.function))["Environment"]["Variables"])


def test_sweeper_schedule_every_five_minutes(dev: SynthResult) -> None:
    props = dev.properties(dev.logical_id(dev.stack.sweep_rule))
    assert props["ScheduleExpression"] == "rate(5 minutes)"
    assert props["State"] == "ENABLED"
    (target,) = props["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [dev.logical_id(dev.stack.sweeper.function), "Arn"]}
    assert target["RetryPolicy"] == {"MaximumRetryAttempts": 2}
    assert "Input" not in target  # the handler ignores the event; EventBridge sends the scheduled event
    # the sweeper has no other trigger
    function_arn = target["Arn"]
    targeting = [
        rule_id
        for rule_id, rule in dev.of_type("AWS::Events::Rule").items()
        if any(t["Arn"] == function_arn for t in rule["Properties"].get("Targets", []))
    ]
    assert targeting == [dev.logical_id(dev.stack.sweep_rule)]


def test_sweeper_invocable_by_its_rule_only(dev: SynthResult) -> None:
    function_arn = {"Fn::GetAtt": [dev.logical_id(dev.stack.sweeper.function), "Arn"]}
    permissions = [
        p["Properties"]
        for p in dev.of_type("AWS::Lambda::Permission").values()
        if p["Properties"]["FunctionName"] == function_arn
    ]
    assert permissions == [
        {
            "Action": "lambda:InvokeFunction",
            "FunctionName": function_arn,
            "Principal": "events.amazonaws.com",
            "SourceArn": {"Fn::GetAtt": [dev.logical_id(dev.stack.sweep_rule), "Arn"]},
        }
    ]


def test_stuck_orders_alarm_fires_on_any_stuck_order(dev: SynthResult) -> None:
    props = dev.properties(dev.logical_id(dev.stack.stuck_alarm))
    assert props["Namespace"] == "OrderPipeline"
    assert props["MetricName"] == "StuckOrders"
    assert props["Dimensions"] == [{"Name": "service", "Value": "sweeper"}]
    assert props["Statistic"] == "Maximum"
    assert props["Period"] == 300  # one sweep per period
    assert props["EvaluationPeriods"] == 1
    assert props["Threshold"] == 0
    assert props["ComparisonOperator"] == "GreaterThanThreshold"
    assert props["TreatMissingData"] == "notBreaching"
    assert props["AlarmActions"] == [{"Ref": dev.logical_id(dev.stack.alarm_topic)}]
    assert "35 minutes" in props["AlarmDescription"]


def test_stuck_orders_alarm_watches_the_metric_the_sweeper_emits(dev: SynthResult, sweeper_env: dict[str, str]) -> None:
    """Powertools EMF: namespace from POWERTOOLS_METRICS_NAMESPACE, dimension service=POWERTOOLS_SERVICE_NAME."""
    props = dev.properties(dev.logical_id(dev.stack.stuck_alarm))
    assert props["Namespace"] == sweeper_env["POWERTOOLS_METRICS_NAMESPACE"]
    assert props["Dimensions"] == [{"Name": "service", "Value": sweeper_env["POWERTOOLS_SERVICE_NAME"]}]


def test_sweeper_environment_and_no_other_grants(dev: SynthResult, sweeper_env: dict[str, str]) -> None:
    assert sweeper_env["ORDERS_TABLE_NAME"] == {"Ref": dev.logical_id(dev.stack.orders_table)}
    assert sweeper_env["STUCK_AFTER_SECONDS"] == "2100"
    actions = {a for s in dev.statements_of_role(dev.logical_id(dev.stack.sweeper.role)) for a in as_list(s["Action"])}
    assert actions == {
        "logs:CreateLogStream",
        "logs:PutLogEvents",
        "xray:PutTraceSegments",
        "xray:PutTelemetryRecords",
        "dynamodb:Query",
    }


def test_sweeper_threshold_exceeds_saga_timeout(dev: SynthResult, sweeper_env: dict[str, str]) -> None:
    """An order whose execution may still be running (retrying) is never reported as stuck."""
    assert int(sweeper_env["STUCK_AFTER_SECONDS"]) > dev.stack.saga.timeout.to_seconds()


# --- stuck_after_minutes from context ------------------------------------------------------------


@pytest.fixture(scope="module")
def dev_45(tmp_path_factory: pytest.TempPathFactory) -> SynthResult:
    return synth_pipeline(
        tmp_path_factory.mktemp("cdk-dev-45"),
        stage="dev",
        stuck_after_minutes="45",  # as `cdk synth -c stuck_after_minutes=45` passes it
    )


def test_sweeper_stuck_after_minutes_context_sets_threshold(dev_45: SynthResult) -> None:
    env = dev_45.properties(dev_45.logical_id(dev_45.stack.sweeper.function))["Environment"]["Variables"]
    assert env["STUCK_AFTER_SECONDS"] == str(45 * 60)
    alarm = dev_45.properties(dev_45.logical_id(dev_45.stack.stuck_alarm))
    assert "45 minutes" in alarm["AlarmDescription"]
    assert int(env["STUCK_AFTER_SECONDS"]) > dev_45.stack.saga.timeout.to_seconds()


@pytest.mark.parametrize("value", ["0", "1441", "soon"])
def test_sweeper_stuck_after_minutes_context_invalid_fails_before_synth(value: Any) -> None:
    with pytest.raises(ValueError, match="stuck_after_minutes must be"):
        build_app(context={"stuck_after_minutes": value})
