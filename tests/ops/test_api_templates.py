"""The order API's mapping templates, as synthesized, rendered by the local data plane's Velocity
(``local_cloud.apigateway.vtl``: airspeed with API Gateway's ``$input`` / ``$util`` / ``$context``):
what each template sends to SQS or DynamoDB and answers the caller. Not AWS's Velocity: see
decision 0018's "Not confirmed"."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any
from urllib.parse import parse_qs

import pytest

from local_cloud.apigateway.vtl import java_values, render, substitute, template_variables
from order_domain.model import ORDER_ID_PATTERN
from stacks.order_constructs.api_mapping import (
    ORDER_ACCESS_ATTRIBUTES,
    ORDER_STATUS_ATTRIBUTES,
    TRACE_SAMPLE_PERCENT,
    TRACEPARENT_PATTERN,
)
from tests.infra.conftest import SynthResult, join_to_string, synth_pipeline
from tests.infra.test_api import CUSTOMER_DATA_NAMES

ORDER = {
    "order_id": "order-123",
    "customer_id": "c-1",
    "currency": "EUR",
    "payment_token": "tok_secret",
    "items": [{"sku": "SKU-1", "quantity": 1, "unit_price_cents": 100}],
    "shipping_address": {"name": "Ada", "line1": "1 Road", "city": "X", "postcode": "1", "country": "GB"},
}


CALLER = "arn:aws:iam::123456789012:user/checkout"


def _context(request_id: str, caller: str = CALLER) -> dict[str, Any]:
    return java_values(
        {
            "requestId": request_id,
            "extendedRequestId": "Xa1b2C3d4E5f6G=",
            "identity": {"userArn": caller},
            "path": "/v1/orders",
            "requestOverride": {"path": {}, "header": {}, "querystring": {}},
            "responseOverride": {"header": {}, "status": None},
        }
    )


def _render(
    template: str, context: dict[str, Any], body: str, params: dict[str, str], stage: dict[str, str] | None = None
) -> str:
    """``params``: the method request's path parameter ``id`` and headers; ``stage``: stage variables."""
    kinds = {
        "path": {k: v for k, v in params.items() if k == "id"},
        "querystring": {},
        "header": {k: v for k, v in params.items() if k != "id"},
    }
    return render(template, template_variables(body, kinds, context, stage or {}))


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> SynthResult:
    return synth_pipeline(tmp_path_factory.mktemp("cdk-dev"), stage="dev")


def _templates(dev: SynthResult, method: str) -> dict[str | None, str]:
    """``{"request": ..., <selection pattern>: response template}`` of a method, as synthesized."""
    (props,) = [
        m["Properties"]
        for m in dev.of_type("AWS::ApiGateway::Method").values()
        # the order methods (the providers' webhook is a Lambda proxy, without templates)
        if m["Properties"]["HttpMethod"] == method and m["Properties"]["Integration"]["Type"] == "AWS"
    ]
    integration = props["Integration"]
    templates: dict[str | None, str] = {"request": join_to_string(integration["RequestTemplates"]["application/json"])}
    for response in integration["IntegrationResponses"]:
        templates[response.get("SelectionPattern")] = response["ResponseTemplates"]["application/json"]
    return templates


def _send(
    dev: SynthResult,
    headers: dict[str, str],
    *,
    request_id: str | None = None,
    xray: str | None = None,
    stage: dict[str, str] | None = None,
) -> tuple[dict[str, Any], dict[str, list[str]]]:
    context = _context(request_id or str(uuid.uuid4()))
    if xray is not None:
        context["xrayTraceId"] = java_values(xray)
    form = _render(_templates(dev, "POST")["request"], context, json.dumps(ORDER), headers, stage)
    assert "\n" not in form and not form.startswith(" ")
    return context, parse_qs(form, strict_parsing=True)


def _attributes(form: dict[str, list[str]]) -> dict[str, str]:
    return {
        form[f"MessageAttribute.{n}.Name"][0]: form[f"MessageAttribute.{n}.Value.StringValue"][0] for n in (1, 2, 3, 4)
    }


def test_api_template_post_sends_the_body_and_the_callers_ids(dev: SynthResult) -> None:
    traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    headers = {"idempotency-key": '"k1"', "X-Correlation-Id": "caller-id.1", "traceparent": traceparent}
    context, form = _send(dev, headers)
    assert form["Action"] == ["SendMessage"]
    assert json.loads(form["MessageBody"][0]) == ORDER
    assert _attributes(form) == {
        "correlation_id": "caller-id.1",
        "idempotency_key": "k1",  # a Structured Field string's quotes are not the key
        "traceparent": traceparent,
        "caller": CALLER,
    }
    assert [form[f"MessageAttribute.{n}.Value.DataType"] for n in (1, 2, 3, 4)] == [["String"]] * 4
    assert context["requestOverride"]["path"] == {
        "order_id": "order-123",
        "correlation_id": "caller-id.1",
        "idempotency_key": "k1",
    }


