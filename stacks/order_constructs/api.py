"""The order API: a regional REST API in front of the orders queue and the orders table (issue 22).

``POST /orders`` sends the order to the orders queue with an ``AWS`` integration (SQS
``SendMessage``, no Lambda on the write path) after API Gateway has validated the body against
``ORDER_SCHEMA`` (as a draft-04 model) and required ``Idempotency-Key``; ``GET /orders/{id}`` reads
the order's status, attempts and timestamps with DynamoDB ``GetItem`` (a projection: customer data
never leaves the table). Both methods take IAM (SigV4) authorization. Decision 0018 has the design,
its sources and what is not confirmed against AWS.

The mapping templates are the ``api_templates/*.vtl`` files (``@NAME@`` markers are filled in at
synth). They use, besides ``$input``/``$util``/``$context``, the Java string methods ``matches``
(full match, Java regex), ``split`` and array indexing (``$parts[0]``), and hyphenated references
(``$context.responseOverride.header.X-Correlation-Id``, as AWS's Velocity parses them): a local data
plane has to offer the same (:data:`VTL_STRING_METHODS`).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aws_cdk import Aws, Duration, RemovalPolicy, Token
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from constructs_lib.alarms import first_occurrence_alarm
from constructs_lib.dashboard import DashboardGraph
from constructs_lib.logical_ids import TransparentScope
from constructs_lib.monitoring import Monitoring
from lambda_resilience.correlation import MAX_CORRELATION_ID_LENGTH
from ops.capacity import api_throttle_for
from order_domain.model import MAX_BODY_BYTES, ORDER_ID_PATTERN, ORDER_SCHEMA
from stacks.order_constructs.grants import grant_items, grant_queue

TEMPLATES_DIR = Path(__file__).resolve().parent / "api_templates"
#: The Java string methods (and Velocity features) the templates call, for a local data plane.
VTL_STRING_METHODS = ("matches", "split")

#: JSON Schema draft 4, the only draft API Gateway models support
#: (https://docs.aws.amazon.com/apigateway/latest/developerguide/models-mappings-models.html).
DRAFT_04 = "http://json-schema.org/draft-04/schema#"
#: Every keyword draft 4 defines (https://json-schema.org/draft-04/json-schema-validation and the
#: core spec); ``ORDER_SCHEMA`` may use no other (``const``, ``contains``, ``if`` ... are draft 6+).
DRAFT_04_KEYWORDS = frozenset(
    {
        "$schema", "id", "$ref", "title", "description", "default", "format",
        "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
        "maxLength", "minLength", "pattern",
        "additionalItems", "items", "maxItems", "minItems", "uniqueItems",
        "maxProperties", "minProperties", "required", "additionalProperties", "definitions",
        "properties", "patternProperties", "dependencies",
        "enum", "type", "allOf", "anyOf", "oneOf", "not",
    }
)  # fmt: skip
#: Keywords whose value is one subschema, a list of them, or a map of them.
_SUBSCHEMA = frozenset({"additionalItems", "additionalProperties", "not", "items"})
_SUBSCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "items"})
_SUBSCHEMA_MAPS = frozenset({"properties", "patternProperties", "definitions", "dependencies"})

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

#: API Gateway's account-level defaults per Region: 10,000 requests/s, burst 5,000; a stage or
#: method limit above them has no effect ("Throttle requests to your REST APIs",
#: https://docs.aws.amazon.com/apigateway/latest/developerguide/api-gateway-request-throttling.html).
ACCOUNT_RATE_LIMIT = 10_000
ACCOUNT_BURST_LIMIT = 5_000

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


def draft04_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` with ``$schema`` set to draft 4; ``ValueError`` naming any keyword draft 4 lacks."""
    unknown = sorted(_keywords_outside_draft04(schema, "#"))
    if unknown:
        raise ValueError(f"ORDER_SCHEMA uses keywords JSON Schema draft 4 lacks: {', '.join(unknown)}")
    model = copy.deepcopy(dict(schema))
    model["$schema"] = DRAFT_04
    return model


