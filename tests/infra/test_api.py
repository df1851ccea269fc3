"""The order API (stacks/order_constructs/api.py): integrations, roles, model, validation, responses,
authorization, throttling and logs, read from the synthesized template."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs

from constructs_lib.monitoring import Monitoring
from lambda_resilience.correlation import is_acceptable
from order_domain.logs import SENSITIVE_KEYS
from order_domain.model import ORDER_SCHEMA
from stacks.order_constructs.api import OrderApi, OrderApiProps
from stacks.order_constructs.api_mapping import CORRELATION_ID_PATTERN
from stacks.order_constructs.api_model import DRAFT_04, draft04_schema
from stacks.order_constructs.throttle import (
    ACCOUNT_BURST_LIMIT,
    ACCOUNT_RATE_LIMIT,
    OrderApiThrottle,
    ServiceQuotas,
    api_throttle_for,
)
from tests.infra.conftest import SynthResult, cfn, join_to_string

#: Fields of an order message that are not customer data: the ID and the attempt number.
ORDER_MESSAGE_NON_CUSTOMER_FIELDS = {"order_id", "payment_attempt"}
#: Customer data, derived from the code: every other field of the order message, the item attribute
#: that stores the whole message (``order``), and the keys the loggers erase.
CUSTOMER_DATA_NAMES = (set(ORDER_SCHEMA["properties"]) - ORDER_MESSAGE_NON_CUSTOMER_FIELDS) | {"order"} | SENSITIVE_KEYS


def _methods(synth: SynthResult) -> dict[str, dict[str, Any]]:
    """``{"POST": properties, "GET": properties}`` of the order methods (the webhook route, a Lambda proxy:
    tests/infra/test_webhook_infra.py)."""
    methods = synth.of_type("AWS::ApiGateway::Method").values()
    return {
        m["Properties"]["HttpMethod"]: m["Properties"]
        for m in methods
        if m["Properties"]["Integration"]["Type"] == "AWS"
    }


def _stage(synth: SynthResult) -> dict[str, Any]:
    (stage,) = synth.of_type("AWS::ApiGateway::Stage").values()
    return dict(stage["Properties"])


def _request_template(synth: SynthResult, method: str) -> str:
    return join_to_string(_methods(synth)[method]["Integration"]["RequestTemplates"]["application/json"])


def _responses(synth: SynthResult, method: str) -> dict[str | None, dict[str, Any]]:
    """Integration responses by selection pattern (None: the default)."""
    return {r.get("SelectionPattern"): r for r in _methods(synth)[method]["Integration"]["IntegrationResponses"]}


def test_api_post_integration_sends_to_the_orders_queue(dev: SynthResult) -> None:
    integration = _methods(dev)["POST"]["Integration"]
    queue = dev.logical_id(dev.stack.orders_queue.queue)
    assert integration["Type"] == "AWS"
    assert integration["IntegrationHttpMethod"] == "POST"
    assert join_to_string(integration["Uri"]) == (
        f"arn:ARN<AWS::Partition>:apigateway:ARN<AWS::Region>:sqs:path/ARN<AWS::AccountId>/ARN<{queue}.QueueName>"
    )
    assert integration["Uri"]["Fn::Join"][1][-1] == {"Fn::GetAtt": [queue, "QueueName"]}
    assert integration["Credentials"] == {"Fn::GetAtt": [dev.logical_id(dev.stack.order_api.send_role), "Arn"]}
    assert integration["PassthroughBehavior"] == "NEVER"
    assert integration["RequestParameters"] == {
        "integration.request.header.Content-Type": "'application/x-www-form-urlencoded'",
        "integration.request.header.Accept": "'application/json'",
    }
    (form,) = [line for line in _request_template(dev, "POST").splitlines() if line.startswith("Action=SendMessage")]
    assert form.startswith("Action=SendMessage&MessageBody=$util.urlEncode($input.body)&")
    names = re.findall(r"MessageAttribute\.(\d+)\.Name=(\w+)", form)
    assert names == [("1", "correlation_id"), ("2", "idempotency_key"), ("3", "traceparent"), ("4", "caller")]


def test_api_get_integration_reads_the_orders_table(dev: SynthResult) -> None:
    integration = _methods(dev)["GET"]["Integration"]
    assert integration["Type"] == "AWS"
    assert integration["IntegrationHttpMethod"] == "POST"
    assert (
        join_to_string(integration["Uri"])
        == "arn:ARN<AWS::Partition>:apigateway:ARN<AWS::Region>:dynamodb:action/GetItem"
    )
    assert integration["Credentials"] == {"Fn::GetAtt": [dev.logical_id(dev.stack.order_api.read_role), "Arn"]}
    assert integration["PassthroughBehavior"] == "NEVER"
    request = json.loads(_request_template(dev, "GET").splitlines()[-1].replace("$id", "x"))
    assert request["TableName"] == f"ARN<{dev.logical_id(dev.stack.orders_table)}>"


def test_api_send_role_may_only_send_to_the_orders_queue(dev: SynthResult) -> None:
    statements = dev.statements_of_role(dev.logical_id(dev.stack.order_api.send_role))
    queue_arn = {"Fn::GetAtt": [dev.logical_id(dev.stack.orders_queue.queue), "Arn"]}
    assert statements == [{"Action": "sqs:SendMessage", "Effect": "Allow", "Resource": queue_arn}]


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_api_read_role_may_only_get_the_order_item(stage: str, request: pytest.FixtureRequest) -> None:
    synth: SynthResult = request.getfixturevalue(stage)
    statements = synth.statements_of_role(synth.logical_id(synth.stack.order_api.read_role))
    table_arn = {"Fn::GetAtt": [synth.logical_id(synth.stack.orders_table), "Arn"]}
    expected: list[dict[str, Any]] = [{"Action": "dynamodb:GetItem", "Effect": "Allow", "Resource": table_arn}]
    if stage == "prod":  # the orders table's customer-managed key: read actions only
        key_arn = {"Fn::GetAtt": [synth.logical_id(synth.stack.data_key), "Arn"]}
        expected.append({"Action": ["kms:Decrypt", "kms:DescribeKey"], "Effect": "Allow", "Resource": key_arn})
    assert statements == expected


def test_api_model_is_order_schema_as_draft04(dev: SynthResult) -> None:
    (model_id, model) = next(iter(dev.of_type("AWS::ApiGateway::Model").items()))
    assert model["Properties"]["ContentType"] == "application/json"
    # Top-level "required" is the request template's check (it names the property in valid JSON).
    expected = {k: v for k, v in ORDER_SCHEMA.items() if k != "required"}
    assert model["Properties"]["Schema"] == {**expected, "$schema": DRAFT_04}
    post = _methods(dev)["POST"]
    assert post["RequestModels"]["application/json"] == {"Ref": model_id}
    (validator_id, validator) = next(iter(dev.of_type("AWS::ApiGateway::RequestValidator").items()))
    assert validator["Properties"]["ValidateRequestBody"] is True
    assert validator["Properties"]["ValidateRequestParameters"] is True
    assert post["RequestValidatorId"] == {"Ref": validator_id}
    assert _methods(dev)["GET"]["RequestValidatorId"] == {"Ref": validator_id}


@pytest.mark.parametrize(
    ("schema", "named"),
    [
        ({"type": "object", "properties": {"x": {"const": 1}}}, "const (at #/properties/x)"),
        ({"type": "array", "contains": {"type": "string"}}, "contains (at #)"),
        ({"type": "integer", "exclusiveMaximum": 3}, "exclusiveMaximum as a number (at #)"),
        ({"items": [{"if": {}}]}, "if (at #/items/0)"),
    ],
)
def test_api_draft04_schema_refuses_later_keywords(schema: dict[str, Any], named: str) -> None:
    with pytest.raises(ValueError, match=re.escape(named)):
        draft04_schema(schema)


def _props(stack: Stack, **overrides: Any) -> OrderApiProps:
    """Props for an :class:`OrderApi` alone in ``stack``."""
    table = dynamodb.TableV2(
        stack, "Table", partition_key=dynamodb.Attribute(name="order_id", type=dynamodb.AttributeType.STRING)
    )
    defaults: dict[str, Any] = {
        "orders_queue": sqs.Queue(stack, "Queue"),
        "orders_table": table,
        "throttle": OrderApiThrottle(rate_limit=10, burst_limit=10),
        "monitoring": Monitoring(stack, "Monitoring"),
        "alarm_topic": sns.Topic(stack, "Topic"),
        "max_message_bytes": 65_536,
    }
    return OrderApiProps(**{**defaults, **overrides})


def test_api_props_refuse_a_schema_draft04_lacks_at_synth() -> None:
    with pytest.raises(ValueError, match="draft 4 lacks: const"):
        _props(Stack(App(), "ApiProps"), order_schema={"type": "object", "properties": {"c": {"const": "EUR"}}})


def test_api_deployment_changes_with_the_model() -> None:
    """A deployment snapshots the model: a changed schema must make a new deployment."""

    def deployment_id(schema: dict[str, Any]) -> str:
        stack = Stack(App(), "ApiAlone")
        api = OrderApi(stack, "OrderApi", props=_props(stack, order_schema=schema))
        deployment = api.api.latest_deployment
        assert deployment is not None
        return str(stack.resolve(cfn(deployment).logical_id))

    narrower = {**ORDER_SCHEMA, "required": [*ORDER_SCHEMA["required"], "payment_attempt"]}
    assert deployment_id(ORDER_SCHEMA) == deployment_id(dict(ORDER_SCHEMA))
    assert deployment_id(ORDER_SCHEMA) != deployment_id(narrower)


@pytest.mark.parametrize(
    ("rate", "burst"), [(0, 10), (ACCOUNT_RATE_LIMIT + 1, 10), (10, 0), (10, ACCOUNT_BURST_LIMIT + 1)]
)
def test_api_throttle_refuses_limits_outside_the_account_defaults(rate: float, burst: int) -> None:
    with pytest.raises(ValueError, match="must be in"):
        OrderApiThrottle(rate_limit=rate, burst_limit=burst)


def test_api_post_requires_idempotency_key_header(dev: SynthResult) -> None:
    assert _methods(dev)["POST"]["RequestParameters"] == {
        "method.request.header.Idempotency-Key": True,
        "method.request.header.X-Correlation-Id": False,
        "method.request.header.traceparent": False,
    }
    assert _methods(dev)["GET"]["RequestParameters"] == {"method.request.path.id": True}


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_api_every_order_method_uses_iam_authorization(stage: str, request: pytest.FixtureRequest) -> None:
    synth: SynthResult = request.getfixturevalue(stage)
    methods = synth.of_type("AWS::ApiGateway::Method")
    webhook = synth.logical_id(synth.stack.webhook.method)
    assert len(methods) == 3  # POST /orders, GET /orders/{id}, POST /webhooks/provider: no OPTIONS, no proxy
    for logical_id, method in methods.items():
        # the providers' webhook is authenticated by its HMAC signature (tests/infra/test_webhook_infra.py)
        wanted = "NONE" if logical_id == webhook else "AWS_IAM"
        assert method["Properties"]["AuthorizationType"] == wanted, logical_id


def test_api_post_integration_responses_map_sqs_statuses(dev: SynthResult) -> None:
    responses = _responses(dev, "POST")
    assert {pattern: r["StatusCode"] for pattern, r in responses.items()} == {
        r"2\d{2}": "202",
        "400": "400",
        r"5\d{2}": "503",
        None: "500",
    }
    assert responses[r"5\d{2}"]["ResponseParameters"]["method.response.header.Retry-After"] == "'5'"
    accepted = responses[r"2\d{2}"]["ResponseTemplates"]["application/json"]
    assert "#set($context.responseOverride.header.X-Correlation-Id = $cid)" in accepted
    assert '#set($context.responseOverride.header.Location = "$context.path/$oid")' in accepted
    refused = responses["400"]["ResponseTemplates"]["application/json"]
    assert "#set($context.responseOverride.status = 413)" in refused
    assert "69632 bytes" in refused


def test_api_gateway_responses_are_problem_json_with_request_id(dev: SynthResult) -> None:
    responses = {
        r["Properties"]["ResponseType"]: r["Properties"]
        for r in dev.of_type("AWS::ApiGateway::GatewayResponse").values()
    }
    statuses = {kind: r.get("StatusCode") for kind, r in responses.items()}
    assert statuses == {
        "BAD_REQUEST_BODY": "400",
        "BAD_REQUEST_PARAMETERS": "400",
        "REQUEST_TOO_LARGE": "413",
        "THROTTLED": "429",
        "QUOTA_EXCEEDED": "429",
        "DEFAULT_4XX": None,
        "DEFAULT_5XX": None,
    }
    for kind, response in responses.items():
        assert response["ResponseParameters"]["gatewayresponse.header.Content-Type"] == "'application/problem+json'"
        template = response["ResponseTemplates"]["application/json"]
        assert '"request_id":"$context.requestId"' in template, kind
    for kind in ("BAD_REQUEST_BODY", "BAD_REQUEST_PARAMETERS"):  # AWS does not escape it: never in JSON
        assert "validationErrorString" not in responses[kind]["ResponseTemplates"]["application/json"]
    assert responses["THROTTLED"]["ResponseParameters"]["gatewayresponse.header.Retry-After"] == "'1'"


def test_api_access_log_is_json_without_bodies(dev: SynthResult) -> None:
    stage = _stage(dev)
    log_format = stage["AccessLogSetting"]["Format"]
    fields = json.loads(log_format)
    assert fields["requestId"] == "$context.requestId"
    assert fields["correlationId"] == "$context.requestOverride.path.correlation_id"
    assert fields["idempotencyKey"] == "$context.requestOverride.path.idempotency_key"
    assert {"status", "responseLatency", "integrationLatency", "errorMessage", "errorType"} <= set(fields)
    for forbidden in ("$input", "body", "Body", "validationErrorString"):
        assert forbidden not in log_format, forbidden
    assert stage["AccessLogSetting"]["DestinationArn"] == {
        "Fn::GetAtt": [dev.logical_id(dev.stack.order_api.access_logs), "Arn"]
    }
    (settings,) = [s for s in stage["MethodSettings"] if s["HttpMethod"] == "*"]
    assert settings["LoggingLevel"] == "ERROR"
    assert settings["DataTraceEnabled"] is False


def test_api_get_projection_excludes_customer_data(dev: SynthResult) -> None:
    request = json.loads(_request_template(dev, "GET").splitlines()[-1].replace("$id", "x"))
    names = request["ExpressionAttributeNames"]
    projected = {names[token.strip()] for token in request["ProjectionExpression"].split(",")}
    assert projected == {
        "order_id", "status", "payment_attempt", "created_at", "updated_at", "attempts", "history",
        "owner", "refused_callers", "last_refusal",
    }  # fmt: skip
    assert {"payment_token", "shipping_address", "customer_id", "order", "name"} <= CUSTOMER_DATA_NAMES
    assert projected.isdisjoint(CUSTOMER_DATA_NAMES)
    for pattern, response in _responses(dev, "GET").items():
        template = response["ResponseTemplates"]["application/json"]
        emitted = set(re.findall(r'"(\w+)":', template))
        assert emitted.isdisjoint(CUSTOMER_DATA_NAMES), (pattern, emitted & CUSTOMER_DATA_NAMES)


def test_api_throttle_is_what_the_throttle_model_computes(dev: SynthResult) -> None:
    """Stage and POST /orders take the model's figure for intake's settings (ops capacity's agreement
    with it, read from the template, is a harness test: tests/ops/test_capacity.py)."""
    rate, burst = api_throttle_for({**dev.stack.intake_capacity_figures, "workflow": "STANDARD"})
    assert (rate, burst) == (300, 1300)  # the StartExecution refill binds (large regions): 300/s, bucket 1,300
    expected = {"ThrottlingRateLimit": rate, "ThrottlingBurstLimit": burst}
    settings = [s for s in _stage(dev)["MethodSettings"] if s["ResourcePath"] != "/~1webhooks~1provider"]
    for setting in settings:
        assert {k: setting[k] for k in expected} == expected, setting
    # the webhook route has its own (tests/infra/test_webhook_infra.py)
    assert {s["ResourcePath"] for s in settings} == {"/*", "/~1orders"}


def test_api_throttle_other_regions_take_their_lower_quotas() -> None:
    figures = {"workflow": "STANDARD", "batch_size": 10, "maximum_concurrency": 100, "reserved_concurrency": None}
    assert api_throttle_for(figures, "eu-central-1") == (150, 800)  # StartExecution: 150/s, bucket 800
    assert api_throttle_for(figures, "us-east-1") == api_throttle_for(figures) == (300, 1300)
    assert ServiceQuotas.for_region("eu-central-1").sfn_express_start_refill == 6000  # Express: one class


def test_api_throttle_intake_binds_when_its_concurrency_is_lower() -> None:
    """Ten concurrent batches of ten serve 100 orders/s, under the StartExecution refill: the bucket is 1 s of it."""
    figures = {"workflow": "STANDARD", "batch_size": 10, "maximum_concurrency": 10, "reserved_concurrency": None}
    assert api_throttle_for(figures) == (100, 100)


def test_api_outputs_the_invoke_url(dev: SynthResult) -> None:
    outputs = dev.template.to_json()["Outputs"]
    url = join_to_string(outputs["OrderApiUrl"]["Value"])
    api, stage = (dev.logical_id(dev.stack.order_api.api), dev.stack.order_api.api.deployment_stage)
    assert url == f"https://ARN<{api}>.execute-api.ARN<AWS::Region>.ARN<AWS::URLSuffix>/ARN<{dev.logical_id(stage)}>/"


def test_api_prod_synth_has_the_api(dev: SynthResult, prod: SynthResult) -> None:
    """The same API in prod (no sandbox, no test switch in it), its access logs under the data key."""
    assert set(_methods(prod)) == {"POST", "GET"}
    for method in ("POST", "GET"):
        assert _request_template(prod, method) == _request_template(dev, method).replace(
            dev.logical_id(dev.stack.orders_table), prod.logical_id(prod.stack.orders_table)
        )
    group = prod.properties(prod.logical_id(prod.stack.order_api.access_logs))
    assert group["KmsKeyId"] == {"Fn::GetAtt": [prod.logical_id(prod.stack.data_key), "Arn"]}
    assert "OrderApiUrl" in prod.template.to_json()["Outputs"]


@pytest.mark.parametrize("stage", ["dev", "prod"])
def test_api_nag_findings_on_the_api_are_only_the_reviewed_ones(stage: str, request: pytest.FixtureRequest) -> None:
    synth: SynthResult = request.getfixturevalue(stage)
    prefix = f"{synth.stack.node.id}/OrderApi/"
    on_api: set[str] = set()
    for plugin in synth.validation_report()["pluginReports"]:
        assert not [
            v
            for v in plugin["violations"]
            if any(c["constructPath"].startswith(prefix) for c in v["violatingConstructs"])
        ]
        for finding in plugin["suppressedViolations"]:
            if any(c["constructPath"].startswith(prefix) for c in finding["violatingConstructs"]):
                on_api.add(finding["ruleName"].split("[")[0])
                assert len(finding["reason"]) > 60, finding["ruleName"]
    reviewed = {
        "AwsSolutions-APIG3",
        "AwsSolutions-APIG4",  # the webhook route: HMAC-signed, not IAM (stacks/nag_suppressions.py)
        "AwsSolutions-COG4",
        "PCI.DSS.321-APIGWAssociatedWithWAF",
        "PCI.DSS.321-APIGWCacheEnabledAndEncrypted",
        "PCI.DSS.321-APIGWSSLEnabled",
        "PCI.DSS.321-IAMNoInlinePolicy",
    }
    if stage == "dev":
        reviewed.add("PCI.DSS.321-CloudWatchLogGroupEncrypted")
    assert on_api == reviewed


def test_api_edge_correlation_ids_pass_intakes_rule() -> None:
    """Every ID the edge carries verbatim is one intake accepts (the edge's rule is a subset)."""
    printable_ascii = "".join(chr(c) for c in range(0x20, 0x7F))
    samples = [printable_ascii.replace("'", ""), "a" * 128, "a" * 129, "", "x'y", "tab\there", "é", "id-1"]
    for sample in samples:
        if re.fullmatch(CORRELATION_ID_PATTERN, sample):
            assert is_acceptable(sample), sample
    assert re.fullmatch(CORRELATION_ID_PATTERN, "Checkout-7f3a.web_1~+/=")
    for unsafe in ('a"b', "a,b", "a:b", "a b", "a\\b"):  # could end a JSON string or forge a log field
        assert not re.fullmatch(CORRELATION_ID_PATTERN, unsafe), unsafe
    assert not re.fullmatch(CORRELATION_ID_PATTERN, "a" * 129)


def test_api_construct_exposes_its_resources(dev: SynthResult) -> None:
    api = dev.stack.order_api
    assert isinstance(api, OrderApi)
    assert dev.logical_id(api.errors_alarm) in dev.of_type("AWS::CloudWatch::Alarm")
    alarm = dev.properties(dev.logical_id(api.errors_alarm))
    stats = [m["MetricStat"] for m in alarm["Metrics"] if "MetricStat" in m]
    assert {s["Metric"]["MetricName"] for s in stats} == {"5XXError"}  # the stage's, less the webhook route's
    assert {s["Period"] for s in stats} == {60}  # a 5XX pages within a minute (docs/decisions/0023)
    assert alarm["AlarmActions"] == [{"Ref": dev.logical_id(dev.stack.alarm_topic)}]
