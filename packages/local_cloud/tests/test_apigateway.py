"""The local REST API data plane (local_cloud.apigateway) on a small template: routing, SigV4,
validation, mapping templates, integrations as the role, throttling, gateway responses, access logs."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from unittest import mock

import apigw_fixture as fixture
import boto3
import pytest

from local_cloud.apigateway.auth import sign
from local_cloud.apigateway.integrations import sqs_send_message_params
from local_cloud.apigateway.model import rest_apis
from local_cloud.apigateway.server import ApiServer, local_secrets, serve_rest_api
from local_cloud.apigateway.validation import body_errors, missing_parameters
from local_cloud.apigateway.vtl import InputVariable, quiet_references, render, template_variables
from local_cloud.clock import SimClock
from local_cloud.deploy import LocalDeployment
from local_cloud.environment import local_aws
from local_cloud.template import REGION, CloudAssembly

ORDER = {"order_id": "order-1", "currency": "EUR", "amount": 3, "customer_name": "Ada Lovelace"}


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: str

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Harness:
    server: ApiServer
    deployment: LocalDeployment

    def call(
        self,
        method: str,
        path: str,
        body: bytes | str | dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        *,
        signed: bool = True,
        secret: str | None = None,
    ) -> Answer:
        data = json.dumps(body).encode() if isinstance(body, dict) else body.encode() if isinstance(body, str) else body
        url = f"{self.server.stage_url(fixture.STAGE)}{path}"
        all_headers = {"Content-Type": "application/json", **(headers or {})}
        if signed:
            (key, real_secret), *_ = local_secrets().items()  # what this process's clients sign with (first)
            all_headers = sign(method, url, all_headers, data or b"", key, secret or real_secret, REGION)
        request = urllib.request.Request(url, data=data, headers=all_headers, method=method)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=30) as response:
                return Answer(response.status, dict(response.headers.items()), response.read().decode())
        except urllib.error.HTTPError as exc:
            return Answer(exc.code, dict(exc.headers.items()), exc.read().decode())

    def messages(self) -> list[dict[str, Any]]:
        url = self.deployment.queues["OrdersQueue"]["url"]
        got = boto3.client("sqs", region_name=REGION).receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"]
        )
        return list(got.get("Messages", []))


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalDeployment]:
    """Deployed once per module; each test gets its own server (fresh throttle buckets), queue emptied."""
    outdir = tmp_path_factory.mktemp("cdk.out")
    (outdir / f"{fixture.STACK}.template.json").write_text(json.dumps(fixture.template()))
    clock = SimClock()
    with local_aws(clock):
        yield LocalDeployment(CloudAssembly(outdir, fixture.STACK), clock).deploy()


@pytest.fixture
def api(deployment: LocalDeployment) -> Iterator[Harness]:
    sqs, url = boto3.client("sqs", region_name=REGION), deployment.queues["OrdersQueue"]["url"]
    while left := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages"):
        for m in left:  # an earlier test's messages (received ones stay invisible: the clock stands still)
            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    deployment.iam = None
    with serve_rest_api(deployment) as server:
        yield Harness(server, deployment)


def post_order(api: Harness, order: dict[str, Any] | str = ORDER, **headers: str) -> Answer:
    return api.call("POST", "/orders", order, {"Idempotency-Key": "k1", **headers})


# -- the model read from the template ----------------------------------------------------------------
def test_model_reads_paths_methods_and_stage_from_the_template(api: Harness) -> None:
    (rest,) = rest_apis(api.deployment)
    routes = sorted((m.http_method, m.path) for m in rest.methods)
    assert routes == [("GET", "/health"), ("GET", "/orders/{id}"), ("POST", "/denied"), ("POST", "/orders")]
    stage = rest.stages[fixture.STAGE]
    assert stage.access_log_group == api.deployment.refs["AccessLogs"]
    assert stage.method_throttles[("/health", "GET")].burst == 2
    post = rest.method("/orders", "POST")
    assert post is not None and post.integration is not None
    assert post.integration.uri.endswith(f":sqs:path/123456789012/{api.deployment.queues['OrdersQueue']['name']}")


# -- VTL ---------------------------------------------------------------------------------------------
def test_vtl_renders_input_util_and_context() -> None:
    variables = template_variables(
        json.dumps({"a": {"b": [1, 2]}, "s": "x y&z"}),
        {"path": {"id": "o-1"}, "querystring": {"q": "1"}, "header": {"Idempotency-Key": "k1"}},
        {"requestId": "req-1", "responseOverride": {"status": "", "header": {}}},
        {},
    )
    text = (
        "$input.json('$.a') $input.path('$.a.b')[1] $input.params('id') $input.params('idempotency-key') "
        "$util.urlEncode($input.path('$.s')) $util.escapeJavaScript(\"it's\") $context.requestId"
    )
    assert render(text, variables) == '{"b":[1,2]} 2 o-1 k1 x+y%26z it\\\'s req-1'


def test_vtl_null_renders_as_empty_string_as_api_gateway_does() -> None:
    variables = template_variables("{}", {}, {"requestId": "r"}, {})
    assert render("[$input.path('$.missing')][$nothing][${also.nothing}]", variables) == "[][][]"
    assert quiet_references("#set($x = $y)#foreach($i in $list)$i#end") == "#set($x = $!y)#foreach($i in $!list)$!i#end"


def test_vtl_response_override_sets_status_and_headers() -> None:
    context: dict[str, Any] = {"responseOverride": {"status": "", "header": {}}}
    render(
        '#set($context.responseOverride.status = 413)$context.responseOverride.header.put("X-A", "1")',
        template_variables("{}", {}, context, {}),
    )
    assert context["responseOverride"] == {"status": 413, "header": {"X-A": "1"}}


def test_vtl_input_params_without_name_lists_every_kind() -> None:
    params = InputVariable("", {"path": {}, "querystring": {"q": "1"}, "header": {}}).params()
    assert params == {"path": {}, "querystring": {"q": "1"}, "header": {}}


# -- validation, as units -------------------------------------------------------------------------------
def test_validation_names_the_missing_property_as_aws_does() -> None:
    body = json.dumps({"order_id": "order-1", "amount": 1})
    assert body_errors(fixture.ORDER_SCHEMA, body) == '[object has missing required properties (["currency"])]'


def test_validation_names_the_pattern_a_value_breaks() -> None:
    body = json.dumps({**ORDER, "currency": "euro"})
    assert body_errors(fixture.ORDER_SCHEMA, body) == '[ECMA 262 regex "^[A-Z]{3}$" does not match input string "euro"]'


def test_validation_missing_parameters_are_case_insensitive_headers() -> None:
    required = {"method.request.header.Idempotency-Key": True, "method.request.header.X-Correlation-Id": False}
    assert missing_parameters(required, {"header": {"idempotency-key": "k"}}) == []
    assert missing_parameters(required, {"header": {"Idempotency-Key": "  "}}) == ["Idempotency-Key"]


def test_integration_form_body_parses_into_send_message_params() -> None:
    params = sqs_send_message_params(
        "Action=SendMessage&MessageBody=%7B%22a%22%3A1%7D&MessageAttribute.1.Name=correlation_id"
        "&MessageAttribute.1.Value.DataType=String&MessageAttribute.1.Value.StringValue=c+1"
    )
    assert params == {
        "_Action": "SendMessage",
        "MessageBody": '{"a":1}',
        "MessageAttributes": {"correlation_id": {"DataType": "String", "StringValue": "c 1"}},
    }


# -- the pipeline over HTTP ------------------------------------------------------------------------------
def test_gateway_accepted_order_enqueues_one_message_with_the_contract_attributes(api: Harness) -> None:
    answer = post_order(api, **{"X-Correlation-Id": "cid-7"})
    assert answer.status == 202, answer.body
    assert answer.headers["X-Correlation-Id"] == "cid-7"
    (message,) = api.messages()
    assert json.loads(message["Body"]) == ORDER
    attributes = {k: v["StringValue"] for k, v in message["MessageAttributes"].items()}
    assert attributes == {"correlation_id": "cid-7", "idempotency_key": "k1"}
    assert answer.json() == {"correlation_id": "cid-7", "message_id": message["MessageId"]}


def test_gateway_without_correlation_id_uses_the_request_id(api: Harness) -> None:
    answer = post_order(api)
    assert answer.status == 202
    (message,) = api.messages()
    assert message["MessageAttributes"]["correlation_id"]["StringValue"] == answer.headers["x-amzn-RequestId"]


def test_gateway_body_missing_a_field_is_400_naming_it_and_enqueues_nothing(api: Harness) -> None:
    answer = post_order(api, {k: v for k, v in ORDER.items() if k != "currency"})
    assert answer.status == 400
    assert answer.headers["Content-Type"] == "application/problem+json"
    # Variable substitution is raw, as on AWS: the validator's quotes land inside the JSON string.
    assert answer.body == (
        '{"message": "Invalid request body", "detail": "[object has missing required properties (["currency"])]"}'
    )
    assert api.messages() == []


def test_gateway_missing_idempotency_key_is_400_bad_request_parameters(api: Harness) -> None:
    answer = api.call("POST", "/orders", ORDER)
    assert answer.status == 400
    assert answer.json() == {"message": "Missing required request parameters: [Idempotency-Key]"}
    assert api.messages() == []


def test_gateway_oversize_request_is_413_request_too_large(api: Harness) -> None:
    body = json.dumps({**ORDER, "padding": "x" * (10 * 1024 * 1024)})
    answer = post_order(api, body)
    assert answer.status == 413
    assert answer.headers["x-amzn-ErrorType"] == "RequestTooLargeException"
    assert api.messages() == []


def test_gateway_body_over_the_queue_limit_gets_sqs_refusal_mapped_to_413(api: Harness) -> None:
    answer = post_order(api, {**ORDER, "padding": "x" * fixture.QUEUE_MAX_BYTES})
    assert answer.status == 413
    assert f"Message must be shorter than {fixture.QUEUE_MAX_BYTES} bytes" in answer.json()["message"]
    assert api.messages() == []


def test_gateway_unsigned_request_is_403_missing_authentication_token(api: Harness) -> None:
    answer = api.call("POST", "/orders", ORDER, {"Idempotency-Key": "k1"}, signed=False)
    assert (answer.status, answer.json()) == (403, {"message": "Missing Authentication Token"})
    assert api.messages() == []


def test_gateway_bad_signature_is_403_invalid_signature(api: Harness) -> None:
    answer = api.call("POST", "/orders", ORDER, {"Idempotency-Key": "k1"}, secret="not-the-secret")
    assert answer.status == 403
    assert answer.json()["message"].startswith("The request signature we calculated does not match")
    assert answer.headers["x-amzn-ErrorType"] == "InvalidSignatureException"


def test_gateway_unknown_route_and_wrong_method_are_403_missing_authentication_token(api: Harness) -> None:
    assert api.call("GET", "/nowhere").json() == {"message": "Missing Authentication Token"}
    wrong = api.call("DELETE", "/orders")
    assert (wrong.status, wrong.json()) == (403, {"message": "Missing Authentication Token"})


def test_gateway_role_without_send_message_gets_access_denied(api: Harness) -> None:
    answer = api.call("POST", "/denied", ORDER, {"Idempotency-Key": "k1"})
    assert answer.status == 400  # the 4xx integration response: SQS answered 403 AccessDenied
    message = answer.json()["message"]
    assert "is not authorized to perform: sqs:SendMessage" in message
    assert "assumed-role/ApiStack-ReadOnlyRole/BackplaneAssumeRoleSession" in message
    assert api.messages() == []


def test_gateway_never_passthrough_without_a_template_is_415(api: Harness) -> None:
    answer = api.call("POST", "/orders", "order", {"Idempotency-Key": "k1", "Content-Type": "text/plain"})
    assert (answer.status, answer.json()) == (415, {"message": "Unsupported Media Type"})


def test_gateway_get_item_renders_the_order_or_404(api: Harness) -> None:
    table = api.deployment.tables["OrdersTable"]
    boto3.client("dynamodb", region_name=REGION).put_item(
        TableName=table, Item={"pk": {"S": "order-1"}, "status": {"S": "COMPLETED"}, "token": {"S": "tok_secret"}}
    )
    found = api.call("GET", "/orders/order-1")
    assert (found.status, found.json()) == (200, {"order_id": "order-1", "status": "COMPLETED"})
    missing = api.call("GET", "/orders/order-404")
    assert (missing.status, missing.json()) == (404, {"message": "order not found"})


def test_gateway_mock_integration_and_response_parameters(api: Harness) -> None:
    answer = api.call("GET", "/health", signed=False)
    assert (answer.status, answer.json()) == (200, {"ok": True, "stage": "dev"})
    assert answer.headers["Cache-Control"] == "no-store"


def test_gateway_method_throttle_answers_429_past_the_burst(api: Harness) -> None:
    statuses = [api.call("GET", "/health", signed=False).status for _ in range(3)]
    assert statuses == [200, 200, 429]
    assert api.call("GET", "/health", signed=False).json() == {"message": "Too Many Requests"}


def test_gateway_access_log_lines_reach_cloudwatch_without_the_body(api: Harness) -> None:
    ids = [post_order(api).headers["x-amzn-RequestId"]]
    ids.append(post_order(api, {k: v for k, v in ORDER.items() if k != "currency"}).headers["x-amzn-RequestId"])
    group = api.deployment.refs["AccessLogs"]
    events = boto3.client("logs", region_name=REGION).filter_log_events(logGroupName=group)["events"]
    lines = [e["message"] for request_id in ids for e in events if request_id in e["message"]]
    assert [re.search(r'"status": "(\d+)"', line)[1] for line in lines] == ["202", "400"]  # type: ignore[index]
    assert '"validation": "[object has missing required properties (["currency"])]"' in lines[1]
    assert '"integrationStatus": "200"' in lines[0] and '"integrationStatus": "-"' in lines[1]
    text = "\n".join(lines)
    assert "Ada Lovelace" not in text and "order-1" not in text and "EUR" not in text


def test_vtl_hyphenated_set_target_and_java_string_methods() -> None:
    context: dict[str, Any] = {"requestId": "r-1", "responseOverride": {"status": "", "header": {}}}
    variables = template_variables("{}", {"header": {"X-Correlation-Id": "cid'1"}}, context, {})
    text = (
        "#set($cid = $input.params('X-Correlation-Id'))##\n"
        "#if(!$cid.matches('[a-z0-9-]{1,8}'))#set($cid = $context.requestId)#end##\n"
        "#set($context.responseOverride.header.X-Correlation-Id = $cid)##\n"
        "$input.params('X-Correlation-Id').split(\"'\")[1]"
    )
    assert render(text, variables) == "1"  # Java's matches is a whole-string match: cid'1 fails it
    assert context["responseOverride"]["header"] == {"X-Correlation-Id": "r-1"}


def test_gateway_integration_role_use_is_in_the_iam_report(api: Harness) -> None:
    from local_cloud.iam_enforce import enforce_iam

    with enforce_iam(api.deployment):
        assert post_order(api).status == 202
        assert api.call("POST", "/denied", ORDER, {"Idempotency-Key": "k1"}).status == 400
        assert api.deployment.iam is not None
        report = api.deployment.iam.report()
    allowed, refused = report["ApiStack-ApiRole"], report["ApiStack-ReadOnlyRole"]
    assert (allowed["kind"], allowed["calls"], allowed["denied"]["count"]) == ("api_integration", 1, 0)
    assert [g["action"] for g in allowed["granted_unused"]] == ["dynamodb:GetItem"]
    assert refused["denied"]["first"][0]["action"] == "sqs:SendMessage"


def test_iam_enforcement_refuses_to_end_quietly_when_a_hook_was_replaced(
    api: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A patch of ``_make_api_call`` entered inside enforcement and restored after it leaves calls unchecked:
    the enforcer names the displaced hook and its exit raises instead of reporting the calls allowed."""
    import botocore.client

    from local_cloud.iam_enforce import enforce_iam

    # The out-of-order restore below puts the enforcer's hook back after enforcement ended (the very leak the
    # enforcer names); botocore's own method is put back when the test ends, for the tests after it.
    original = vars(botocore.client.BaseClient)["_make_api_call"]
    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call", original)
    outlived = mock.patch.object(botocore.client.BaseClient, "_make_api_call", lambda *a: None)
    refused = pytest.raises(RuntimeError, match=r"BaseClient\._make_api_call is .*<lambda>")
    with refused, enforce_iam(api.deployment) as iam:
        assert iam.displaced_hooks() == []
        outlived.start()
        displaced = iam.displaced_hooks()
    outlived.stop()
    assert len(displaced) == 1 and displaced[0].startswith("BaseClient._make_api_call is ")
    assert vars(botocore.client.BaseClient)["_make_api_call"] is not original  # the hook outlived enforcement


