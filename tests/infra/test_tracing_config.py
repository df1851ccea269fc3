"""Tracing as deployed (decision 0019): AWS's OpenTelemetry layer and its wrapper on every function
in prod (the version ARN from context, checked at synth), active tracing kept, no file of ours that
the layer also brings, and the saga carrying the trace context to the park."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Environment, Stack

import lambda_resilience.tracing
from stacks.order_constructs.functions import OTEL_WRAPPER_ENVIRONMENT
from stacks.order_constructs.layers import PROVIDED_BY_OTEL_LAYER, OrderLayers, OrderLayersProps
from stacks.order_constructs.order_saga import EXECUTION_INPUT
from stacks.order_constructs.stage import StageConfig
from tests.infra.conftest import OTEL_LAYER_ARN, PROVIDER_CONTEXT, SynthResult


def _functions(synth: SynthResult) -> dict[str, dict[str, Any]]:
    return {k: v["Properties"] for k, v in synth.of_type("AWS::Lambda::Function").items()}


def _staged_python(synth: SynthResult) -> Path:
    layer = synth.stack.layers.node.find_child("PowertoolsLayer")
    return Path(layer.staged_at) / "python"  # type: ignore[attr-defined]


def test_tracing_prod_functions_run_aws_opentelemetry_layer_last_with_its_wrapper(prod: SynthResult) -> None:
    functions = _functions(prod)
    assert functions
    for logical_id, props in functions.items():
        assert props["Layers"][-1] == OTEL_LAYER_ARN, logical_id
        assert len(props["Layers"]) == 3, logical_id
        env = props["Environment"]["Variables"]
        assert env["AWS_LAMBDA_EXEC_WRAPPER"] == OTEL_WRAPPER_ENVIRONMENT["AWS_LAMBDA_EXEC_WRAPPER"], logical_id
        # Fast start, no library instrumentation (decision 0019: the cold start make bench measures).
        assert env["OTEL_AWS_LAMBDA_FAST_START"] == "true", logical_id
        assert env["OTEL_PYTHON_DISABLED_INSTRUMENTATIONS"] == "botocore,requests,urllib3", logical_id
        # X-Ray stays the backend: Lambda's own segments, the layer's spans joined to them.
        assert props["TracingConfig"] == {"Mode": "Active"}, logical_id


def test_tracing_prod_layer_leaves_the_opentelemetry_api_to_aws_layer(prod: SynthResult) -> None:
    staged = {p.name for p in _staged_python(prod).iterdir()}
    assert "opentelemetry" not in staged
    assert not {name for name in staged if name.startswith(("opentelemetry_api", "aws_xray_sdk", "wrapt"))}
    assert PROVIDED_BY_OTEL_LAYER == ("opentelemetry-api",)


def test_tracing_dev_without_the_layer_ships_the_api_and_no_wrapper(dev: SynthResult) -> None:
    staged = {p.name for p in _staged_python(dev).iterdir()}
    assert "opentelemetry" in staged
    assert not {name for name in staged if name.startswith(("aws_xray_sdk", "wrapt"))}
    for logical_id, props in _functions(dev).items():
        assert "AWS_LAMBDA_EXEC_WRAPPER" not in props["Environment"]["Variables"], logical_id
        assert len(props["Layers"]) == 2, logical_id
        assert props["TracingConfig"] == {"Mode": "Active"}, logical_id


@pytest.mark.parametrize(
    "arn",
    [
        "arn:aws:lambda:us-east-1:615299751070:layer:AWSOpenTelemetryDistroPython",  # no version
        "arn:aws:lambda:us-east-1:615299751070:layer:aws-otel-python-arm64-ver-1-20-0:3",  # the legacy layer
        "arn:aws:lambda:us-east-1:61529975107:layer:AWSOpenTelemetryDistroPython:18",  # 11-digit account
        "AWSOpenTelemetryDistroPython:18",
    ],
)
def test_tracing_stage_refuses_a_malformed_otel_layer_arn(arn: str) -> None:
    with pytest.raises(ValueError, match="otel_layer_arn must be a version ARN"):
        StageConfig(otel_layer_arn=arn)


def test_tracing_stage_reads_otel_layer_arn_from_context() -> None:
    config = StageConfig.from_context(App(context={"otel_layer_arn": OTEL_LAYER_ARN, **PROVIDER_CONTEXT}).node)
    assert config.otel_layer_arn == OTEL_LAYER_ARN


def test_tracing_layer_in_another_region_than_the_stack_is_refused() -> None:
    stack = Stack(App(), "Regional", env=Environment(account="123456789012", region="eu-west-1"))
    with pytest.raises(ValueError, match="otel_layer_arn is in us-east-1, the stack in eu-west-1"):
        OrderLayers(stack, "Layers", props=OrderLayersProps(otel_layer_arn=OTEL_LAYER_ARN))


def test_tracing_park_payload_passes_the_execution_input(saga_definition: dict[str, Any]) -> None:
    assert EXECUTION_INPUT == lambda_resilience.tracing.EXECUTION_INPUT

    def states(definition: dict[str, Any]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for name, state in definition.get("States", {}).items():
            found[name] = state
            for branch in state.get("Branches", []):
                found.update(states(branch))
        return found

    park = states(saga_definition)["MarkNeedsAttention"]
    assert park["Parameters"][f"{EXECUTION_INPUT}.$"] == "$$.Execution.Input"
