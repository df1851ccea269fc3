"""The order API: a regional REST API in front of the orders queue and the orders table (issue 22).

``POST /orders`` sends the order to the orders queue with an ``AWS`` integration (SQS
``SendMessage``, no Lambda on the write path) after API Gateway has validated the body against
``ORDER_SCHEMA`` (as a draft-04 model) and required ``Idempotency-Key``; ``GET /orders/{id}`` reads
the order's status, attempts and timestamps with DynamoDB ``GetItem`` (a projection: customer data
never leaves the table). Both methods take IAM (SigV4) authorization. Decision 0018 has the design,
its sources and what is not confirmed against AWS.

The construct is here; the body model (draft 4) is :mod:`.api_model`, the mapping templates and
edge rules :mod:`.api_mapping`, the throttle :mod:`.throttle`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aws_cdk import Aws, Duration, RemovalPolicy
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
from order_domain.model import ORDER_ID_PATTERN, ORDER_SCHEMA
from stacks.order_constructs.api_mapping import (
    ACCESS_LOG_FIELDS,
    JSON_CONTENT_TYPES,
    ORDER_ACCESS_ATTRIBUTES,
    ORDER_STATUS_ATTRIBUTES,
    PROBLEM_JSON,
    RETRY_AFTER_THROTTLED_SECONDS,
    RETRY_AFTER_UNAVAILABLE_SECONDS,
    THROTTLED_PATTERN,
    correlation_snippets,
    gateway_problem,
    load_template,
    method_responses,
    post_values,
    server_errors_less,
    static_problem,
)
from stacks.order_constructs.api_model import draft04_schema, edge_model_schema
from stacks.order_constructs.grants import grant_items, grant_queue
from stacks.order_constructs.throttle import OrderApiThrottle


@dataclass(frozen=True)
class OrderApiProps:
    """Props for :class:`OrderApi`.

    Attributes:
        orders_queue: the queue ``POST /orders`` sends to (SQS-managed encryption: no key grant).
        orders_table: the table ``GET /orders/{id}`` reads (its customer-managed key, if any, is
            granted for reading).
        throttle: stage, ``POST /orders`` and usage-plan limits (the stack sizes them with
            :mod:`stacks.order_constructs.throttle`).
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
        route_throttles: stage method settings of other routes (``"/webhooks/provider/POST"``).
        routes_alarmed_apart: ``(path, method)`` of routes whose 5XX another alarm watches: the 5XX alarm
            reads the stage's less theirs (stacks/order_constructs/webhook.py).
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
    route_throttles: Mapping[str, apigw.MethodDeploymentOptions] = field(default_factory=dict)
    routes_alarmed_apart: tuple[tuple[str, str], ...] = ()

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
                    ),
                    **props.route_throttles,
                },
            ),
        )

    def _post_orders(self, orders: apigw.IResource, props: OrderApiProps) -> apigw.Method:
        values = {
            **correlation_snippets(),
            **post_values(props.order_schema.get("required", []), props.max_message_bytes),
        }

        def response(status: str, pattern: str | None, template: str, **headers: str) -> apigw.IntegrationResponse:
            return apigw.IntegrationResponse(
                status_code=status,
                selection_pattern=pattern,
                response_parameters={f"method.response.header.{k}": v for k, v in headers.items()},
                response_templates={"application/json": load_template(template, **values)},
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
                request_templates=dict.fromkeys(JSON_CONTENT_TYPES, load_template("post_request", **values)),
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
            method_responses=method_responses(
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
                        response_templates={"application/json": static_problem(500, "the order could not be read")},
                    ),
                ],
            ),
        )
        return order.add_method(
            "GET",
            integration,
            request_parameters={"method.request.path.id": True},
            request_validator=self.validator,
            method_responses=method_responses(
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
            server_errors_less(self.api, props.routes_alarmed_apart, Duration.minutes(1)),
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