def test_api_template_post_caller_is_the_role_without_its_session(dev: SynthResult) -> None:
    context = _context(str(uuid.uuid4()), "arn:aws:sts::123456789012:assumed-role/checkout/i-0abc")
    form = _render(_templates(dev, "POST")["request"], context, json.dumps(ORDER), {"Idempotency-Key": "k1"})
    assert _attributes(parse_qs(form))["caller"] == "arn:aws:sts::123456789012:assumed-role/checkout"


@pytest.mark.parametrize(
    ("correlation_id", "traceparent"),
    [
        ("x'y", "00-00000000000000000000000000000000-b7ad6b7169203331-01"),
        ('a","b', "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0"),
        ("a" * 129, "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01"),
        ("tab\there", "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),
        ("", "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01"),
    ],
)
def test_api_template_post_mints_ids_from_the_request_id(
    dev: SynthResult, correlation_id: str, traceparent: str
) -> None:
    context, form = _send(
        dev, {"Idempotency-Key": "k1", "X-Correlation-Id": correlation_id, "traceparent": traceparent}
    )
    request_id = str(context["requestId"])
    hex_id = request_id.replace("-", "")
    attributes = _attributes(form)
    assert attributes["correlation_id"] == context["extendedRequestId"]
    sampled = "01" if int(hex_id[-2:], 16) * 100 < TRACE_SAMPLE_PERCENT * 256 else "00"
    assert attributes["traceparent"] == f"00-{hex_id}-{hex_id[:16]}-{sampled}"
    assert re.fullmatch(TRACEPARENT_PATTERN, attributes["traceparent"])


XRAY_ROOT = "5759e988bd862e3fe1be46a994272700"
XRAY_TRACE = "Root=1-5759e988-bd862e3fe1be46a994272700;Parent=53995c3f42cd8ad8;Sampled=1"


@pytest.mark.parametrize(
    ("xray", "expected"),
    [
        (XRAY_TRACE, f"00-{XRAY_ROOT}-53995c3f42cd8ad8-01"),
        ("Root=1-5759e988-bd862e3fe1be46a9942727ff;Sampled=0", "00-5759e988bd862e3fe1be46a9942727ff-{rid16}-00"),
        ("", "00-{rid}-{rid16}-00"),  # tracing off: minted from the request ID (ends in ff: sampled out)
        ("Root=1-nothex", "00-{rid}-{rid16}-00"),
    ],
    ids=["xray-root-and-parent", "xray-root-only", "tracing-off", "malformed"],
)
def test_api_template_post_seeds_the_trace_from_the_stages_xray_trace(
    dev: SynthResult, xray: str, expected: str
) -> None:
    """One trace per order: the stage's X-Ray trace ID is the W3C trace ID, its Parent (the API's segment)
    the parent ID; the sampled flag is the template's decision on the trace ID's last two hex digits."""
    request_id = "0a1b2c3d-4e5f-4a7b-8c9d-0e1f2a3b4cff"
    rid = request_id.replace("-", "")
    _, form = _send(dev, {"Idempotency-Key": "k1"}, request_id=request_id, xray=xray)
    assert _attributes(form)["traceparent"] == expected.format(rid=rid, rid16=rid[:16])


@pytest.mark.parametrize(
    ("stage", "last_hex", "flag"),
    [
        ({}, "0c", "01"),  # default 5%: buckets 0..12 of 256
        ({}, "0d", "00"),
        ({"traceSamplePercent": "0"}, "00", "00"),
        ({"traceSamplePercent": "100"}, "ff", "01"),
        ({"traceSamplePercent": "50"}, "7f", "01"),
        ({"traceSamplePercent": "50"}, "80", "00"),
        ({"traceSamplePercent": "lots"}, "0d", "00"),  # not a percent: the default
    ],
)
def test_api_template_post_samples_once_at_the_rate_the_stage_sets(
    dev: SynthResult, stage: dict[str, str], last_hex: str, flag: str
) -> None:
    xray = f"Root=1-5759e988-bd862e3fe1be46a9942727{last_hex};Parent=53995c3f42cd8ad8;Sampled=1"
    _, form = _send(dev, {"Idempotency-Key": "k1"}, xray=xray, stage=stage)
    assert _attributes(form)["traceparent"].endswith(f"{last_hex}-53995c3f42cd8ad8-{flag}")


def test_api_template_post_keeps_the_callers_sampled_out_flag(dev: SynthResult) -> None:
    traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
    _, form = _send(dev, {"Idempotency-Key": "k1", "traceparent": traceparent}, xray=XRAY_TRACE)
    assert _attributes(form)["traceparent"] == traceparent


def test_api_template_post_accepted_answers_202_with_location_and_correlation_id(dev: SynthResult) -> None:
    context, _ = _send(dev, {"Idempotency-Key": "k1", "X-Correlation-Id": "cid-1"})
    sqs = {"SendMessageResponse": {"SendMessageResult": {"MessageId": "m-1"}}}
    body = _render(_templates(dev, "POST")[r"2\d{2}"], context, json.dumps(sqs), {"X-Correlation-Id": "cid-1"})
    assert json.loads(body) == {
        "order_id": "order-123",
        "correlation_id": "cid-1",
        "message_id": "m-1",
        "status_url": "/v1/orders/order-123",
    }
    assert context["responseOverride"] == {
        "header": {"X-Correlation-Id": "cid-1", "Location": "/v1/orders/order-123"},
    }  # no status: the integration response's own 202


@pytest.mark.parametrize(
    ("sqs_message", "status"),
    [("One or more parameters are invalid. Reason: Message must be shorter than 69632 bytes.", 413), ("nope", None)],
)
def test_api_template_post_refused_maps_too_long_to_413(dev: SynthResult, sqs_message: str, status: int | None) -> None:
    context, _ = _send(dev, {"Idempotency-Key": "k1"})
    error = {"Error": {"Code": "InvalidParameterValue", "Message": sqs_message}}
    body = json.loads(_render(_templates(dev, "POST")["400"], context, json.dumps(error), {}))
    assert context["responseOverride"].get("status") == status
    assert body["status"] == (status or 400)
    assert body["correlation_id"] == context["extendedRequestId"]
    assert sqs_message not in json.dumps(body)  # SQS's message is not echoed, only its code
    assert ("InvalidParameterValue" in body["detail"]) is (status is None)


def _item(**extra: Any) -> dict[str, Any]:
    return {
        "order_id": {"S": "order-123"},
        "status": {"S": "COMPLETED"},
        "payment_attempt": {"N": "1"},
        "created_at": {"S": "2026-11-24T00:00:00Z"},
        "updated_at": {"S": "2026-11-24T00:00:05Z"},
        "attempts": {"L": [{"M": {"attempt": {"N": "1"}, "received_at": {"S": "2026-11-24T00:00:00Z"}}}]},
        "history": {
            "L": [
                {"M": {"status": {"S": "RECEIVED"}, "at": {"S": "2026-11-24T00:00:00Z"}, "attempt": {"N": "1"}}},
                {"M": {"status": {"S": "COMPLETED"}, "at": {"S": "2026-11-24T00:00:05Z"}, "attempt": {"N": "1"}}},
            ]
        },
        **extra,
    }


def test_api_template_get_request_reads_only_status_fields(dev: SynthResult) -> None:
    request = json.loads(
        _render(_templates(dev, "GET")["request"], _context(str(uuid.uuid4())), "", {"id": "order-123"})
    )
    assert request["Key"] == {"order_id": {"S": "order-123"}}
    names = request["ExpressionAttributeNames"]
    assert sorted(names[t.strip()] for t in request["ProjectionExpression"].split(",")) == sorted(
        ORDER_STATUS_ATTRIBUTES + ORDER_ACCESS_ATTRIBUTES
    )


@pytest.mark.parametrize("order_id", ["../x", "a" * 49, "", "id with space"])
def test_api_template_get_request_sends_an_empty_key_for_a_bad_id(dev: SynthResult, order_id: str) -> None:
    assert not re.fullmatch(ORDER_ID_PATTERN, order_id)
    context = _context(str(uuid.uuid4()))
    request = json.loads(_render(_templates(dev, "GET")["request"], context, "", {"id": order_id}))
    assert request["Key"] == {"order_id": {"S": ""}}  # DynamoDB refuses it: 400
    body = json.loads(
        _render(_templates(dev, "GET")["400"], context, '{"__type": "ValidationException"}', {"id": order_id})
    )
    assert body["status"] == 400
    assert ORDER_ID_PATTERN in body["detail"]


def test_api_template_get_found_emits_status_attempts_and_timestamps_only(dev: SynthResult) -> None:
    context = _context(str(uuid.uuid4()))
    # Even if the projection were bypassed, the template emits no customer data.
    item = _item(order={"M": {"payment_token": {"S": "tok_secret"}}}, last_error={"M": {}}, owner={"S": CALLER})
    body = _render(_templates(dev, "GET")[r"2\d{2}"], context, json.dumps({"Item": item}), {"id": "order-123"})
    assert "tok_secret" not in body
    order = json.loads(body)
    assert order == {
        "order_id": "order-123",
        "status": "COMPLETED",
        "payment_attempt": 1,
        "created_at": "2026-11-24T00:00:00Z",
        "updated_at": "2026-11-24T00:00:05Z",
        "attempts": [{"attempt": 1, "received_at": "2026-11-24T00:00:00Z"}],
        "history": [
            {"status": "RECEIVED", "at": "2026-11-24T00:00:00Z", "attempt": 1},
            {"status": "COMPLETED", "at": "2026-11-24T00:00:05Z", "attempt": 1},
        ],
    }
    assert set(order).isdisjoint(CUSTOMER_DATA_NAMES)
    assert context["responseOverride"].get("status") is None


def test_api_template_get_answers_404_without_an_item(dev: SynthResult) -> None:
    context = _context(str(uuid.uuid4()))
    body = json.loads(_render(_templates(dev, "GET")[r"2\d{2}"], context, "{}", {"id": "order-404"}))
    assert context["responseOverride"] == {
        "header": {"Content-Type": "application/problem+json"},
        "status": 404,
    }
    assert body["status"] == 404
    assert body["request_id"] == context["requestId"]


def test_api_template_get_throttled_answers_503_with_retry_after(dev: SynthResult) -> None:
    context = _context(str(uuid.uuid4()))
    error = {"__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException"}
    body = json.loads(_render(_templates(dev, "GET")["400"], context, json.dumps(error), {"id": "order-1"}))
    assert context["responseOverride"] == {"header": {"Retry-After": "5"}, "status": 503}
    assert body["status"] == 503


@pytest.mark.parametrize(
    ("headers", "body", "status", "named"),
    [
        ({"Idempotency-Key": 'k"1'}, json.dumps(ORDER), 400, "Idempotency-Key"),
        ({"Idempotency-Key": "k" * 256}, json.dumps(ORDER), 400, "Idempotency-Key"),
        ({"Idempotency-Key": "k1"}, json.dumps({k: v for k, v in ORDER.items() if k != "currency"}), 400, "currency"),
        ({"Idempotency-Key": "k1"}, json.dumps(ORDER) + " " * 65_536, 413, "65536"),
        ({"Idempotency-Key": "k1"}, json.dumps(ORDER, ensure_ascii=False).replace("Ada", "é" * 33_000), 413, "65536"),
    ],
    ids=["key-quote", "key-too-long", "no-currency", "over-64-kib", "over-64-kib-in-utf8-bytes"],
)
def test_api_template_post_refuses_at_the_edge_what_the_model_cannot(
    dev: SynthResult, headers: dict[str, str], body: str, status: int, named: str
) -> None:
    """The request names no SQS action (SQS answers 400 InvalidAction, nothing is enqueued) and the 400
    integration response answers from the request's overrides, in valid JSON."""
    context = _context(str(uuid.uuid4()))
    form = _render(_templates(dev, "POST")["request"], context, body, headers)
    assert form == "Action=RefusedAtTheEdge"
    error = {"Error": {"Code": "InvalidAction", "Message": "The action RefusedAtTheEdge is not valid"}}
    answer = json.loads(_render(_templates(dev, "POST")["400"], context, json.dumps(error), {}))
    assert answer["status"] == status
    assert named in answer["detail"]
    assert context["responseOverride"].get("status") == (413 if status == 413 else None)


def test_api_template_gateway_responses_stay_json_whatever_the_messages_hold(dev: SynthResult) -> None:
    hostile = 'x"],"forged":["\\'
    context = {
        "requestId": "r-1",
        "error": {
            "message": hostile,
            "messageString": json.dumps(hostile),
            "responseType": "BAD_REQUEST_BODY",
            "validationErrorString": '[object has missing required properties (["currency"])]',
        },
    }
    for response in dev.of_type("AWS::ApiGateway::GatewayResponse").values():
        for template in response["Properties"]["ResponseTemplates"].values():
            body = json.loads(substitute(template, context, {}))
            assert body["request_id"] == "r-1"
