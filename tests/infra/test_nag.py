"""cdk-nag (AwsSolutions, Serverless, PCI DSS 3.2.1) as a synth gate.

cdk-nag 3 runs as a CDK policy-validation plugin (``Validations.of(app).add_plugins``). A violation
that is not acknowledged makes ``app.synth()`` raise ``RuntimeError('ValidationFailed: ...')`` and
leaves ``validation-report.json`` in the assembly directory (``conclusion: failure``). Acknowledged
findings are listed there as ``suppressedViolations``. (There is no ``policy-validation-report.json``.)
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Stack, Validations
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from cdk_nag import AwsSolutionsChecks, PCIDSS321Checks, ServerlessChecks

from tests.infra.conftest import SynthResult


def _aws_solutions(report: dict[str, Any]) -> dict[str, Any]:
    (plugin,) = [p for p in report["pluginReports"] if p["pluginName"] == "AwsSolutions"]
    return plugin


def test_nag_gate_fails_synth_on_violation(tmp_path: Path) -> None:
    app = App(outdir=str(tmp_path))
    stack = Stack(app, "Bad")
    sqs.Queue(stack, "Queue", encryption=sqs.QueueEncryption.UNENCRYPTED)  # no SSE, no enforce_ssl, no DLQ
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))

    with pytest.raises(RuntimeError, match="ValidationFailed"):
        app.synth()

    report_path = tmp_path / "validation-report.json"
    assert report_path.is_file()
    plugin = _aws_solutions(json.loads(report_path.read_text()))
    assert plugin["conclusion"] == "failure"
    violated = {v["ruleName"]: [c["constructPath"] for c in v["violatingConstructs"]] for v in plugin["violations"]}
    for rule in ("AwsSolutions-SQS2", "AwsSolutions-SQS3", "AwsSolutions-SQS4"):
        assert violated.get(rule) == ["Bad/Queue/Resource"], (rule, violated)


PACKS = ("AwsSolutions", "Serverless", "PCI.DSS.321")

#: The order API's reviewed findings (stacks/nag_suppressions.py: WAF, stage cache, client certificate).
API_PCI = (
    "PCI.DSS.321-APIGWAssociatedWithWAF",
    "PCI.DSS.321-APIGWCacheEnabledAndEncrypted",
    "PCI.DSS.321-APIGWSSLEnabled",
)
#: ... and in AwsSolutions (the API Gateway logging role's managed policy, WAF, Cognito), by construct path.
_APIGW_LOGS_POLICY = "arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs"
API_AWS_SOLUTIONS = {
    f"AwsSolutions-IAM4[Policy::{_APIGW_LOGS_POLICY}]": ("OrderApi/OrderApi/CloudWatchRole/Resource",),
    "AwsSolutions-APIG3": ("OrderApi/OrderApi/DeploymentStage.v1/Resource",),
    "AwsSolutions-COG4": (
        "OrderApi/OrderApi/Default/orders/POST/Resource",
        "OrderApi/OrderApi/Default/orders/{id}/GET/Resource",
        "OrderApi/OrderApi/Default/webhooks/provider/POST/Resource",
    ),
    # the providers' webhook: authenticated by its HMAC signature, not IAM (providers cannot sign SigV4)
    "AwsSolutions-APIG4": ("OrderApi/OrderApi/Default/webhooks/provider/POST/Resource",),
    # dev's placeholder signing secret: rotated at the provider's dashboard (prod imports its secret)
    "AwsSolutions-SMG4": ("ProviderWebhook/WebhookSigningSecret/Resource",),
}

#: Every acknowledged rule per pack (the reviewed decisions in stacks/nag_suppressions.py), by stage.
ACKNOWLEDGED: dict[str, dict[str, set[str]]] = {
    "dev": {
        "Serverless": {
            "Serverless-LambdaDLQ",
            "Serverless-SQSRedrivePolicy",
            "Serverless-LambdaEventSourceMappingDestination",
            "Serverless-EventBusDLQ",
            "Serverless-LambdaLatestVersion",  # runtime parity: python3.13 (tests/infra/test_runtime_parity.py)
        },
        "PCI.DSS.321": {
            "PCI.DSS.321-IAMNoInlinePolicy",
            "PCI.DSS.321-LambdaInsideVPC",
            "PCI.DSS.321-CloudWatchLogGroupEncrypted",  # dev keeps AWS-owned keys
            "PCI.DSS.321-SecretsManagerUsingKMSKey",  # dev's placeholder webhook secret (prod imports its own)
            *API_PCI,
        },
    },
    "prod": {
        "Serverless": {
            "Serverless-LambdaDLQ",
            "Serverless-SQSRedrivePolicy",
            "Serverless-LambdaEventSourceMappingDestination",
            "Serverless-EventBusDLQ",
            "Serverless-SNSRedrivePolicy",  # the alarm e-mail subscription
            "Serverless-LambdaLatestVersion",  # runtime parity: python3.13 (tests/infra/test_runtime_parity.py)
        },
        # no CloudWatchLogGroupEncrypted: prod's log groups pass it with the data key
        "PCI.DSS.321": {"PCI.DSS.321-IAMNoInlinePolicy", "PCI.DSS.321-LambdaInsideVPC", *API_PCI},
    },
}


def _plugin(report: dict[str, Any], name: str) -> dict[str, Any]:
    (plugin,) = [p for p in report["pluginReports"] if p["pluginName"] == name]
    return plugin


@pytest.mark.parametrize("pack", PACKS)
@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_nag_pipeline_app_has_no_unacknowledged_findings(stage: str, pack: str, request: pytest.FixtureRequest) -> None:
    synth: SynthResult = request.getfixturevalue(stage)  # its app.synth() did not raise
    report = synth.validation_report()
    assert sorted(p["pluginName"] for p in report["pluginReports"]) == sorted(PACKS)
    plugin = _plugin(report, pack)
    assert plugin["violations"] == []
    assert plugin["conclusion"] == "success"


@pytest.mark.parametrize("pack", ["Serverless", "PCI.DSS.321"])
@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_nag_acknowledgements_are_the_reviewed_rules_with_reasons(
    stage: str, pack: str, request: pytest.FixtureRequest
) -> None:
    synth: SynthResult = request.getfixturevalue(stage)
    suppressed = _plugin(synth.validation_report(), pack)["suppressedViolations"]
    assert {s["ruleName"] for s in suppressed} == ACKNOWLEDGED[stage][pack]
    for finding in suppressed:
        assert len(finding.get("reason", "")) > 60, finding["ruleName"]
        # acknowledged on the reviewed constructs, never stack-wide
        assert finding["acknowledgedAt"] != synth.stack.node.path, finding["ruleName"]


def test_nag_prod_log_groups_pass_pci_encryption_without_acknowledgment(prod: SynthResult) -> None:
    plugin = _plugin(prod.validation_report(), "PCI.DSS.321")
    rules = {s["ruleName"] for s in plugin["suppressedViolations"]} | {v["ruleName"] for v in plugin["violations"]}
    assert "PCI.DSS.321-CloudWatchLogGroupEncrypted" not in rules


def test_nag_extra_packs_fail_synth_on_violation(tmp_path: Path) -> None:
    """The Serverless and PCI packs gate synth like AwsSolutions (an unacknowledged finding fails it)."""
    app = App(outdir=str(tmp_path))
    stack = Stack(app, "Bad")
    lambda_.Function(
        stack,
        "Fn",
        runtime=lambda_.Runtime.PYTHON_3_13,
        handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return {}\n"),
    )
    Validations.of(app).add_plugins(ServerlessChecks(app), PCIDSS321Checks(app))
    with pytest.raises(RuntimeError, match="ValidationFailed"):
        app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text())
    serverless = {v["ruleName"] for v in _plugin(report, "Serverless")["violations"]}
    pci = {v["ruleName"] for v in _plugin(report, "PCI.DSS.321")["violations"]}
    assert {"Serverless-LambdaDLQ", "Serverless-LambdaTracing"} <= serverless
    assert {"PCI.DSS.321-LambdaInsideVPC", "PCI.DSS.321-IAMNoInlinePolicy"} & pci


def test_nag_acknowledgements_limited_to_reviewed_iam5_findings(dev: SynthResult) -> None:
    plugin = _aws_solutions(dev.validation_report())
    suppressed = {s["ruleName"]: s for s in plugin["suppressedViolations"]}
    saga_role_policy = f"{dev.stack.node.id}/OrderSaga/StateMachine/Role/DefaultPolicy/Resource"
    step_ids = {
        dev.logical_id(getattr(dev.stack, attr).function)
        for attr in (
            "reserve",
            "charge",
            "ship",
            "cancel_shipment",
            "refund",
            "release",
            "finalize",
        )  # finalize: the park
    }
    versions_rule = re.compile(r"AwsSolutions-IAM5\[Resource::<(?P<id>\w+)\.Arn>:\*\]")
    versioned_ids = set()
    for rule, finding in suppressed.items():
        assert finding.get("reason"), rule
        if rule in ("AwsSolutions-IAM5[Resource::*]", "AwsSolutions-L1"):  # L1: runtime parity (python3.13)
            continue
        if rule in API_AWS_SOLUTIONS:
            paths = [f"{dev.stack.node.id}/{p}" for p in API_AWS_SOLUTIONS[rule]]
            assert {c["constructPath"] for c in finding["violatingConstructs"]} <= set(paths), rule
            continue
        match = versions_rule.fullmatch(rule)
        assert match, f"unexpected acknowledged finding {rule}"
        versioned_ids.add(match["id"])
        assert [c["constructPath"] for c in finding["violatingConstructs"]] == [saga_role_policy], rule
    assert versioned_ids == step_ids
