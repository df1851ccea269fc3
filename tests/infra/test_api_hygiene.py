"""The order API's endpoint and account hygiene and what real clients send (issue 29), read from the
synthesized template: TLS policy, the account-level logging role, usage plans, the execution-log group,
content types, header-only parameters, minted IDs and JSON-safe gateway responses."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from stacks.order_constructs.api_mapping import JSON_CONTENT_TYPES
from tests.infra.conftest import SynthResult, join_to_string, synth_pipeline


def _methods(synth: SynthResult) -> dict[str, dict[str, Any]]:
    """The order methods (mapping templates); the webhook route is a Lambda proxy, without templates."""
    methods = synth.of_type("AWS::ApiGateway::Method").values()
    return {
        m["Properties"]["HttpMethod"]: m["Properties"]
        for m in methods
        if m["Properties"]["Integration"]["Type"] == "AWS"
    }


def _all_mapping_templates(synth: SynthResult) -> list[str]:
    templates = []
    for method in _methods(synth).values():
        integration = method["Integration"]
        templates += [join_to_string(t) for t in integration["RequestTemplates"].values()]
        for response in integration["IntegrationResponses"]:
            templates += [join_to_string(t) for t in response.get("ResponseTemplates", {}).values()]
    return templates


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_api_hygiene_endpoint_refuses_tls_below_1_2(stage: str, request: pytest.FixtureRequest) -> None:
    synth: SynthResult = request.getfixturevalue(stage)
    (api,) = synth.of_type("AWS::ApiGateway::RestApi").values()
    assert api["Properties"]["SecurityPolicy"] == "TLS_1_2"


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_api_hygiene_account_log_role_is_not_owned_by_default(stage: str, request: pytest.FixtureRequest) -> None:
    synth: SynthResult = request.getfixturevalue(stage)
    assert synth.of_type("AWS::ApiGateway::Account") == {}
    roles = synth.of_type("AWS::IAM::Role").values()
    managed = json.dumps([r["Properties"].get("ManagedPolicyArns", []) for r in roles])
    assert "AmazonAPIGatewayPushToCloudWatchLogs" not in managed


def test_api_hygiene_account_log_role_is_owned_when_opted_in(tmp_path: Path) -> None:
    synth = synth_pipeline(tmp_path, stage="dev", api_account_log_role="true")
    (account,) = synth.of_type("AWS::ApiGateway::Account").values()
    role_id = account["Properties"]["CloudWatchRoleArn"]["Fn::GetAtt"][0]
    role = synth.resources[role_id]
    assert "AmazonAPIGatewayPushToCloudWatchLogs" in json.dumps(role["Properties"]["ManagedPolicyArns"])
    assert role.get("DeletionPolicy") == "Retain"  # other stacks' stages keep logging after this one goes


def test_api_hygiene_no_usage_plan_without_api_keys(dev: SynthResult) -> None:
    plans = dev.of_type("AWS::ApiGateway::UsagePlan")
    keys = dev.of_type("AWS::ApiGateway::ApiKey")
    assert not plans or keys, "a usage plan without API keys throttles nobody"


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_api_hygiene_execution_log_group_has_retention_and_encryption(
    stage: str, request: pytest.FixtureRequest
) -> None:
    synth: SynthResult = request.getfixturevalue(stage)
    api_id = synth.logical_id(synth.stack.order_api.api)
    groups = [
        g["Properties"]
        for g in synth.of_type("AWS::Logs::LogGroup").values()
        if join_to_string(g["Properties"].get("LogGroupName", "")).startswith("API-Gateway-Execution-Logs_")
    ]
    assert [join_to_string(g["LogGroupName"]) for g in groups] == [f"API-Gateway-Execution-Logs_ARN<{api_id}>/v1"]
    assert groups[0]["RetentionInDays"] > 0
    if stage == "prod":
        assert groups[0]["KmsKeyId"] == {"Fn::GetAtt": [synth.logical_id(synth.stack.data_key), "Arn"]}


def test_api_hygiene_charset_variants_have_the_same_template_and_model(dev: SynthResult) -> None:
    post = _methods(dev)["POST"]
    assert {"application/json; charset=utf-8", "application/json;charset=UTF-8"} <= set(JSON_CONTENT_TYPES)
    models = post["RequestModels"]
    templates = post["Integration"]["RequestTemplates"]
    for content_type in JSON_CONTENT_TYPES:
        assert models[content_type] == models["application/json"], content_type
        assert templates[content_type] == templates["application/json"], content_type


def test_api_hygiene_templates_read_headers_from_the_header_map(dev: SynthResult) -> None:
    """``$input.params('X')`` looks in the path, then the query string, then the headers: a query
    parameter would override the header the validator checked. Only path parameters are read that way."""
    for template in _all_mapping_templates(dev):
        for name in re.findall(r"\$input\.params\('([^']+)'\)", template):
            assert name == "id", name


def test_api_hygiene_minted_correlation_ids_use_the_extended_request_id(dev: SynthResult) -> None:
    request = join_to_string(_methods(dev)["POST"]["Integration"]["RequestTemplates"]["application/json"])
    assert "#set($cid = $context.extendedRequestId)" in request
    assert "#set($cid = $context.requestId)" not in request