def _keywords_outside_draft04(schema: Any, where: str) -> set[str]:
    if not isinstance(schema, Mapping):
        return set()
    found = {f"{key} (at {where})" for key in schema if key not in DRAFT_04_KEYWORDS}
    for key in ("exclusiveMaximum", "exclusiveMinimum"):
        if key in schema and not isinstance(schema[key], bool):  # draft 6+: a number; draft 4: a flag
            found.add(f"{key} as a number (at {where})")
    for key, value in schema.items():
        if key in _SUBSCHEMA and isinstance(value, Mapping):
            found |= _keywords_outside_draft04(value, f"{where}/{key}")
        if key in _SUBSCHEMA_LISTS and isinstance(value, list):
            for i, item in enumerate(value):
                found |= _keywords_outside_draft04(item, f"{where}/{key}/{i}")
        if key in _SUBSCHEMA_MAPS and isinstance(value, Mapping):
            for name, item in value.items():
                found |= _keywords_outside_draft04(item, f"{where}/{key}/{name}")
    return found


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


def _correlation_snippets() -> dict[str, str]:
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


def edge_model_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The body model: ``schema`` as draft 4 without its top-level ``required``, which the request
    template checks instead so that the 400 names the missing property in valid JSON (a gateway
    response cannot escape ``$context.error.validationErrorString``, decision 0018)."""
    model = draft04_schema(schema)
    model.pop("required", None)
    return model


@dataclass(frozen=True)
class OrderApiThrottle:
    """Steady rate (requests/s) and burst (token bucket size) of the stage, ``POST /orders`` and the
    usage plan; checked against API Gateway's account-level defaults."""

    rate_limit: float
    burst_limit: int

    def __post_init__(self) -> None:
        if not 0 < self.rate_limit <= ACCOUNT_RATE_LIMIT:
            raise ValueError(f"rate_limit must be in (0, {ACCOUNT_RATE_LIMIT}], got {self.rate_limit}")
        if not 1 <= self.burst_limit <= ACCOUNT_BURST_LIMIT:
            raise ValueError(f"burst_limit must be in [1, {ACCOUNT_BURST_LIMIT}], got {self.burst_limit}")

    @classmethod
    def from_capacity(cls, figures: Mapping[str, Any], *, region: str) -> OrderApiThrottle:
        """Sized by ``ops capacity``'s model (:func:`ops.capacity.api_throttle`: the rate the pipeline
        sustains, and what it absorbs at once) from intake's ``figures`` plus ``workflow``, with the
        quotas of ``region``'s class; the large regions' when the region is unknown at synth, as
        ``ops capacity`` assumes by default."""
        rate, burst = api_throttle_for(figures, None if Token.is_unresolved(region) else region)
        return cls(rate_limit=rate, burst_limit=burst)


@dataclass(frozen=True)
class OrderApiProps:
    """Props for :class:`OrderApi`.

    Attributes:
        orders_queue: the queue ``POST /orders`` sends to (SQS-managed encryption: no key grant).
        orders_table: the table ``GET /orders/{id}`` reads (its customer-managed key, if any, is
            granted for reading).
        throttle: stage, ``POST /orders`` and usage-plan limits (the stack sizes them from
            ``ops capacity``'s model).
        monitoring: the stack's monitoring facade (the 5XX alarm and the API graph).
        alarm_topic: where the 5XX alarm notifies.
        max_message_bytes: the orders queue's MaximumMessageSize, named in the 413 answer.
        removal_policy, log_retention, log_encryption_key: of the access-log and execution-log groups.
        owns_account_log_role: create the account's API Gateway CloudWatch role and
            ``AWS::ApiGateway::Account`` (one per account and Region: exactly one stack, or nothing,
            owns it; the stack's ``api_account_log_role`` context key); default False.
        stage_name: the deployment stage (the URL's first path segment); default ``v1``.
        order_schema: the body model's schema (draft 7 as intake uses it; converted to draft 4);
            default ``ORDER_SCHEMA``.
    """

    orders_queue: sqs.IQueue
    orders_table: dynamodb.ITable
    throttle: OrderApiThrottle
    monitoring: Monitoring
    alarm_topic: sns.ITopic
    max_message_bytes: int
    removal_policy: RemovalPolicy = RemovalPolicy.DESTROY
    log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH
    log_encryption_key: kms.IKey | None = None
    stage_name: str = "v1"
    owns_account_log_role: bool = False
    order_schema: Mapping[str, Any] = field(default_factory=lambda: ORDER_SCHEMA)

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_]{1,128}", self.stage_name):
            raise ValueError(f"stage_name must be 1-128 letters, digits or _, got {self.stage_name!r}")
        if self.max_message_bytes < 1024:
            raise ValueError(f"max_message_bytes must be at least SQS's 1,024, got {self.max_message_bytes}")
        draft04_schema(self.order_schema)  # refused at synth if it uses a keyword draft 4 lacks


