"""The providers' webhook as a route of the order API: ``POST /webhooks/provider``, a Lambda proxy
integration without IAM auth (its authentication is the HMAC signature the handler checks), throttled,
its 5XX alarmed apart from the order methods', its signing secret read by its function alone."""

from __future__ import annotations

from typing import Any

import pytest

import order_domain.env as env_names
from tests.infra.conftest import PROD_CONTEXT, SynthResult, as_list, join_to_string

WEBHOOK_PATH = "/webhooks/provider"


def _webhook_method(synth: SynthResult) -> dict[str, Any]:
    stack = synth.stack
    return synth.properties(synth.logical_id(stack.webhook.method))


def _role_statements(synth: SynthResult, prefix: str) -> list[dict[str, Any]]:
    role = synth.logical_id(synth.stack.webhook.function.role)
    return [s for s in synth.statements_of_role(role) if any(a.startswith(prefix) for a in as_list(s["Action"]))]


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_webhook_route_is_a_lambda_proxy_without_iam_auth(stage: str, request: pytest.FixtureRequest) -> None:
    synth: SynthResult = request.getfixturevalue(stage)
    method = _webhook_method(synth)
    assert method["HttpMethod"] == "POST"
    assert method["AuthorizationType"] == "NONE"  # providers cannot sign SigV4: the HMAC signature is checked
    integration = method["Integration"]
    assert integration["Type"] == "AWS_PROXY"
    function_id = synth.logical_id(synth.stack.webhook.function.function)
    assert f"ARN<{function_id}.Arn>" in join_to_string(integration["Uri"])
    # unsigned requests are refused by API Gateway, before any invocation
    assert method["RequestParameters"] == {"method.request.header.Stripe-Signature": True}
    validator = synth.properties(method["RequestValidatorId"]["Ref"])
    assert validator == {"RestApiId": validator["RestApiId"], "ValidateRequestParameters": True}


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_webhook_no_function_url_and_one_invoke_permission(stage: str, request: pytest.FixtureRequest) -> None:
    synth: SynthResult = request.getfixturevalue(stage)
    assert synth.of_type("AWS::Lambda::Url") == {}
    function_id = synth.logical_id(synth.stack.webhook.function.function)
    permissions = [
        p["Properties"]
        for p in synth.of_type("AWS::Lambda::Permission").values()
        if p["Properties"]["FunctionName"] == {"Fn::GetAtt": [function_id, "Arn"]}
    ]
    assert len(permissions) == 1  # the stage's route only: no test-invoke permission
    (permission,) = permissions
    assert permission["Principal"] == "apigateway.amazonaws.com"
    stage_id = synth.logical_id(synth.stack.order_api.api.deployment_stage)
    assert join_to_string(permission["SourceArn"]).endswith(f"/ARN<{stage_id}>/POST{WEBHOOK_PATH}")


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_webhook_route_throttled_apart_from_the_orders(stage: str, request: pytest.FixtureRequest) -> None:
    from stacks.order_constructs.webhook import WEBHOOK_BURST_LIMIT, WEBHOOK_RATE_LIMIT

    synth: SynthResult = request.getfixturevalue(stage)
    (api_stage,) = synth.of_type("AWS::ApiGateway::Stage").values()
    settings = {(s["ResourcePath"], s["HttpMethod"]): s for s in api_stage["Properties"]["MethodSettings"]}
    route = settings[("/~1webhooks~1provider", "POST")]
    assert (route["ThrottlingRateLimit"], route["ThrottlingBurstLimit"]) == (WEBHOOK_RATE_LIMIT, WEBHOOK_BURST_LIMIT)
    # at the function's timeout, the throttle bounds its concurrency to a quarter of Lambda's default 1,000
    assert WEBHOOK_RATE_LIMIT * 10 <= 250


