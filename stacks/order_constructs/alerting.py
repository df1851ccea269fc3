"""The two alarm topics (``page``: wake someone; ``ticket``: working hours), encrypted with their own
customer-managed key; each alarm notifies the one of its severity (``stacks/order_constructs/runbooks.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Aws, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subs
from constructs import Construct

from constructs_lib.logical_ids import TransparentScope


@dataclass(frozen=True)
class AlertingProps:
    """Props for :class:`Alerting`.

    Attributes:
        removal_policy: of the topic's key; default DESTROY (prod passes RETAIN).
        alarm_email: subscribed to the topic; default none (required in prod by the stage rules).
    """

    removal_policy: RemovalPolicy = RemovalPolicy.DESTROY
    alarm_email: str | None = None

    def __post_init__(self) -> None:
        if self.alarm_email is not None and "@" not in self.alarm_email:
            raise ValueError(f"alarm_email does not look like an e-mail address: {self.alarm_email!r}")


def cloudwatch_alarm_conditions() -> dict[str, dict[str, str]]:
    """``aws:SourceAccount`` / ``aws:SourceArn``: CloudWatch acting for an alarm of this account and
    region only (confused-deputy prevention:
    https://docs.aws.amazon.com/IAM/latest/UserGuide/confused-deputy.html)."""
    return {
        "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
        "ArnLike": {"aws:SourceArn": f"arn:{Aws.PARTITION}:cloudwatch:{Aws.REGION}:{Aws.ACCOUNT_ID}:alarm:*"},
    }


class Alerting(TransparentScope):
    """One SNS topic, encrypted with a rotated customer-managed key (CloudWatch cannot use the
    ``aws/sns`` key), TLS enforced, with an e-mail subscription when ``alarm_email`` is given.

    The topic policy ``enforce_ssl`` creates replaces SNS's default policy, so it must allow the
    publisher itself: ``cloudwatch.amazonaws.com`` may ``sns:Publish`` for this account's alarms
    (the ``enforce_ssl`` Deny still refuses it over plain HTTP). The key policy lets CloudWatch
    ``kms:Decrypt`` / ``kms:GenerateDataKey*`` under the same conditions
    (https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html#compatibility-with-aws-services).
    :class:`constructs_lib.checks.ResilienceChecks` proves every alarm action deliverable at synth.

    Attributes:
        topic_key: the topics' key.
        topic: the page topic (logical ID ``AlarmTopic``, output ``AlarmTopicArn``): alarms of severity page.
        ticket_topic: the ticket topic (output ``TicketTopicArn``): alarms of severity ticket.
        subscription, ticket_subscription: the e-mail subscriptions of ``alarm_email``, or None. The same
            address on both: the subject (the alarm's name) and the description's ``[page]``/``[ticket]``
            tell them apart; point an incident-management endpoint at the page topic only.
    """

    def __init__(self, scope: Construct, construct_id: str, *, props: AlertingProps) -> None:
        super().__init__(scope, construct_id)
        self.topic_key = kms.Key(self, "AlarmTopicKey", enable_key_rotation=True, removal_policy=props.removal_policy)
        cloudwatch = iam.ServicePrincipal("cloudwatch.amazonaws.com")
        self.topic_key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsUseTheKey",
                principals=[cloudwatch],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],
                conditions=cloudwatch_alarm_conditions(),
            )
        )
        self.topic = self._topic("AlarmTopic")
        self.ticket_topic = self._topic("TicketTopic")
        self.subscription: sns.Subscription | None = None
        self.ticket_subscription: sns.Subscription | None = None
        if props.alarm_email:
            self.subscription = self.topic.add_subscription(subs.EmailSubscription(props.alarm_email))
            self.ticket_subscription = self.ticket_topic.add_subscription(subs.EmailSubscription(props.alarm_email))

    def _topic(self, construct_id: str) -> sns.Topic:
        """A topic under the key, TLS only, that CloudWatch may publish to for this account's alarms."""
        topic = sns.Topic(self, construct_id, master_key=self.topic_key, enforce_ssl=True)
        topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsPublish",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[topic.topic_arn],
                conditions=cloudwatch_alarm_conditions(),
            )
        )
        return topic