class OrderApi(TransparentScope):
    """The REST API (regional, IAM auth), its access-log group, execution roles, model, validator,
    gateway responses, usage plan and 5XX alarm.

    Attributes:
        api: the ``RestApi`` (``api.url``: the stage's invoke URL; ``api.deployment_stage``).
        access_logs: the access-log group.
        order_model: the ``AWS::ApiGateway::Model`` of the order body (draft 4).
        validator: the request validator (body and parameters).
        send_role: the role ``POST /orders`` assumes (``sqs:SendMessage`` on the orders queue only).
        read_role: the role ``GET /orders/{id}`` assumes (``dynamodb:GetItem`` on the orders table only).
        post_orders, get_order: the two methods.
        execution_logs: the stage's execution-log group (``API-Gateway-Execution-Logs_<api>/<stage>``),
            created here so that it has a retention and a key (API Gateway would create it without).
        errors_alarm: 5XX responses > 0 (the queue or the table failing behind the API).
    """

    def __init__(self, scope: Construct, construct_id: str, *, props: OrderApiProps) -> None:
        super().__init__(scope, construct_id)
        self.access_logs = logs.LogGroup(
            self,
            "ApiAccessLogs",
            retention=props.log_retention,
            removal_policy=props.removal_policy,
            encryption_key=props.log_encryption_key,
        )
        self.api = self._rest_api(props)
        self._tls_policy()
        # RestApi adds an "Endpoint" output with a hashed name; the stack outputs OrderApiUrl instead.
        self.api.node.try_remove_child("Endpoint")
        self.validator = self.api.add_request_validator(
            "Validator", validate_request_body=True, validate_request_parameters=True
        )
        self.order_model = apigw.CfnModel(
            self,
            "ApiOrderModel",
            rest_api_id=self.api.rest_api_id,
            content_type="application/json",
            name="Order",
            description="The order message (lambdas/order_domain/model.py ORDER_SCHEMA, as draft 4)",
            schema=edge_model_schema(props.order_schema),
        )
        # A deployment snapshots the models: a changed schema needs a new one (CDK's Model L2 does this).
        self._redeploy_on({"order_model": self.order_model.schema})
        self.send_role = iam.Role(self, "ApiSendRole", assumed_by=iam.ServicePrincipal("apigateway.amazonaws.com"))
        grant_queue(props.orders_queue, self.send_role, "sqs:SendMessage")
        self.read_role = iam.Role(self, "ApiReadRole", assumed_by=iam.ServicePrincipal("apigateway.amazonaws.com"))
        grant_items(props.orders_table, self.read_role, "dynamodb:GetItem")  # + kms:Decrypt/DescribeKey with a CMK
        orders = self.api.root.add_resource("orders")
        self.post_orders = self._post_orders(orders, props)
        self.get_order = self._get_order(orders.add_resource("{id}"), props)
        self._gateway_responses()
        # No usage plan: without API keys issued to callers it throttles nobody (the stage and method
        # limits do); per-client limits come with keys (decision 0018, "Trust model").
        self.execution_logs = logs.LogGroup(
            self,
            "ApiExecutionLogs",
            log_group_name=f"API-Gateway-Execution-Logs_{self.api.rest_api_id}/{props.stage_name}",
            retention=props.log_retention,
            removal_policy=props.removal_policy,
            encryption_key=props.log_encryption_key,
        )
        # Created before the stage logs into it (API Gateway would create it first, and the stack then fail).
        self.api.deployment_stage.node.add_dependency(self.execution_logs)
        self.errors_alarm = self._monitor(props)

    def _tls_policy(self) -> None:
        """TLS 1.2 at least on the execute-api endpoint (its default is TLS 1.0): ``SecurityPolicy`` on
        the REST API itself (``AWS::ApiGateway::RestApi``; the L2 has no property for it yet)."""
        cfn_api = self.api.node.default_child
        assert isinstance(cfn_api, apigw.CfnRestApi)
        cfn_api.security_policy = apigw.SecurityPolicy.TLS_1_2.value

    def _redeploy_on(self, data: Any) -> None:
        """Make the stage's deployment change with ``data`` (what CDK does not track by itself)."""
        if self.api.latest_deployment is not None:
            self.api.latest_deployment.add_to_logical_id(data)

    def _rest_api(self, props: OrderApiProps) -> apigw.RestApi:
        throttle = props.throttle
        return apigw.RestApi(
            self,
            "OrderApi",
            description="Orders front door: POST /orders -> orders queue, GET /orders/{id} -> orders table",
            endpoint_configuration=apigw.EndpointConfiguration(types=[apigw.EndpointType.REGIONAL]),
            default_method_options=apigw.MethodOptions(authorization_type=apigw.AuthorizationType.IAM),
            # execute-api endpoints answer HTTPS only; the policy says so for any future front (a custom
            # domain takes a TLS 1.2 minimum: decision 0018).
            policy=iam.PolicyDocument(
                statements=[
                    iam.PolicyStatement(
                        effect=iam.Effect.DENY,
                        principals=[iam.AnyPrincipal()],
                        actions=["execute-api:Invoke"],
                        resources=["execute-api:/*"],
                        conditions={"Bool": {"aws:SecureTransport": "false"}},
                    )
                ]
            ),
            # The account's API Gateway CloudWatch role (execution logging needs it) is one setting per
            # account and Region: only the stack that opts in owns it (decision 0018, aws-cdk#10878, #22954).
            cloud_watch_role=props.owns_account_log_role,
            cloud_watch_role_removal_policy=RemovalPolicy.RETAIN if props.owns_account_log_role else None,
            deploy_options=apigw.StageOptions(
                stage_name=props.stage_name,
                access_log_destination=apigw.LogGroupLogDestination(self.access_logs),
                access_log_format=apigw.AccessLogFormat.custom(json.dumps(ACCESS_LOG_FIELDS, separators=(",", ":"))),
                # Errors only, and never data trace: data trace logs request and response bodies,
                # i.e. payment tokens, names and addresses.
                logging_level=apigw.MethodLoggingLevel.ERROR,
                data_trace_enabled=False,
                metrics_enabled=True,
                tracing_enabled=True,  # X-Ray segments of the edge; the W3C traceparent is the template's
                throttling_rate_limit=throttle.rate_limit,
                throttling_burst_limit=throttle.burst_limit,
                method_options={
                    "/orders/POST": apigw.MethodDeploymentOptions(
                        throttling_rate_limit=throttle.rate_limit, throttling_burst_limit=throttle.burst_limit
                    )
                },
            ),
        )

    def _post_orders(self, orders: apigw.IResource, props: OrderApiProps) -> apigw.Method:
        snippets = _correlation_snippets()

        def response(status: str, pattern: str | None, template: str, **headers: str) -> apigw.IntegrationResponse:
            return apigw.IntegrationResponse(
                status_code=status,
                selection_pattern=pattern,
                response_parameters={f"method.response.header.{k}": v for k, v in headers.items()},
                response_templates={"application/json": load_template(template, **snippets, **_post_values(props))},
            )

        problem = f"'{PROBLEM_JSON}'"
        integration = apigw.AwsIntegration(
            service="sqs",
            path=f"{Aws.ACCOUNT_ID}/{props.orders_queue.queue_name}",
            integration_http_method="POST",
            options=apigw.IntegrationOptions(
                credentials_role=self.send_role,
                passthrough_behavior=apigw.PassthroughBehavior.NEVER,
                request_parameters={
                    "integration.request.header.Content-Type": "'application/x-www-form-urlencoded'",
                    "integration.request.header.Accept": "'application/json'",
                },
                request_templates=dict.fromkeys(
                    JSON_CONTENT_TYPES, load_template("post_request", **snippets, **_post_values(props))
                ),
                integration_responses=[
                    response("202", r"2\d{2}", "post_accepted", **{"Content-Type": "'application/json'"}),
                    response("400", "400", "post_refused", **{"Content-Type": problem}),
                    response(
                        "503",
                        r"5\d{2}",
                        "post_unavailable",
                        **{"Content-Type": problem, "Retry-After": f"'{RETRY_AFTER_UNAVAILABLE_SECONDS}'"},
                    ),
                    response("500", None, "post_failed", **{"Content-Type": problem}),
                ],
            ),
        )
        return orders.add_method(
            "POST",
            integration,
            request_parameters={
                "method.request.header.Idempotency-Key": True,
                "method.request.header.X-Correlation-Id": False,
                "method.request.header.traceparent": False,
            },
            request_models=dict.fromkeys(
                JSON_CONTENT_TYPES, apigw.Model.from_model_name(self, "ApiOrderModelRef", self.order_model.ref)
            ),
            request_validator=self.validator,
            method_responses=_method_responses(
                {"202": ("X-Correlation-Id", "Location"), "400": ("X-Correlation-Id",), "413": ("X-Correlation-Id",)},
                {"500": ("X-Correlation-Id",), "503": ("X-Correlation-Id", "Retry-After")},
            ),
        )

    def _get_order(self, order: apigw.IResource, props: OrderApiProps) -> apigw.Method:
        names = {f"#{i}": name for i, name in enumerate(ORDER_STATUS_ATTRIBUTES + ORDER_ACCESS_ATTRIBUTES)}
        request = load_template(
            "get_request",
            ORDER_ID_PATTERN=ORDER_ID_PATTERN,
            TABLE_NAME=props.orders_table.table_name,
            PROJECTION=", ".join(names),
            NAMES=json.dumps(names),
        )
        refused = load_template(
            "get_refused",
            ORDER_ID_PATTERN=ORDER_ID_PATTERN,
            THROTTLED_PATTERN=THROTTLED_PATTERN,
            RETRY_AFTER=str(RETRY_AFTER_UNAVAILABLE_SECONDS),
        )
        integration = apigw.AwsIntegration(
            service="dynamodb",
            action="GetItem",
            options=apigw.IntegrationOptions(
                credentials_role=self.read_role,
                passthrough_behavior=apigw.PassthroughBehavior.NEVER,
                request_templates={"application/json": request},
                integration_responses=[
                    apigw.IntegrationResponse(
                        status_code="200",
                        selection_pattern=r"2\d{2}",
                        response_parameters={"method.response.header.Content-Type": "'application/json'"},
                        response_templates={
                            "application/json": load_template("get_found", CALLER=load_template("caller"))
                        },
                    ),
                    apigw.IntegrationResponse(
                        status_code="400",
                        selection_pattern="400",
                        response_parameters={"method.response.header.Content-Type": f"'{PROBLEM_JSON}'"},
                        response_templates={"application/json": refused},
                    ),
                    apigw.IntegrationResponse(
                        status_code="500",
                        response_parameters={"method.response.header.Content-Type": f"'{PROBLEM_JSON}'"},
                        response_templates={"application/json": _static_problem(500, "the order could not be read")},
                    ),
                ],
            ),
        )
        return order.add_method(
            "GET",
            integration,
            request_parameters={"method.request.path.id": True},
            request_validator=self.validator,
            method_responses=_method_responses(
                {"200": (), "400": (), "403": (), "404": (), "409": ()}, {"500": (), "503": ("Retry-After",)}
            ),
        )

    def _gateway_responses(self) -> None:
        """API Gateway's own refusals as problem+json, each with the request ID (and the rule broken).

        Gateway response templates substitute variables, they are not VTL; ``messageString`` is the
        message already quoted as a JSON string. ``validationErrorString`` is not used: AWS does not
        escape it and it holds double quotes (``(["currency"])``), so no JSON can carry it; the
        missing-property case is named by the request template instead (:func:`edge_model_schema`)."""
        problem = {"Content-Type": f"'{PROBLEM_JSON}'"}
        throttled = {**problem, "Retry-After": f"'{RETRY_AFTER_THROTTLED_SECONDS}'"}
        message = "$context.error.messageString"
        body = '"the body does not match the order schema (docs/contract.md)"'
        parameters = '"a required header is missing: Idempotency-Key"'
        responses = {
            "BadRequestBody": (apigw.ResponseType.BAD_REQUEST_BODY, "400", body, problem),
            "BadRequestParameters": (apigw.ResponseType.BAD_REQUEST_PARAMETERS, "400", parameters, problem),
            "RequestTooLarge": (apigw.ResponseType.REQUEST_TOO_LARGE, "413", message, problem),
            "Throttled": (apigw.ResponseType.THROTTLED, "429", message, throttled),
            "QuotaExceeded": (apigw.ResponseType.QUOTA_EXCEEDED, "429", message, throttled),
            "Default4xx": (apigw.ResponseType.DEFAULT_4_XX, None, message, problem),
            "Default5xx": (apigw.ResponseType.DEFAULT_5_XX, None, message, problem),
        }
        for name, (response_type, status, detail, headers) in responses.items():
            template = gateway_problem(detail, status)
            self.api.add_gateway_response(
                f"Gateway{name}",
                type=response_type,
                status_code=status,
                response_headers=headers,
                templates={"application/json": template},
            )
            self._redeploy_on({f"gateway_{name}": [status, headers, template]})

    def _monitor(self, props: OrderApiProps) -> cloudwatch.Alarm:
        def metric(name: str, statistic: str = "Sum") -> cloudwatch.Metric:
            return self.api.deployment_stage.metric(name, statistic=statistic, period=Duration.minutes(1))

        alarm = first_occurrence_alarm(
            self,
            "ApiServerErrorsAlarm",
            self.api.deployment_stage.metric_server_error(period=Duration.minutes(1), statistic="Sum"),
            "the order API answered 5XX: the orders queue or table failed behind it, or its configuration",
            props.alarm_topic,
        )
        props.monitoring.add_alarms([alarm])
        props.monitoring.add_graph(
            DashboardGraph(
                title="Order API (requests, 4XX, 5XX per minute)",
                metrics=(metric("Count"), metric("4XXError"), metric("5XXError")),
            )
        )
        return alarm


