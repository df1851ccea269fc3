"""The providers' webhook endpoint: a Lambda function URL in front of ``lambdas/provider_webhook``.

The function URL has no IAM auth (a provider cannot sign SigV4): every request is authenticated by its
Stripe-style signature instead (HMAC-SHA256 over ``timestamp.payload`` with the endpoint's signing secret,
300 s tolerance: https://docs.stripe.com/webhooks#verify-manually), checked before anything is read or
written (order_domain.webhook_endpoint). The signing secret lives in Secrets Manager: the stack creates it
with a random placeholder; an operator puts the provider's ``whsec_...`` there
(``{"signing_secrets": ["whsec_..."]}``, two while rolling it). Function URLs:
https://docs.aws.amazon.com/lambda/latest/dg/urls-auth.html.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sqs as sqs
from constructs import Construct

import order_domain.env as env
from constructs_lib.logical_ids import TransparentScope
from stacks.order_constructs.functions import OrderFunctionDefaults
from stacks.order_constructs.grants import grant_items, grant_queue

#: One settlement write (a read, a conditional write, at most three tries) and perhaps one message.
WEBHOOK_TIMEOUT = Duration.seconds(10)


@dataclass(frozen=True)
class ProviderWebhookProps:
    """Props for :class:`ProviderWebhook`.

    Attributes:
        functions: the order functions' defaults.
        orders_table: whose settlement records the events update (GetItem, conditional UpdateItem).
        needs_attention_queue: where a late failure is announced.
        removal_policy: of the signing secret (prod: RETAIN).
    """

    functions: OrderFunctionDefaults
    orders_table: dynamodb.ITable
    needs_attention_queue: sqs.IQueue
    removal_policy: RemovalPolicy = RemovalPolicy.DESTROY


class ProviderWebhook(TransparentScope):
    """The webhook function, its signing secret and its function URL.

    Attributes:
        function: the ``PipelineFunction`` (its errors alarm pages: function-errors.md#provider-webhook).
        signing_secret: the Secrets Manager secret of the signing secrets.
        url: the function URL (``AuthType NONE``: the signature is the authentication).
    """

    def __init__(self, scope: Construct, construct_id: str, *, props: ProviderWebhookProps) -> None:
        super().__init__(scope, construct_id)
        self.signing_secret = secretsmanager.Secret(
            self,
            "WebhookSigningSecret",
            description='the providers\' webhook signing secrets: {"signing_secrets": ["whsec_..."]}',
            generate_secret_string=secretsmanager.SecretStringGenerator(
                secret_string_template="{}", generate_string_key="signing_secrets", exclude_punctuation=True
            ),
            removal_policy=props.removal_policy,
        )
        self.function = props.functions.create(
            self,
            "ProviderWebhook",
            "provider_webhook",
            {
                env.ORDERS_TABLE_NAME: props.orders_table.table_name,
                env.NEEDS_ATTENTION_QUEUE_URL: props.needs_attention_queue.queue_url,
                env.WEBHOOK_SECRET_ARN: self.signing_secret.secret_arn,
            },
            timeout=WEBHOOK_TIMEOUT,
            alarm_description="the providers' webhook fails: late settlements (refund failed, dispute, parcel "
            "returned) wait for the provider's retry or the sweeper's poll",
            idempotency_metrics=False,
        )
        fn = self.function.function
        grant_items(props.orders_table, fn, "dynamodb:GetItem", "dynamodb:UpdateItem")
        grant_queue(props.needs_attention_queue, fn, "sqs:SendMessage")
        self.signing_secret.grant_read(fn)
        self.url = fn.add_function_url(auth_type=lambda_.FunctionUrlAuthType.NONE)
