"""The order API's mapping templates and edge rules: the ``api_templates/*.vtl`` files with their
``@NAME@`` markers filled, the patterns the edge checks, the access-log format and the problem+json
bodies of its answers.

The templates use, besides ``$input``/``$util``/``$context``, the Java string methods ``matches``
(full match, Java regex), ``split`` and array indexing (``$parts[0]``), and hyphenated references
(``$context.responseOverride.header.X-Correlation-Id``, as AWS's Velocity parses them): a local data
plane has to offer the same (:data:`VTL_STRING_METHODS`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from aws_cdk import Duration
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudwatch as cloudwatch

from lambda_resilience.correlation import MAX_CORRELATION_ID_LENGTH
from order_domain.model import MAX_BODY_BYTES

TEMPLATES_DIR = Path(__file__).resolve().parent / "api_templates"
#: The Java string methods (and Velocity features) the templates call, for a local data plane.
VTL_STRING_METHODS = ("matches", "split")

#: The characters the edge lets through in a correlation ID and an idempotency key: nothing that can
#: end a JSON string (``"``, ``\\``), separate fields (``,``) or break a log line; ``+/=`` for
#: ``$context.extendedRequestId`` (the minted correlation ID), ``:`` in keys only (``<order>:<attempt>``).
CORRELATION_ID_CHARS = "A-Za-z0-9._~+/=-"
IDEMPOTENCY_KEY_CHARS = "A-Za-z0-9._~+/=:-"
#: The draft's keys are UUIDs in practice; 255 leaves room for any client's scheme.
MAX_IDEMPOTENCY_KEY_LENGTH = 255
#: The correlation IDs the edge carries verbatim (any other gets ``$context.extendedRequestId``).
#: Every one of them passes intake's rule (``lambda_resilience.correlation.is_acceptable``).
CORRELATION_ID_PATTERN = f"^[{CORRELATION_ID_CHARS}]{{1,{MAX_CORRELATION_ID_LENGTH}}}$"
#: The Idempotency-Key the edge accepts (bare, or as a Structured Field string in double quotes,
#: draft-ietf-httpapi-idempotency-key-header); any other is refused with 400.
IDEMPOTENCY_KEY_PATTERN = f"^[{IDEMPOTENCY_KEY_CHARS}]{{1,{MAX_IDEMPOTENCY_KEY_LENGTH}}}$"
#: The SQS action a refused request names: SQS has no such action and answers 400 ``InvalidAction``
#: without enqueuing anything; the 400 integration response then answers from the request's overrides.
REFUSED_ACTION = "RefusedAtTheEdge"
#: The content types POST /orders takes, each with the same model and template: AWS documents no
#: media-type parameter matching for ``RequestTemplates`` / ``RequestModels`` keys, so the spellings
#: common clients send (``; charset=utf-8``, with and without the space, either case) are listed.
JSON_CONTENT_TYPES = (
    "application/json",
    "application/json; charset=utf-8",
    "application/json; charset=UTF-8",
    "application/json;charset=utf-8",
    "application/json;charset=UTF-8",
)
#: W3C Trace Context version 00, trace and parent IDs not all zero (https://www.w3.org/TR/trace-context/).
TRACEPARENT_PATTERN = "^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$"
#: Share of orders (percent) whose trace is sampled when the stage sets no ``traceSamplePercent`` stage
#: variable: decided once by the request template, from the trace ID (decisions 0019, 0022).
TRACE_SAMPLE_PERCENT = 5
#: SQS refuses a message over the queue's MaximumMessageSize with 400 InvalidParameterValue,
#: "... Message must be shorter than N bytes." (decision 0018, "SQS's own limits").
TOO_LONG_PATTERN = "(?s).*(shorter than|too long).*"
#: DynamoDB throttling answers HTTP 400 with these error types
#: (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Programming.Errors.html).
THROTTLED_PATTERN = "(?s).*(ThrottlingException|ProvisionedThroughputExceededException|RequestLimitExceeded).*"
#: Seconds a caller waits before retrying a 429 (the token bucket refills every second) or a 503.
RETRY_AFTER_THROTTLED_SECONDS = 1
RETRY_AFTER_UNAVAILABLE_SECONDS = 5

#: What ``GET /orders/{id}`` reads (the orders item, lambdas/order_domain/orders.py): status,
#: attempts and timestamps. Never ``order`` (the message: token, name, address) nor ``last_error``.
ORDER_STATUS_ATTRIBUTES = ("order_id", "status", "payment_attempt", "created_at", "updated_at", "attempts", "history")
#: Also read, to decide who sees the order (decision 0018, "Trust model"): the caller that placed it,
#: the callers whose messages for its ID were refused, and the last refusal (shown to its own caller).
ORDER_ACCESS_ATTRIBUTES = ("owner", "refused_callers", "last_refusal")

PROBLEM_JSON = "application/problem+json"
#: The access log: one JSON line per request, never the body (no ``$input``, no request or response
#: body variable). Correlation ID, idempotency key and order ID are the request template's path
#: overrides. ``$context.error.validationErrorString`` is left out: a schema validator's message may
#: quote the offending value (a name, an address line); the caller gets it in the 400 body instead.
ACCESS_LOG_FIELDS = {
    "requestId": "$context.requestId",
    "extendedRequestId": "$context.extendedRequestId",
    "requestTime": "$context.requestTime",
    "httpMethod": "$context.httpMethod",
    "resourcePath": "$context.resourcePath",
    "status": "$context.status",
    "protocol": "$context.protocol",
    "responseLength": "$context.responseLength",
    "responseLatency": "$context.responseLatency",
    "integrationStatus": "$context.integrationStatus",
    "integrationLatency": "$context.integrationLatency",
    "errorType": "$context.error.responseType",
    "errorMessage": "$context.error.message",
    "correlationId": "$context.requestOverride.path.correlation_id",
    "idempotencyKey": "$context.requestOverride.path.idempotency_key",
    "orderId": "$context.requestOverride.path.order_id",
    "caller": "$context.identity.userArn",
}


def load_template(name: str, **values: str) -> str:
    """``api_templates/<name>.vtl`` with its ``@NAME@`` markers filled; ``ValueError`` if one is left.

    A snippet marker (``@CORRELATION@``) stands alone on its line: the snippet ends in a ``##``
    comment, which would swallow anything after it on the same line."""
    # No trailing newline: in the SQS form it would end the last attribute's value.
    text = (TEMPLATES_DIR / f"{name}.vtl").read_text().rstrip("\n")
    for marker, value in values.items():
        text = text.replace(f"@{marker}@", value)
    left = sorted(set(re.findall(r"@[A-Z_]+@", text)))
    if left:
        raise ValueError(f"template {name}: markers left unfilled: {', '.join(left)}")
    return text


def header_lookup(variable: str, name: str) -> str:
    """VTL setting ``$<variable>`` to the request header ``name`` (any case), else ``""``.

    Not ``$input.params('name')``: it looks in the path, then the query string, then the headers, so
    ``?name=`` would override the header the validator checked."""
    return (
        f'#set(${variable} = "")'
        f"#foreach($h in $input.params().header.keySet())"
        f"#if($h.equalsIgnoreCase('{name}'))#set(${variable} = $input.params().header.get($h))#end#end##"
    )


def correlation_snippets() -> dict[str, str]:
    """The correlation-ID snippets the POST templates embed (``@CORRELATION@`` and the like)."""
    correlation = load_template(
        "correlation",
        MAX_CID=str(MAX_CORRELATION_ID_LENGTH),
        CID_PATTERN=CORRELATION_ID_PATTERN,
        CID_CHARS=CORRELATION_ID_CHARS,
        HEADER_CID=header_lookup("cid", "X-Correlation-Id"),
    )
    return {
        "CORRELATION": correlation,
        "RESPONSE_CORRELATION": load_template("response_correlation", CORRELATION=correlation),
        "CALLER": load_template("caller"),
    }


def post_values(required: Sequence[str], max_message_bytes: int) -> dict[str, str]:
    """The values the POST templates' markers take (``required``: the order schema's required properties)."""
    return {
        "HEADER_TP": header_lookup("tp", "traceparent"),
        "HEADER_KEY": header_lookup("key", "Idempotency-Key"),
        "KEY_PATTERN": IDEMPOTENCY_KEY_PATTERN,
        "KEY_CHARS": IDEMPOTENCY_KEY_CHARS,
        "MAX_KEY": str(MAX_IDEMPOTENCY_KEY_LENGTH),
        "MAX_BODY_BYTES": str(MAX_BODY_BYTES),
        "REQUIRED": ", ".join(f"'{name}'" for name in required),
        "REFUSED_ACTION": REFUSED_ACTION,
        "TRACEPARENT_PATTERN": TRACEPARENT_PATTERN,
        "TRACE_SAMPLE_PERCENT": str(TRACE_SAMPLE_PERCENT),
        "TOO_LONG_PATTERN": TOO_LONG_PATTERN,
        "MAX_MESSAGE_BYTES": str(max_message_bytes),
    }


def gateway_problem(detail: str, status: str | None) -> str:
    """A problem+json body (RFC 9457) for a gateway response; ``detail`` is a JSON value."""
    status_member = f'"status":{status},' if status else ""
    return (
        '{"type":"about:blank","title":"$context.error.responseType",'
        f'{status_member}"detail":{detail},"request_id":"$context.requestId"}}'
    )


def static_problem(status: int, detail: str) -> str:
    """A fixed problem+json body (RFC 9457) for an integration response."""
    return json.dumps({"type": "about:blank", "status": status, "detail": detail, "request_id": "$context.requestId"})


def method_responses(*groups: Mapping[str, tuple[str, ...]]) -> list[apigw.MethodResponse]:
    """Method responses declaring ``Content-Type`` and the named headers for each status code."""
    return [
        apigw.MethodResponse(
            status_code=status,
            response_parameters={f"method.response.header.{h}": False for h in ("Content-Type", *headers)},
        )
        for group in groups
        for status, headers in group.items()
    ]


def route_server_errors(api: apigw.RestApi, path: str, method: str, period: Duration) -> cloudwatch.Metric:
    """One method's ``5XXError`` (Sum): API Gateway's per-method dimensions, sent with the stage's detailed
    metrics (``MetricsEnabled``;
    https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-metrics-and-dimensions.html)."""
    return cloudwatch.Metric(
        namespace="AWS/ApiGateway",
        metric_name="5XXError",
        dimensions_map={
            "ApiName": api.rest_api_name,
            "Method": method,
            "Resource": path,
            "Stage": api.deployment_stage.stage_name,
        },
        statistic="Sum",
        period=period,
    )


def server_errors_less(
    api: apigw.RestApi, routes: Sequence[tuple[str, str]], period: Duration
) -> cloudwatch.MathExpression:
    """The stage's ``5XXError`` less that of ``routes`` (``(path, method)``, each alarmed on its own)."""
    apart = {f"r{i}": route_server_errors(api, path, method, period) for i, (path, method) in enumerate(routes)}
    return cloudwatch.MathExpression(
        expression=" - ".join(["stage", *(f"FILL({name}, 0)" for name in apart)]),
        using_metrics={"stage": api.deployment_stage.metric_server_error(period=period, statistic="Sum"), **apart},
        period=period,
        label="5XX of the order methods",
    )