def _post_values(props: OrderApiProps) -> dict[str, str]:
    return {
        "HEADER_TP": header_lookup("tp", "traceparent"),
        "HEADER_KEY": header_lookup("key", "Idempotency-Key"),
        "KEY_PATTERN": IDEMPOTENCY_KEY_PATTERN,
        "KEY_CHARS": IDEMPOTENCY_KEY_CHARS,
        "MAX_KEY": str(MAX_IDEMPOTENCY_KEY_LENGTH),
        "MAX_BODY_BYTES": str(MAX_BODY_BYTES),
        "REQUIRED": ", ".join(f"'{name}'" for name in props.order_schema.get("required", [])),
        "REFUSED_ACTION": REFUSED_ACTION,
        "TRACEPARENT_PATTERN": TRACEPARENT_PATTERN,
        "TRACE_SAMPLE_PERCENT": str(TRACE_SAMPLE_PERCENT),
        "TOO_LONG_PATTERN": TOO_LONG_PATTERN,
        "MAX_MESSAGE_BYTES": str(props.max_message_bytes),
    }


def gateway_problem(detail: str, status: str | None) -> str:
    """A problem+json body (RFC 9457) for a gateway response; ``detail`` is a JSON value."""
    status_member = f'"status":{status},' if status else ""
    return (
        '{"type":"about:blank","title":"$context.error.responseType",'
        f'{status_member}"detail":{detail},"request_id":"$context.requestId"}}'
    )


def _static_problem(status: int, detail: str) -> str:
    return json.dumps({"type": "about:blank", "status": status, "detail": detail, "request_id": "$context.requestId"})


def _method_responses(*groups: Mapping[str, tuple[str, ...]]) -> list[apigw.MethodResponse]:
    """Method responses declaring ``Content-Type`` and the named headers for each status code."""
    return [
        apigw.MethodResponse(
            status_code=status,
            response_parameters={f"method.response.header.{h}": False for h in ("Content-Type", *headers)},
        )
        for group in groups
        for status, headers in group.items()
    ]