def test_webhook_secret_created_in_dev_imported_in_prod(dev: SynthResult, prod: SynthResult) -> None:
    (secret_id,) = dev.of_type("AWS::SecretsManager::Secret")
    assert prod.of_type("AWS::SecretsManager::Secret") == {}
    dev_env = dev.properties(dev.logical_id(dev.stack.webhook.function.function))["Environment"]["Variables"]
    prod_env = prod.properties(prod.logical_id(prod.stack.webhook.function.function))["Environment"]["Variables"]
    assert dev_env[env_names.WEBHOOK_SECRET_ARN] == {"Ref": secret_id}
    assert prod_env[env_names.WEBHOOK_SECRET_ARN] == PROD_CONTEXT["webhook_secret_arn"]


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_webhook_role_reads_only_its_secret_and_updates_only_orders(stage: str, request: pytest.FixtureRequest) -> None:
    synth: SynthResult = request.getfixturevalue(stage)
    secret = _role_statements(synth, "secretsmanager:")
    expected = {"Ref": next(iter(synth.of_type("AWS::SecretsManager::Secret")))} if stage == "dev" else None
    assert [as_list(s["Action"]) for s in secret] == [["secretsmanager:GetSecretValue"]]
    assert as_list(secret[0]["Resource"]) == [expected or PROD_CONTEXT["webhook_secret_arn"]]
    tables = {
        r["Fn::GetAtt"][0]: sorted(as_list(s["Action"]))
        for s in _role_statements(synth, "dynamodb:")
        for r in as_list(s["Resource"])
    }
    assert tables == {synth.logical_id(synth.stack.orders_table): ["dynamodb:GetItem", "dynamodb:UpdateItem"]}
    queues = _role_statements(synth, "sqs:")
    assert [as_list(s["Action"]) for s in queues] == [["sqs:SendMessage"]]
    assert as_list(queues[0]["Resource"]) == [
        {"Fn::GetAtt": [synth.logical_id(synth.stack.needs_attention.queue), "Arn"]}
    ]
    # no secret of the payment or carrier provider, no other secret at all
    assert all(
        "secretsmanager:" not in str(s["Action"]) or s in secret
        for s in synth.statements_of_role(synth.logical_id(synth.stack.webhook.function.role))
    )


def test_webhook_secret_readable_only_by_the_webhook(dev: SynthResult) -> None:
    (secret_id,) = dev.of_type("AWS::SecretsManager::Secret")
    readers = {
        r["Ref"]
        for p in dev.of_type("AWS::IAM::Policy").values()
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        if secret_id in str(s["Resource"])
        for r in p["Properties"]["Roles"]
    }
    assert readers == {dev.logical_id(dev.stack.webhook.function.role)}


def test_webhook_server_errors_alarmed_apart_from_the_order_api(dev: SynthResult) -> None:
    api_alarm = dev.properties(dev.logical_id(dev.stack.order_api.errors_alarm))
    expressions = [m["Expression"] for m in api_alarm["Metrics"] if "Expression" in m]
    assert len(expressions) == 1 and "FILL(" in expressions[0]  # the stage's 5XX less the webhook route's
    route = [m for m in api_alarm["Metrics"] if "MetricStat" in m and m["MetricStat"]["Metric"].get("Dimensions")]
    resources = {d["Value"] for m in route for d in m["MetricStat"]["Metric"]["Dimensions"] if d["Name"] == "Resource"}
    assert resources == {WEBHOOK_PATH}
    alarm = dev.properties(dev.logical_id(dev.stack.webhook.errors_alarm))
    assert alarm["MetricName"] == "5XXError"
    dimensions = {d["Name"]: d["Value"] for d in alarm["Dimensions"]}
    assert (dimensions["Resource"], dimensions["Method"]) == (WEBHOOK_PATH, "POST")
    assert alarm["AlarmDescription"].startswith("[ticket] ")
    assert "api-server-errors.md#webhook-server-errors" in alarm["AlarmDescription"]


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_webhook_resource_policy_allows_only_the_route_to_anyone(stage: str, request: pytest.FixtureRequest) -> None:
    """A method without IAM auth is allowed only by an explicit Allow of the API's resource policy ("An implicit
    denial or any explicit denial results in denying the caller":
    https://docs.aws.amazon.com/apigateway/latest/developerguide/apigateway-authorization-flow.html); the HTTPS
    Deny still applies to it."""
    synth: SynthResult = request.getfixturevalue(stage)
    api = synth.properties(synth.logical_id(synth.stack.order_api.api))
    statements = api["Policy"]["Statement"]
    allows = [s for s in statements if s["Effect"] == "Allow"]
    assert allows == [
        {
            "Effect": "Allow",
            "Principal": {"AWS": "*"},
            "Action": "execute-api:Invoke",
            "Resource": f"execute-api:/*/POST{WEBHOOK_PATH}",
        }
    ]
    assert any(s["Effect"] == "Deny" and s["Resource"] == "execute-api:/*" for s in statements)
