"""Fixtures for the synth-level tests: the pipeline synthesized once per stage, small check stacks.

A full synth of the pipeline takes a few seconds, so the dev and prod apps are built once per
session (``dev`` / ``prod``) and every test reads the same ``Template``. The apps are built the way
``cdk synth`` builds them: ``build_app`` with the context of ``cdk.json`` (feature flags such as
``minimizePolicies`` change the IAM policies), plus the stage under test.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from aws_cdk import App, Aspects, Duration, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Template

from constructs_lib.checks import ResilienceChecks
from stacks.app_builder import STACK_NAME, build_app
from stacks.order_pipeline_stack import OrderPipelineStack

REPO_ROOT = Path(__file__).resolve().parents[2]
#: The context ``cdk synth`` reads from cdk.json (feature flags + default stage).
CDK_JSON_CONTEXT: dict[str, Any] = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]

PLACEHOLDER = "ARN"

#: Well-formed provider context (any values that pass the stage rules; nothing is called at synth).
PROVIDER_CONTEXT: dict[str, Any] = {
    "payment_api_url": "https://pay.example.com",
    "payment_api_secret_arn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:pay-AbCdEf",
    "carrier_api_url": "https://ship.example.com",
    "carrier_api_secret_arn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:ship-AbCdEf",
}
#: AWS's OpenTelemetry layer (a well-formed version ARN; the version is per region, decision 0019).
OTEL_LAYER_ARN = "arn:aws:lambda:us-east-1:615299751070:layer:AWSOpenTelemetryDistroPython:18"
#: The providers' webhook signing secret (prod takes it from context; dev creates a placeholder).
WEBHOOK_SECRET_ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:webhook/signing-AbCdEf"
#: What ``-c stage=prod`` needs: the provider keys, the webhook's secret, an alarm e-mail and AWS's OpenTelemetry layer.
PROD_CONTEXT: dict[str, Any] = {
    "stage": "prod",
    "alarm_email": "ops@example.com",
    "otel_layer_arn": OTEL_LAYER_ARN,
    "webhook_secret_arn": WEBHOOK_SECRET_ARN,
    **PROVIDER_CONTEXT,
}


def as_list(value: Any) -> list[Any]:
    """IAM ``Action`` / ``Resource`` may be a single value or a list."""
    return value if isinstance(value, list) else [value]


def render_intrinsic(value: Any) -> str:
    """A readable placeholder for a non-string part of an ``Fn::Join``.

    ``{"Fn::GetAtt": [id, attr]}`` -> ``ARN<id.attr>``, ``{"Ref": id}`` -> ``ARN<id>``, else ``ARN``.
    """
    if isinstance(value, dict):
        if "Fn::GetAtt" in value:
            logical_id, attr = value["Fn::GetAtt"]
            return f"{PLACEHOLDER}<{logical_id}.{attr}>"
        if "Ref" in value:
            return f"{PLACEHOLDER}<{value['Ref']}>"
    return PLACEHOLDER


def join_to_string(value: Any) -> str:
    """Flatten ``{"Fn::Join": ["", [...]]}`` (or a plain string) with placeholders for tokens."""
    if isinstance(value, str):
        return value
    separator, parts = value["Fn::Join"]
    return separator.join(p if isinstance(p, str) else render_intrinsic(p) for p in parts)


def placeholder_target(resource: str) -> str | None:
    """Logical ID inside a placeholder produced by :func:`render_intrinsic` (``ARN<Fn.Arn>`` -> ``Fn``)."""
    if resource.startswith(f"{PLACEHOLDER}<") and resource.endswith(">"):
        return resource[len(PLACEHOLDER) + 1 : -1].split(".", 1)[0]
    return None


@dataclass(frozen=True)
class SynthResult:
    """One synthesized pipeline app."""

    app: App
    stack: OrderPipelineStack
    template: Template
    outdir: Path

    @property
    def resources(self) -> dict[str, dict[str, Any]]:
        return self.template.to_json()["Resources"]

    def of_type(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {k: dict(v) for k, v in self.template.find_resources(resource_type).items()}

    def logical_id(self, construct: Any) -> str:
        """Logical ID of an L2's default child (or of an L1)."""
        default_child = getattr(construct.node, "default_child", None)
        return self.stack.get_logical_id(default_child if default_child is not None else construct)

    def properties(self, logical_id: str) -> dict[str, Any]:
        return self.resources[logical_id].get("Properties", {})

    def notifies(self, alarm: dict[str, Any]) -> list[Any]:
        """The actions an alarm's ALARM reaches (its properties given): its own, or, when it keeps none, those
        of the composite alarm whose rule names it (one notification per incident: decision 0030)."""
        if alarm.get("AlarmActions"):
            return list(alarm["AlarmActions"])
        (logical_id,) = [k for k, a in self.of_type("AWS::CloudWatch::Alarm").items() if a["Properties"] == alarm]
        composites = self.of_type("AWS::CloudWatch::CompositeAlarm").values()
        naming = [c["Properties"] for c in composites if f'"{logical_id}"' in json.dumps(c["Properties"]["AlarmRule"])]
        return [action for c in naming for action in c.get("AlarmActions", [])]

    def statements_of_role(self, role_logical_id: str) -> list[dict[str, Any]]:
        """Every statement of every AWS::IAM::Policy attached to the role."""
        statements: list[dict[str, Any]] = []
        for policy in self.of_type("AWS::IAM::Policy").values():
            if {"Ref": role_logical_id} in policy["Properties"].get("Roles", []):
                statements.extend(policy["Properties"]["PolicyDocument"]["Statement"])
        return statements

    def state_machine_definition(self) -> dict[str, Any]:
        (machine,) = self.of_type("AWS::StepFunctions::StateMachine").values()
        return json.loads(join_to_string(machine["Properties"]["DefinitionString"]))

    def validation_report(self) -> dict[str, Any]:
        return json.loads((self.outdir / "validation-report.json").read_text())