def test_gateway_template_selection_by_media_type_ignores_parameters(api: Harness) -> None:
    """``application/json; charset=utf-8`` selects the ``application/json`` template (and model)."""
    answer = api.call(
        "POST", "/orders", ORDER, {"Idempotency-Key": "k1", "Content-Type": "application/json; charset=utf-8"}
    )
    assert answer.status == 202, answer.body
    assert len(api.messages()) == 1


def test_auth_unknown_key_and_stale_signature_are_refused() -> None:
    import datetime

    from local_cloud.apigateway.auth import Caller, verify_sigv4

    url = "http://127.0.0.1:1/dev/orders"
    headers = sign("POST", url, {"Host": "127.0.0.1:1"}, b"{}", "AKIDLOCAL", "s3cret", REGION)
    assert isinstance(verify_sigv4("POST", url, headers, b"{}", {"AKIDLOCAL": "s3cret"}), Caller)
    unknown = verify_sigv4("POST", url, headers, b"{}", {"OTHER": "s3cret"})
    assert getattr(unknown, "message", "") == "The security token included in the request is invalid."
    later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(minutes=6)
    stale = verify_sigv4("POST", url, headers, b"{}", {"AKIDLOCAL": "s3cret"}, now=later)
    assert getattr(stale, "message", "").startswith("Signature expired:")
    tampered = verify_sigv4("POST", url, headers, b'{"a":1}', {"AKIDLOCAL": "s3cret"})
    assert getattr(tampered, "response_type", "") == "INVALID_SIGNATURE"
