"""The app's constructs (stacks/order_constructs): bad prop combinations rejected at synth, and the
environment each function gets named only from ``order_domain.env``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import pytest
from aws_cdk import App, Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns

import order_domain.env as env_names
from constructs_lib.monitoring import Monitoring
from constructs_lib.providers import ProviderEndpoint
from stacks.order_constructs.alerting import AlertingProps
from stacks.order_constructs.data import OrderDataProps
from stacks.order_constructs.functions import OTEL_WRAPPER_ENVIRONMENT, OrderFunctionDefaults
from stacks.order_constructs.providers import OrderProvidersProps
from stacks.order_constructs.replay import DlqReplayProps
from stacks.order_constructs.sweeper import StuckOrderSweeperProps
from tests.infra.conftest import SynthResult

ENDPOINT = ProviderEndpoint("https://api.example.com", "arn:aws:secretsmanager:us-east-1:123456789012:secret:x")
TABLE_ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/{}"


def _defaults() -> tuple[Stack, OrderFunctionDefaults]:
    stack = Stack(App(), "PropsUnderTest")
    return stack, OrderFunctionDefaults(
        layers=(),
        monitoring=Monitoring(stack, "Monitoring"),
        alarm_topic=sns.Topic.from_topic_arn(stack, "T", "arn:aws:sns:us-east-1:123456789012:alarms"),
        removal_policy=RemovalPolicy.DESTROY,
        log_retention=logs.RetentionDays.ONE_MONTH,
    )


def _table(stack: Stack, name: str) -> dynamodb.ITable:
    return dynamodb.Table.from_table_arn(stack, name, TABLE_ARN.format(name))


@pytest.mark.parametrize(
    ("props", "message"),
    [
        (lambda s, d: OrderProvidersProps(functions=d, payment_api=ENDPOINT), "go together"),
        (
            lambda s, d: OrderProvidersProps(
                functions=d, payment_api=ENDPOINT, carrier_api=ENDPOINT, ledger_table=_table(s, "ledger")
            ),
            "sandbox's",
        ),
        (lambda s, d: OrderProvidersProps(functions=d), "need ledger_table"),
        (lambda s, d: DlqReplayProps(functions=d, failures_table=_table(s, "failures"), queues=()), "at least one"),
        (
            lambda s, d: StuckOrderSweeperProps(
                functions=d,
                orders_table=_table(s, "orders"),
                state_machine=cast(Any, None),
                saga_timeout=Duration.minutes(30),
                needs_attention_queue=cast(Any, None),
                providers=cast(Any, None),
                stuck_after_minutes=30,
            ),
            "must exceed the saga timeout",
        ),
        (lambda s, d: OrderDataProps(deletion_protection=True), "deletion_protection with removal_policy DESTROY"),
        (lambda s, d: AlertingProps(alarm_email="oncall"), "e-mail"),
    ],
    ids=[
        "one-endpoint",
        "endpoints-and-ledger",
        "sandbox-without-ledger",
        "replay-nothing",
        "stuck-within-saga-timeout",
        "protected-but-destroyed",
        "bad-email",
    ],
)
def test_order_constructs_reject_bad_props(
    props: Callable[[Stack, OrderFunctionDefaults], object], message: str
) -> None:
    stack, defaults = _defaults()
    with pytest.raises(ValueError, match=message):
        props(stack, defaults)


def test_order_constructs_replay_rejects_queue_twice() -> None:
    stack, defaults = _defaults()
    queue = cast(Any, object())
    with pytest.raises(ValueError, match="twice"):
        DlqReplayProps(functions=defaults, failures_table=_table(stack, "failures"), queues=(queue, queue))


@pytest.mark.parametrize("stage", ["dev", "prod", "dev_https"])
def test_order_constructs_environment_names_come_from_env_module(stage: str, request: pytest.FixtureRequest) -> None:
    """Every variable a function gets is ``order_domain.env``'s, the middleware's (POWERTOOLS_*) or the
    Lambda runtime's for AWS's OpenTelemetry layer (``AWS_LAMBDA_EXEC_WRAPPER``, read by no code of ours)."""
    synth: SynthResult = request.getfixturevalue(stage)
    names = {v for k, v in vars(env_names).items() if k.isupper() and isinstance(v, str)}
    used = {
        variable
        for function in synth.of_type("AWS::Lambda::Function").values()
        for variable in function["Properties"].get("Environment", {}).get("Variables", {})
    }
    assert used, "no environment found"
    assert {v for v in used if not v.startswith("POWERTOOLS_")} - set(OTEL_WRAPPER_ENVIRONMENT) <= names
