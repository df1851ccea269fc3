"""Every cdk-nag acknowledgment (v3's suppressions) in one place, each with its reason.

Packs in the gate: AwsSolutions, Serverless, PCI.DSS.321 (``stacks/app_builder.py``). Each
acknowledgment is attached to the constructs it was reviewed for, not to the stack, so a new
function, queue or rule is checked afresh; the only stack-wide one is the ``Resource::*`` of the
unscopable X-Ray and log-delivery actions.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from aws_cdk import Acknowledgment, Stack, Validations
from aws_cdk import aws_stepfunctions as sfn
from constructs import IConstruct

if TYPE_CHECKING:
    from stacks.order_pipeline_stack import OrderPipelineStack

XRAY_AND_LOG_DELIVERY = (
    "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
    "Only X-Ray's write actions (xray:PutTraceSegments, xray:PutTelemetryRecords, added by active "
    "tracing) and Step Functions' CloudWatch Logs delivery actions (logs:CreateLogDelivery and "
    "friends) use Resource '*': those actions support no resource-level scoping.",
)

LAMBDA_ASYNC_DLQ = (
    "Serverless::Serverless-LambdaDLQ",
    "A Lambda DeadLetterConfig only catches asynchronous invocations. The saga steps and sandbox "
    "providers are invoked synchronously (Step Functions, which retries and compensates; the steps "
    "themselves), intake through the SQS event source (failures redrive to the orders DLQ), the providers' "
    "webhook by API Gateway (a 5XX is delivered again by the provider). Sweeper "
    "and DlqReplay are invoked by their EventBridge schedules, which fire again within 5 / 15 "
    "minutes and carry no payload worth keeping; their failures raise the function's Errors alarm.",
)
DLQ_OF_A_DLQ = (
    "Serverless::Serverless-SQSRedrivePolicy",
    "This queue is itself a dead-letter queue: the end of the line, kept 14 days, alarmed on its "
    "first message and drained by the replay tool; a DLQ of a DLQ would only hide messages further.",
)
SQS_SOURCE_ON_FAILURE = (
    "Serverless::Serverless-LambdaEventSourceMappingDestination",
    "On-failure destinations exist for stream and Kafka event sources only; for an SQS source the "
    "queue's redrive policy is the failure destination (orders DLQ after 3 receives, and intake "
    "sends permanent failures to the DLQ at once).",
)
SCHEDULE_TARGET_DLQ = (
    "Serverless::Serverless-EventBusDLQ",
    "The events are schedules and alarm state changes with no payload to recover: a delivery that "
    "fails after the target's 2 retries is superseded by the next schedule (5 or 15 minutes; the "
    "15-minute replay schedule backs the replay-on-alarm rule).",
)
ALARM_EMAIL_DLQ = (
    "Serverless::Serverless-SNSRedrivePolicy",
    "The e-mail subscription of an alarm topic (page or ticket): an undeliverable notification has nothing to "
    "redrive, the alarm's state stays in CloudWatch and on the dashboard, and the alarm notifies "
    "again on its next transition.",
)
LOGS_WITHOUT_CMK_IN_DEV = (
    "PCI.DSS.321::PCI.DSS.321-CloudWatchLogGroupEncrypted",
    "dev only: no card data exists in dev (sandbox tokens), so its log groups keep CloudWatch Logs' "
    "own encryption; prod encrypts every log group with the customer-managed data key.",
)
INLINE_ROLE_POLICY = (
    "PCI.DSS.321::PCI.DSS.321-IAMNoInlinePolicy",
    "Each role's policy (CDK's DefaultPolicy, an AWS::IAM::Policy attached to that one role) is "
    "generated from this role's grants: nothing to share between roles, versioned and rolled back "
    "with the stack template, and least privilege is reviewed in tests/infra.",
)
LAMBDA_OUTSIDE_VPC = (
    "PCI.DSS.321::PCI.DSS.321-LambdaInsideVPC",
    "The functions reach only AWS service endpoints (IAM-authorised, TLS) and the providers' HTTPS "
    "APIs, and accept no inbound connections; there is no VPC resource to reach. A VPC would add "
    "NAT and endpoints without narrowing what the function roles may do.",
)

API_CLOUDWATCH_ROLE = (
    "AwsSolutions::AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
    "AmazonAPIGatewayPushToCloudWatchLogs]",
    "The account-level role API Gateway writes execution and access logs with: AWS documents this "
    "managed policy for it (API Gateway console, 'Set up CloudWatch logging for REST APIs'); it grants "
    "only log-group and log-stream writes, and the role is API Gateway's alone.",
)
API_WAF = (
    ("AwsSolutions::AwsSolutions-APIG3", "PCI.DSS.321::PCI.DSS.321-APIGWAssociatedWithWAF"),
    "The order API takes IAM (SigV4) callers only: anonymous traffic is refused before any integration "
    "runs, bodies are schema-validated, and the stage and usage plan are throttled at the pipeline's "
    "capacity. A WAF web ACL (rate rules, IP sets) is the documented next step if the API is ever opened "
    "to other callers (decision 0018); it costs per ACL and per request.",
)
API_COGNITO = (
    "AwsSolutions::AwsSolutions-COG4",
    "Both methods use IAM (SigV4) authorization: the callers are services with AWS credentials, not "
    "end users with Cognito tokens. Cognito, Lambda authorizers and mutual TLS are the documented "
    "alternatives (decision 0018).",
)
API_CACHE = (
    "PCI.DSS.321::PCI.DSS.321-APIGWCacheEnabledAndEncrypted",
    "No stage cache exists to encrypt: POST /orders must reach the queue every time, and GET "
    "/orders/{id} must show the order's current status; a cache would only serve stale statuses. "
    "Neither method returns card data.",
)
API_CLIENT_CERTIFICATE = (
    "PCI.DSS.321::PCI.DSS.321-APIGWSSLEnabled",
    "A stage client certificate authenticates API Gateway to HTTP back ends. This API's integrations "
    "are AWS service calls (SQS SendMessage, DynamoDB GetItem) over HTTPS, signed with SigV4 by their "
    "execution roles; there is no HTTP back end to present a certificate to.",
)

WEBHOOK_SIGNED_NOT_IAM = (
    ("AwsSolutions::AwsSolutions-APIG4", "AwsSolutions::AwsSolutions-COG4"),
    "POST /webhooks/provider is called by the payment provider, which cannot sign SigV4 nor hold Cognito "
    "tokens: every request is authenticated by its Stripe-Signature (HMAC-SHA256 of timestamp.body with the "
    "endpoint's signing secret, 300 s tolerance, constant-time compare: "
    "https://docs.stripe.com/webhooks#verify-manually) before anything is read or written. API Gateway "
    "refuses a request without the header, the route is throttled apart, and the function may only read its "
    "secret and update orders.",
)
WEBHOOK_SECRET_ROTATION = (
    "AwsSolutions::AwsSolutions-SMG4",
    "The webhook signing secret is issued by the provider: it is rolled at the provider's dashboard, which "
    "signs with the old and the new secret for a while (several v1 signatures: "
    "https://docs.stripe.com/webhooks#verify-manually), and the operator puts both in the secret; a Secrets "
    "Manager rotation Lambda cannot create a secret the provider signs with.",
)
WEBHOOK_SECRET_KEY_IN_DEV = (
    "PCI.DSS.321::PCI.DSS.321-SecretsManagerUsingKMSKey",
    "dev only: the stack's placeholder webhook signing secret (a sandbox provider's, no card data) keeps "
    "Secrets Manager's AWS-managed key; prod imports the operator's secret (webhook_secret_arn, docs/deploy.md).",
)

#: Runtime parity (tests/infra/test_runtime_parity.py): the functions run the Python the tests and the
#: rehearsal run on (3.13, supported by Lambda until 2029), not the newest runtime aws-cdk-lib knows
#: (3.14, which this project's machines cannot install offline).
_RUNTIME_PARITY_REASON = (
    "Runtime parity: the template deploys python3.13, the Python every test and `make rehearse` run on; "
    "python3.14 is newer but untested here (it cannot be installed on the project's machines)."
)
LAMBDA_RUNTIME_PARITY = (
    ("AwsSolutions::AwsSolutions-L1", _RUNTIME_PARITY_REASON),
    ("Serverless::Serverless-LambdaLatestVersion", _RUNTIME_PARITY_REASON),
)


#: Prod's execution log holds failed executions' error events only (decision 0022).
SAGA_ERROR_LOGGING = (
    "AwsSolutions::AwsSolutions-SF1",
    "Prod logs ERROR events without execution data: every execution's full per-state timeline is in its "
    "execution history (Standard workflows keep it 90 days; `ops trace` reads it), and logging ALL with "
    "data writes ~20 events of ~1 KB per order, kept a year (decision 0022: the cost against the "
    "$125-per-million-orders budget). Failed, timed-out and aborted executions are still logged and alarmed.",
)


def _acknowledge(constructs: Iterable[IConstruct], rule: tuple[str, str]) -> None:
    rule_id, reason = rule
    for construct in constructs:
        Validations.of(construct).acknowledge(Acknowledgment(id=rule_id, reason=reason))


def apply_suppressions(stack: OrderPipelineStack) -> None:
    """Acknowledge the reviewed cdk-nag findings on ``stack``."""
    _acknowledge([stack], XRAY_AND_LOG_DELIVERY)

    # tasks.LambdaInvoke grants states:... lambda:InvokeFunction on "<fn arn>" and "<fn arn>:*".
    saga_role = stack.saga.state_machine.role
    steps = (
        stack.reserve,
        stack.charge,
        stack.ship,
        stack.cancel_shipment,
        stack.refund,
        stack.release,
        stack.finalize,
    )
    for step in steps:
        logical_id = Stack.of(step).get_logical_id(step.function.node.default_child)  # type: ignore[arg-type]
        Validations.of(saga_role).acknowledge(
            Acknowledgment(
                id=f"AwsSolutions::AwsSolutions-IAM5[Resource::<{logical_id}.Arn>:*]",
                reason="The state machine may invoke its own step functions, including their versions and "
                "aliases (ARN:*); aws-stepfunctions-tasks.LambdaInvoke grants both forms.",
            )
        )

    _acknowledge([f.function for f in stack.functions], LAMBDA_ASYNC_DLQ)
    _acknowledge([f.function for f in stack.functions], LAMBDA_OUTSIDE_VPC)
    for rule in LAMBDA_RUNTIME_PARITY:
        _acknowledge([f.function for f in stack.functions], rule)
    _acknowledge([*(f.role for f in stack.functions), saga_role], INLINE_ROLE_POLICY)
    _acknowledge([stack.orders_queue.dlq, stack.needs_attention.dlq], DLQ_OF_A_DLQ)
    if stack.orders_queue.event_source is not None:
        _acknowledge([stack.intake.function], SQS_SOURCE_ON_FAILURE)
    _acknowledge([stack.sweep_rule, stack.replay_schedule, stack.replay_on_alarm], SCHEDULE_TARGET_DLQ)
    subscriptions = [s for s in (stack.alarm_subscription, stack.ticket_subscription) if s is not None]
    if subscriptions:
        _acknowledge(subscriptions, ALARM_EMAIL_DLQ)
    if stack.data_key is None:  # dev: AWS-owned keys by design
        _acknowledge(
            [
                *(f.log_group for f in stack.functions),
                stack.saga.log_group,
                stack.order_api.access_logs,
                stack.order_api.execution_logs,
            ],
            LOGS_WITHOUT_CMK_IN_DEV,
        )
    if stack.stage.saga_log_level != sfn.LogLevel.ALL:
        _acknowledge([stack.saga.state_machine], SAGA_ERROR_LOGGING)
    _acknowledge_api(stack)


def _acknowledge_api(stack: OrderPipelineStack) -> None:
    api = stack.order_api
    _acknowledge([api.send_role, api.read_role], INLINE_ROLE_POLICY)
    cloudwatch_role = api.api.node.try_find_child("CloudWatchRole")  # RestApi(cloud_watch_role=True)
    if cloudwatch_role is not None:
        _acknowledge([cloudwatch_role], API_CLOUDWATCH_ROLE)
    stage = api.api.deployment_stage
    rule_ids, reason = API_WAF
    for rule_id in rule_ids:
        _acknowledge([stage], (rule_id, reason))
    _acknowledge([stage], API_CACHE)
    _acknowledge([stage], API_CLIENT_CERTIFICATE)
    _acknowledge([api.post_orders, api.get_order], API_COGNITO)
    webhook = stack.webhook
    rule_ids, reason = WEBHOOK_SIGNED_NOT_IAM
    for rule_id in rule_ids:
        _acknowledge([webhook.method], (rule_id, reason))  # type: ignore[list-item]
    if webhook.signing_secret is not None:  # dev's placeholder; prod's secret is the operator's
        _acknowledge([webhook.signing_secret], WEBHOOK_SECRET_ROTATION)
        _acknowledge([webhook.signing_secret], WEBHOOK_SECRET_KEY_IN_DEV)