#: The apps this test process synthesized, by their context (a context is synthesized once per process).
_SYNTHESIZED: dict[str, SynthResult] = {}


def synth_pipeline(outdir: Path, **context: Any) -> SynthResult:
    """The app built like ``cdk synth`` (cdk.json context + overrides), synthesized once per process and context.

    Every module asking for the same context shares one synthesized app (tests only read it); the first
    request's ``outdir`` holds it. Layer contents are staged under the app's own ``outdir``
    (``constructs_lib.layers``), so a test run neither races with a concurrent ``cdk synth`` / another xdist
    worker nor writes into the working tree. Asset hashes depend on content only, so the template is the same.
    """
    key = json.dumps(context, sort_keys=True, default=str)
    if key not in _SYNTHESIZED:
        _SYNTHESIZED[key] = _synth(outdir, **context)
    return _SYNTHESIZED[key]


def _synth(outdir: Path, **context: Any) -> SynthResult:
    app = build_app(context={**CDK_JSON_CONTEXT, **context}, outdir=str(outdir))
    stage = str(app.node.try_get_context("stage"))
    try:
        app.synth()  # runs ResilienceChecks and the cdk-nag validation plugin
    except RuntimeError as exc:  # cdk-nag violations surface as "ValidationFailed: ..."
        pytest.fail(f"synth of the {stage} app failed: {exc}")
    stack = app.node.find_child(f"{STACK_NAME}-{stage}")
    assert isinstance(stack, OrderPipelineStack)
    return SynthResult(app=app, stack=stack, template=Template.from_stack(stack), outdir=outdir)


@pytest.fixture(scope="session")
def dev(tmp_path_factory: pytest.TempPathFactory) -> SynthResult:
    return synth_pipeline(tmp_path_factory.mktemp("cdk-dev"), stage="dev")


@pytest.fixture(scope="session")
def prod(tmp_path_factory: pytest.TempPathFactory) -> SynthResult:
    return synth_pipeline(tmp_path_factory.mktemp("cdk-prod"), **PROD_CONTEXT)


@pytest.fixture(scope="session")
def dev_https(tmp_path_factory: pytest.TempPathFactory) -> SynthResult:
    """dev with the four provider keys: the HTTPS adapter wiring instead of the sandbox."""
    return synth_pipeline(tmp_path_factory.mktemp("cdk-dev-https"), stage="dev", **PROVIDER_CONTEXT)


@pytest.fixture(scope="session")
def saga_definition(dev: SynthResult) -> dict[str, Any]:
    """The dev state machine's ASL, parsed (Lambda ARNs replaced by ``ARN<LogicalId.Arn>``)."""
    return dev.state_machine_definition()


@pytest.fixture
def checked_stack() -> Stack:
    """A fresh App + Stack with only :class:`ResilienceChecks` attached."""
    stack = Stack(App(), "ChecksUnderTest")
    Aspects.of(stack).add(ResilienceChecks())
    return stack


InlineFunctionFactory = Callable[..., lambda_.Function]


def inline_function_in(scope: Stack, construct_id: str, timeout_s: int = 30, **kwargs: Any) -> lambda_.Function:
    """A tiny Lambda without an asset (no bundling)."""
    return lambda_.Function(
        scope,
        construct_id,
        runtime=lambda_.Runtime.PYTHON_3_13,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return {}\n"),
        timeout=Duration.seconds(timeout_s),
        **kwargs,
    )


@pytest.fixture
def inline_function() -> InlineFunctionFactory:
    """``inline_function(scope, id, timeout_s=30)``: :func:`inline_function_in` as a fixture."""
    return inline_function_in


T = TypeVar("T")


def present(value: T | None) -> T:
    """``value``, asserted not None (an optional stack attribute the test's stage creates)."""
    assert value is not None
    return value


def cfn(construct: Any) -> Any:
    """The CfnElement behind ``construct`` (its default child), for ``Stack.get_logical_id``."""
    from aws_cdk import CfnElement

    child = getattr(construct.node, "default_child", None) or construct
    assert isinstance(child, CfnElement)
    return child
