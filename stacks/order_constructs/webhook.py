"""The providers' webhook endpoint: ``POST /webhooks/provider`` on the order API, a Lambda proxy integration in
front of ``lambdas/provider_webhook``.

The route has no IAM auth (a provider cannot sign SigV4): every request is authenticated by its Stripe-style
signature instead (HMAC-SHA256 over ``timestamp.payload`` with the endpoint's signing secret, 300 s tolerance:
https://docs.stripe.com/webhooks#verify-manually), checked before anything is read or written
(order_domain.webhook_endpoint). API Gateway refuses a request without the ``Stripe-Signature`` header (400,
no invocation); the function refuses a body over 64 KiB (413) before computing a signature. A route of the
existing REST API, not a function URL: the stage's TLS 1.2 policy, HTTPS-only resource policy, access log,
throttling and X-Ray apply to it, and the function has no public URL of its own (function URLs:
https://docs.aws.amazon.com/lambda/latest/dg/urls-auth.html).

The signing secret lives in Secrets Manager: in prod its ARN is the ``webhook_secret_arn`` context key (the
operator creates it, like the providers' API-key secrets: docs/deploy.md); dev without the key gets a
placeholder the stack creates. An operator puts the provider's ``whsec_...`` there
(``{"signing_secrets": ["whsec_..."]}``, two while rolling it: the provider's dashboard rolls it).
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sqs as sqs
from constructs import Construct

import order_domain.env as env
from constructs_lib.logical_ids import TransparentScope
from constructs_lib.monitoring import Monitoring
from constructs_lib.providers import SECRET_SUFFIX
from order_domain.webhooks import HEADER
from stacks.order_constructs.api_mapping import route_server_errors
from stacks.order_constructs.functions import OrderFunctionDefaults
from stacks.order_constructs.grants import DDB_ORDER_STEP, grant_items, grant_queue

#: One settlement write (a read, a conditional write, at most three tries) and perhaps one message.
WEBHOOK_TIMEOUT = Duration.seconds(10)
#: The route, under the API's stage: ``POST /v1/webhooks/provider``.
WEBHOOK_PATH = "/webhooks/provider"
SIGNATURE_HEADER = "Stripe-Signature"
#: The route's throttle (its own method setting, apart from POST /orders). A 429 is delivered again: Stripe
#: retries a failed delivery with exponential backoff for up to three days (https://docs.stripe.com/webhooks#retries).
#: So the limit only bounds the function's concurrency: at its 10 s timeout, 25 requests a second are at most
#: 250 concurrent executions, a quarter of the account's default 1,000
#: (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html), whatever a flood of events or
#: of forged requests does: intake and the saga steps keep the rest. The bucket is two seconds of it.
WEBHOOK_RATE_LIMIT = 25
WEBHOOK_BURST_LIMIT = 50
#: The route's 5XX alarm: a 5XX in each of three 5-minute periods opens a ticket (one 500 is a conflict the
#: provider's retry resolves; the sweeper polls pending refunds meanwhile).
SERVER_ERRORS_PERIOD = Duration.minutes(5)
SERVER_ERRORS_PERIODS = 3


@dataclass(frozen=True)
class ProviderWebhookProps:
    """Props for :class:`ProviderWebhook`.

    Attributes:
        functions: the order functions' defaults.
        orders_table: whose settlement records the events update (GetItem, conditional UpdateItem).
        needs_attention_queue: where a late failure is announced.
        signing_secret_arn: the operator's secret (complete ARN, or partial without the ``-XXXXXX`` suffix);
            None: the stack creates a placeholder (dev).
        removal_policy: of a created signing secret.
    """

    functions: OrderFunctionDefaults
    orders_table: dynamodb.ITable
    needs_attention_queue: sqs.IQueue
    signing_secret_arn: str | None = None
    removal_policy: RemovalPolicy = RemovalPolicy.DESTROY


class ProviderWebhook(TransparentScope):
    """The webhook function and its signing secret; :meth:`add_route` puts it on the order API.

    Attributes:
        function: the ``PipelineFunction`` (its errors alarm pages: function-errors.md#provider-webhook).
        signing_secret: the created placeholder secret, or None (the secret of ``signing_secret_arn``).
        secret_arn: the secret's ARN as the function reads it.
        method: the ``POST /webhooks/provider`` method (after :meth:`add_route`).
        errors_alarm: the route's 5XX alarm (after :meth:`add_route`).
    """

    def __init__(self, scope: Construct, construct_id: str, *, props: ProviderWebhookProps) -> None:
        super().__init__(scope, construct_id)
        self.signing_secret: secretsmanager.Secret | None = None
        if props.signing_secret_arn is None:
            self.signing_secret = secretsmanager.Secret(
                self,
                "WebhookSigningSecret",
                description='the providers\' webhook signing secrets: {"signing_secrets": ["whsec_..."]}',
                generate_secret_string=secretsmanager.SecretStringGenerator(
                    secret_string_template="{}", generate_string_key="signing_secrets", exclude_punctuation=True
                ),
                removal_policy=props.removal_policy,
            )
        self.secret_arn = props.signing_secret_arn or self.signing_secret.secret_arn  # type: ignore[union-attr]
        self.function = props.functions.create(
            self,
            "ProviderWebhook",
            "provider_webhook",
            {
                env.ORDERS_TABLE_NAME: props.orders_table.table_name,
                env.NEEDS_ATTENTION_QUEUE_URL: props.needs_attention_queue.queue_url,
                env.WEBHOOK_SECRET_ARN: self.secret_arn,
            },
            timeout=WEBHOOK_TIMEOUT,
            alarm_description="the providers' webhook fails: late settlements (refund failed, dispute, parcel "
            "returned) wait for the provider's retry or the sweeper's poll",
            idempotency_metrics=False,
        )
        fn = self.function.function
        grant_items(props.orders_table, fn, *DDB_ORDER_STEP)
        grant_queue(props.needs_attention_queue, fn, "sqs:SendMessage")
        # GetSecretValue only (Secret.grant_read adds DescribeSecret, which nothing calls)
        fn.add_to_role_policy(
            iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"], resources=[self._secret_resource()])
        )
        self.method: apigw.Method | None = None
        self.errors_alarm: cloudwatch.Alarm | None = None

    def _secret_resource(self) -> str:
        """The IAM resource naming exactly the secret (a partial ARN matches its ``-XXXXXX`` suffix)."""
        arn = self.secret_arn
        if self.signing_secret is not None or SECRET_SUFFIX.search(arn):
            return arn
        return f"{arn}-??????"

    @staticmethod
    def method_throttle() -> dict[str, apigw.MethodDeploymentOptions]:
        """The route's stage method setting (``OrderApiProps.route_throttles``)."""
        options = apigw.MethodDeploymentOptions(
            throttling_rate_limit=WEBHOOK_RATE_LIMIT, throttling_burst_limit=WEBHOOK_BURST_LIMIT
        )
        return {f"{WEBHOOK_PATH}/POST": options}

    def add_route(self, api: apigw.RestApi, monitoring: Monitoring) -> apigw.Method:
        """``POST /webhooks/provider`` on ``api``: no IAM auth, the signature header required, a Lambda proxy
        integration invocable from this route and stage only; and its 5XX alarm."""
        resource = api.root
        for part in WEBHOOK_PATH.strip("/").split("/"):
            resource = resource.add_resource(part)
        validator = api.add_request_validator("WebhookValidator", validate_request_parameters=True)
        assert SIGNATURE_HEADER.lower() == HEADER  # the handler reads the header the edge requires
        self.method = resource.add_method(
            "POST",
            apigw.LambdaIntegration(self.function.function, proxy=True, allow_test_invoke=False),
            authorization_type=apigw.AuthorizationType.NONE,
            request_parameters={f"method.request.header.{SIGNATURE_HEADER}": True},
            request_validator=validator,
        )
        # Without IAM auth, only an explicit Allow of the resource policy lets a caller in ("An implicit denial or
        # any explicit denial results in denying the caller":
        # https://docs.aws.amazon.com/apigateway/latest/developerguide/apigateway-authorization-flow.html); the
        # API's HTTPS-only Deny still applies. This route only: the order methods stay IAM-only.
        api.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.AnyPrincipal()],
                actions=["execute-api:Invoke"],
                resources=[f"execute-api:/*/POST{WEBHOOK_PATH}"],
            )
        )
        metric = route_server_errors(api, WEBHOOK_PATH, "POST", SERVER_ERRORS_PERIOD)
        self.errors_alarm = cloudwatch.Alarm(
            self,
            "WebhookServerErrorsAlarm",
            alarm_description="the providers' webhook answered 5XX in each of three 5-minute periods: events wait "
            "for the provider's retries (up to three days); pending refunds are still polled",
            metric=metric,
            threshold=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            evaluation_periods=SERVER_ERRORS_PERIODS,
            datapoints_to_alarm=SERVER_ERRORS_PERIODS,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        monitoring.add_alarms([self.errors_alarm])
        return self.method
