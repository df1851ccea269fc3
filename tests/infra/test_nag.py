"""cdk-nag (AwsSolutions) as a synth gate.

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
from aws_cdk import aws_sqs as sqs
from cdk_nag import AwsSolutionsChecks

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


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_nag_pipeline_app_has_no_unacknowledged_findings(stage: str, request: pytest.FixtureRequest) -> None:
    synth: SynthResult = request.getfixturevalue(stage)  # its app.synth() did not raise
    plugin = _aws_solutions(synth.validation_report())
    assert plugin["violations"] == []
    assert plugin["conclusion"] == "success"


def test_nag_acknowledgements_limited_to_reviewed_iam5_findings(dev: SynthResult) -> None:
    plugin = _aws_solutions(dev.validation_report())
    suppressed = {s["ruleName"]: s for s in plugin["suppressedViolations"]}
    saga_role_policy = f"{dev.stack.node.id}/OrderSaga/StateMachine/Role/DefaultPolicy/Resource"
    step_ids = {
        dev.logical_id(getattr(dev.stack, attr).function)
        for attr in ("reserve", "charge", "ship", "refund", "release", "finalize")
    }
    versions_rule = re.compile(r"AwsSolutions-IAM5\[Resource::<(?P<id>\w+)\.Arn>:\*\]")
    versioned_ids = set()
    for rule, finding in suppressed.items():
        assert finding.get("reason"), rule
        if rule == "AwsSolutions-IAM5[Resource::*]":
            continue
        match = versions_rule.fullmatch(rule)
        assert match, f"unexpected acknowledged finding {rule}"
        versioned_ids.add(match["id"])
        assert [c["constructPath"] for c in finding["violatingConstructs"]] == [saga_role_policy], rule
    assert versioned_ids == step_ids
