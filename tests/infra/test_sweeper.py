"""The stuck-order sweeper: schedule, StuckOrders alarm, least-privilege index query, threshold context."""

from __future__ import annotations

from typing import Any

import pytest

import order_domain.env as env_names
from stacks.app_builder import build_app
from tests.infra.conftest import SynthResult, as_list, present, synth_pipeline


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
    assert props["Namespace"] == "OrderPipeline/dev"
    assert props["MetricName"] == "StuckOrders"
    assert props["Dimensions"] == [{"Name": "service", "Value": "sweeper"}]
    assert props["Statistic"] == "Maximum"
    assert props["Period"] == 600  # two sweeps per period (one may fall outside a 5-minute period)
    assert props["EvaluationPeriods"] == 1
    assert props["Threshold"] == 0
    assert props["ComparisonOperator"] == "GreaterThanThreshold"
    assert props["TreatMissingData"] == "notBreaching"
    assert dev.notifies(props) == [{"Ref": dev.logical_id(dev.stack.alarm_topic)}]
    assert "220 minutes" in props["AlarmDescription"]


def test_stuck_orders_alarm_watches_the_metric_the_sweeper_emits(dev: SynthResult, sweeper_env: dict[str, str]) -> None:
    """Powertools EMF: namespace from POWERTOOLS_METRICS_NAMESPACE, dimension service=POWERTOOLS_SERVICE_NAME."""
    props = dev.properties(dev.logical_id(dev.stack.stuck_alarm))
    assert props["Namespace"] == sweeper_env["POWERTOOLS_METRICS_NAMESPACE"]
    assert props["Dimensions"] == [{"Name": "service", "Value": sweeper_env["POWERTOOLS_SERVICE_NAME"]}]


def _grants(result: SynthResult) -> dict[str, list[Any]]:
    """action -> the resources the sweeper's role grants it on."""
    grants: dict[str, list[Any]] = {}
    for statement in result.statements_of_role(result.logical_id(result.stack.sweeper.role)):
        for action in as_list(statement["Action"]):
            grants.setdefault(action, []).extend(as_list(statement["Resource"]))
    return grants


def test_sweeper_environment_and_no_other_grants(dev: SynthResult, sweeper_env: dict[str, str]) -> None:
    stack = dev.stack
    payment, carrier = present(stack.payment_provider), present(stack.carrier)
    assert sweeper_env[env_names.ORDERS_TABLE_NAME] == {"Ref": dev.logical_id(stack.orders_table)}
    assert sweeper_env[env_names.STUCK_AFTER_SECONDS] == "13200"
    assert sweeper_env[env_names.RECONCILE_WINDOW_SECONDS] == "900"
    assert sweeper_env[env_names.STATE_MACHINE_ARN] == {"Ref": dev.logical_id(stack.saga.state_machine)}
    assert sweeper_env[env_names.NEEDS_ATTENTION_QUEUE_URL] == {"Ref": dev.logical_id(stack.needs_attention.queue)}
    assert sweeper_env[env_names.PAYMENT_PROVIDER_FUNCTION] == {"Ref": dev.logical_id(payment.function)}
    assert sweeper_env[env_names.CARRIER_FUNCTION] == {"Ref": dev.logical_id(carrier.function)}
    grants = _grants(dev)
    assert set(grants) == {
        "logs:CreateLogStream",
        "logs:PutLogEvents",
        "xray:PutTraceSegments",
        "xray:PutTelemetryRecords",
        "dynamodb:Query",  # the by-status index
        "dynamodb:GetItem",  # the order, before acting on it
        "dynamodb:BatchGetItem",  # which terminal orders still have an attempt to reconcile (100 a request)
        "dynamodb:UpdateItem",  # finish / park / record the reconciliation (conditional writes)
        "sqs:SendMessage",  # the needs-attention message
        "states:ListExecutions",  # is an execution of the order still running?
        "lambda:InvokeFunction",  # the sandbox providers' lookups (dev)
    }
    orders_arn = {"Fn::GetAtt": [dev.logical_id(stack.orders_table), "Arn"]}
    assert (
        grants["dynamodb:GetItem"] == grants["dynamodb:UpdateItem"] == grants["dynamodb:BatchGetItem"] == [orders_arn]
    )
    assert grants["sqs:SendMessage"] == [{"Fn::GetAtt": [dev.logical_id(stack.needs_attention.queue), "Arn"]}]
    assert grants["states:ListExecutions"] == [{"Ref": dev.logical_id(stack.saga.state_machine)}]
    sandbox = {dev.logical_id(payment.function), dev.logical_id(carrier.function)}
    assert {
        r["Fn::GetAtt"][0] for r in grants["lambda:InvokeFunction"] if isinstance(r, dict) and "Fn::GetAtt" in r
    } <= (sandbox)


