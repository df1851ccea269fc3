"""Props validation: bad combinations fail fast with ValueError, before any resource exists."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Duration, RemovalPolicy, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns

from constructs_lib.function import PipelineFunctionProps
from constructs_lib.queue import ResilientQueueProps
from constructs_lib.tables import DataTableProps
from stacks.order_constructs.order_saga import RetryPolicy
from stacks.order_constructs.stage import StageConfig
from stacks.order_pipeline_stack import LAMBDAS_DIR
from tests.infra.conftest import (
    OTEL_LAYER_ARN,
    PROD_CONTEXT,
    PROVIDER_CONTEXT,
    WEBHOOK_SECRET_ARN,
    InlineFunctionFactory,
)


@pytest.fixture
def scope(inline_function: InlineFunctionFactory) -> tuple[sns.Topic, lambda_.Function]:
    stack = Stack(App(), "PropsUnderTest")
    return sns.Topic(stack, "Alarms"), inline_function(stack, "Consumer", 30)


# --- ResilientQueueProps ------------------------------------------------------------------------


def _queue_props(**kwargs: Any) -> ResilientQueueProps:
    return ResilientQueueProps(**kwargs)


def test_resilient_queue_props_visibility_below_six_times_consumer_timeout(
    scope: tuple[sns.Topic, lambda_.Function],
) -> None:
    topic, consumer = scope
    with pytest.raises(ValueError, match=r"below 6x the consumer timeout"):
        _queue_props(
            alarm_topic=topic,
            consumer=consumer,
            consumer_timeout=Duration.seconds(30),
            visibility_timeout=Duration.seconds(179),
        )
    # The boundary itself is fine.
    props = _queue_props(
        alarm_topic=topic,
        consumer=consumer,
        consumer_timeout=Duration.seconds(30),
        visibility_timeout=Duration.seconds(180),
    )
    assert props.visibility_timeout is not None
    assert props.visibility_timeout.to_seconds() == 180


def test_resilient_queue_props_consumer_without_timeout(scope: tuple[sns.Topic, lambda_.Function]) -> None:
    topic, consumer = scope
    with pytest.raises(ValueError, match="consumer and consumer_timeout go together"):
        _queue_props(alarm_topic=topic, consumer=consumer)
    with pytest.raises(ValueError, match="consumer and consumer_timeout go together"):
        _queue_props(alarm_topic=topic, consumer_timeout=Duration.seconds(30))


def test_resilient_queue_props_large_batch_without_window(scope: tuple[sns.Topic, lambda_.Function]) -> None:
    topic, consumer = scope
    common = {"alarm_topic": topic, "consumer": consumer, "consumer_timeout": Duration.seconds(30)}
    with pytest.raises(ValueError, match="batch_size above 10 needs max_batching_window"):
        _queue_props(batch_size=11, **common)
    assert _queue_props(batch_size=11, max_batching_window=Duration.seconds(5), **common).batch_size == 11
    assert _queue_props(batch_size=10, **common).batch_size == 10


def test_resilient_queue_props_large_batch_with_zero_window(scope: tuple[sns.Topic, lambda_.Function]) -> None:
    topic, consumer = scope
    with pytest.raises(ValueError, match="max_batching_window"):
        _queue_props(
            alarm_topic=topic,
            consumer=consumer,
            consumer_timeout=Duration.seconds(30),
            batch_size=11,
            max_batching_window=Duration.seconds(0),
        )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_receive_count": 0}, "max_receive_count"),
        ({"max_receive_count": 1001}, "max_receive_count"),
        ({"batch_size": 0}, "batch_size"),
        ({"batch_size": 10001, "max_batching_window": Duration.seconds(1)}, "batch_size"),
        ({"max_concurrency": 1}, "max_concurrency"),
    ],
)
def test_resilient_queue_props_out_of_range(
    scope: tuple[sns.Topic, lambda_.Function], kwargs: dict[str, Any], message: str
) -> None:
    topic, _ = scope
    with pytest.raises(ValueError, match=message):
        _queue_props(alarm_topic=topic, **kwargs)


# --- PipelineFunctionProps ----------------------------------------------------------------------


@pytest.fixture
def code_dir(tmp_path: Path) -> Path:
    (tmp_path / "handler.py").write_text("def handler(event, context):\n    return {}\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("def run(event, context):\n    return {}\n")
    return tmp_path


def test_pipeline_function_props_handler_file_missing(code_dir: Path) -> None:
    with pytest.raises(ValueError, match=r"handler 'missing.handler' not found"):
        PipelineFunctionProps(code_dir=code_dir, service_name="svc", handler="missing.handler")
    with pytest.raises(ValueError, match="not found"):
        PipelineFunctionProps(code_dir=code_dir / "nowhere", service_name="svc")


def test_pipeline_function_props_valid_handlers(code_dir: Path) -> None:
    assert PipelineFunctionProps(code_dir=code_dir, service_name="svc").handler == "handler.handler"
    assert PipelineFunctionProps(code_dir=code_dir, service_name="svc", handler="pkg.mod.run").handler == "pkg.mod.run"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"memory_size": 127}, "memory_size"),
        ({"memory_size": 10241}, "memory_size"),
        ({"timeout": Duration.seconds(901)}, "900"),
        ({"alarm_on_throttles": True}, "alarm_on_throttles needs alarm_topic"),
    ],
)
def test_pipeline_function_props_out_of_range(code_dir: Path, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PipelineFunctionProps(code_dir=code_dir, service_name="svc", **kwargs)


def test_pipeline_function_props_real_handlers_exist() -> None:
    """Every function the stack creates has its handler module (the check runs at synth)."""
    for folder in (
        "intake", "reserve_inventory", "release_inventory", "charge_payment", "refund_payment",
        "ship_order", "finalize_order", "sandbox_payment", "sandbox_carrier", "sweeper",
    ):  # fmt: skip
        PipelineFunctionProps(code_dir=LAMBDAS_DIR / folder, service_name=folder)


# --- StageConfig --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["qa", "Prod", "", "staging"])
def test_stage_config_unknown_stage(name: str) -> None:
    with pytest.raises(ValueError, match="stage must be one of"):
        StageConfig(name=name)


@pytest.mark.parametrize("email", ["ops", "ops.example.com", ""])
def test_stage_config_bad_alarm_email(email: str) -> None:
    with pytest.raises(ValueError, match="alarm_email"):
        StageConfig(name="prod", alarm_email=email)


def test_stage_config_prod_retains_and_protects() -> None:
    prod = StageConfig(
        name="prod",
        alarm_email="ops@example.com",
        otel_layer_arn=OTEL_LAYER_ARN,
        webhook_secret_arn=WEBHOOK_SECRET_ARN,
        **PROVIDER_CONTEXT,
    )
    dev = StageConfig()
    assert (prod.removal_policy, prod.deletion_protection) == (RemovalPolicy.RETAIN, True)
    assert (dev.name, dev.removal_policy, dev.deletion_protection) == ("dev", RemovalPolicy.DESTROY, False)


def test_stage_config_from_context_defaults_to_dev() -> None:
    assert StageConfig.from_context(App().node) == StageConfig(name="dev", alarm_email=None)
    assert StageConfig.from_context(App().node).stuck_after_minutes == 220
    app = App(context=PROD_CONTEXT)
    assert StageConfig.from_context(app.node) == StageConfig(
        name="prod",
        alarm_email="ops@example.com",
        otel_layer_arn=OTEL_LAYER_ARN,
        webhook_secret_arn=WEBHOOK_SECRET_ARN,
        **PROVIDER_CONTEXT,
    )


@pytest.mark.parametrize("minutes", [1, 30, 1440])
def test_stage_config_stuck_after_minutes_within_range(minutes: int) -> None:
    assert StageConfig(stuck_after_minutes=minutes).stuck_after_minutes == minutes


@pytest.mark.parametrize("minutes", [0, -1, 1441])
def test_stage_config_stuck_after_minutes_out_of_range(minutes: int) -> None:
    with pytest.raises(ValueError, match=r"stuck_after_minutes must be within 1\.\.1440"):
        StageConfig(stuck_after_minutes=minutes)


@pytest.mark.parametrize(("value", "minutes"), [("45", 45), (45, 45), ("1440", 1440), (" 7 ", 7)])
def test_stage_config_from_context_reads_stuck_after_minutes(value: object, minutes: int) -> None:
    """``-c stuck_after_minutes=45`` arrives as a string; cdk.json can hold a number."""
    config = StageConfig.from_context(App(context={"stuck_after_minutes": value}).node)
    assert config.stuck_after_minutes == minutes


NOT_AN_INTEGER = "stuck_after_minutes must be an integer"
OUT_OF_RANGE = "stuck_after_minutes must be within 1..1440"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        pytest.param("abc", NOT_AN_INTEGER, id="text"),
        pytest.param("1.5", NOT_AN_INTEGER, id="fraction"),
        pytest.param("0", OUT_OF_RANGE, id="zero-string"),
        pytest.param("1441", OUT_OF_RANGE, id="over-a-day"),
        pytest.param("-5", OUT_OF_RANGE, id="negative"),
        pytest.param(
            0,
            OUT_OF_RANGE,
            id="zero-number",
        ),
    ],
)
def test_stage_config_from_context_rejects_bad_stuck_after_minutes(value: object, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        StageConfig.from_context(App(context={"stuck_after_minutes": value}).node)


# --- DataTableProps / RetryPolicy ---------------------------------------------------------------


def test_data_table_props_sort_key_equals_partition_key() -> None:
    with pytest.raises(ValueError, match="sort_key must differ from partition_key"):
        DataTableProps(partition_key="pk", sort_key="pk")
    with pytest.raises(ValueError, match="sort_key must differ"):
        DataTableProps(partition_key="order_id", sort_key="order_id")
    assert DataTableProps(partition_key="pk", sort_key="sk").sort_key == "sk"


@pytest.mark.parametrize("kwargs", [{"max_attempts": -1}, {"backoff_rate": 0.5}])
def test_retry_policy_invalid(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="max_attempts must be >= 0 and backoff_rate >= 1"):
        RetryPolicy(**kwargs)


def test_retry_policy_worst_case_seconds() -> None:
    policy = RetryPolicy(interval=Duration.seconds(2), max_attempts=5, max_delay=Duration.seconds(30))
    # 6 attempts x 30 s + delays 2 + 4 + 8 + 16 + min(32, 30)
    assert policy.worst_case_seconds(30) == 6 * 30 + 60