def test_sweeper_with_https_providers_reads_their_secrets_and_invokes_nothing(dev_https: SynthResult) -> None:
    env = dev_https.properties(dev_https.logical_id(dev_https.stack.sweeper.function))["Environment"]["Variables"]
    assert {
        env_names.PAYMENT_API_URL,
        env_names.PAYMENT_API_SECRET_ARN,
        env_names.CARRIER_API_URL,
        env_names.CARRIER_API_SECRET_ARN,
    } <= set(env)
    grants = _grants(dev_https)
    assert "secretsmanager:GetSecretValue" in grants
    assert "lambda:InvokeFunction" not in grants


def test_side_effect_mismatch_alarm_watches_the_sweepers_metric(dev: SynthResult, sweeper_env: dict[str, str]) -> None:
    props = dev.properties(dev.logical_id(dev.stack.mismatch_alarm))
    assert props["MetricName"] == "SideEffectMismatches"
    assert props["Namespace"] == sweeper_env["POWERTOOLS_METRICS_NAMESPACE"]
    assert props["Dimensions"] == [{"Name": "service", "Value": sweeper_env["POWERTOOLS_SERVICE_NAME"]}]
    assert (props["Threshold"], props["ComparisonOperator"]) == (0, "GreaterThanThreshold")
    assert props["TreatMissingData"] == "notBreaching"
    assert dev.notifies(props) == [{"Ref": dev.logical_id(dev.stack.alarm_topic)}]


def test_sweeper_threshold_exceeds_saga_timeout(dev: SynthResult, sweeper_env: dict[str, str]) -> None:
    """An order whose execution may still be running (retrying) is never reported as stuck."""
    assert int(sweeper_env[env_names.STUCK_AFTER_SECONDS]) > dev.stack.saga.timeout.to_seconds()


# --- stuck_after_minutes from context ------------------------------------------------------------


@pytest.fixture(scope="module")
def dev_45(tmp_path_factory: pytest.TempPathFactory) -> SynthResult:
    return synth_pipeline(
        tmp_path_factory.mktemp("cdk-dev-45"),
        stage="dev",
        stuck_after_minutes="230",  # as `cdk synth -c stuck_after_minutes=230` passes it
    )


def test_sweeper_stuck_after_minutes_context_sets_threshold(dev_45: SynthResult) -> None:
    env = dev_45.properties(dev_45.logical_id(dev_45.stack.sweeper.function))["Environment"]["Variables"]
    assert env[env_names.STUCK_AFTER_SECONDS] == str(230 * 60)
    alarm = dev_45.properties(dev_45.logical_id(dev_45.stack.stuck_alarm))
    assert "230 minutes" in alarm["AlarmDescription"]
    assert int(env[env_names.STUCK_AFTER_SECONDS]) > dev_45.stack.saga.timeout.to_seconds()


@pytest.mark.parametrize("value", ["0", "1441", "soon"])
def test_sweeper_stuck_after_minutes_context_invalid_fails_before_synth(value: Any) -> None:
    with pytest.raises(ValueError, match="stuck_after_minutes must be"):
        build_app(context={"stuck_after_minutes": value})
