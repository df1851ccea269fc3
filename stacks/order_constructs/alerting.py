"""The alarm topic every alarm notifies: encrypted with its own customer-managed key."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import RemovalPolicy
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


class Alerting(TransparentScope):
    """One SNS topic, encrypted with a rotated customer-managed key (CloudWatch cannot use the
    ``aws/sns`` key; its key policy lets CloudWatch decrypt and generate data keys), TLS enforced,
    with an e-mail subscription when ``alarm_email`` is given.

    Attributes:
        topic_key: the topic's key.
        topic: the alarm topic.
        subscription: the e-mail subscription, or None.
    """

    def __init__(self, scope: Construct, construct_id: str, *, props: AlertingProps) -> None:
        super().__init__(scope, construct_id)
        self.topic_key = kms.Key(self, "AlarmTopicKey", enable_key_rotation=True, removal_policy=props.removal_policy)
        self.topic_key.grant(iam.ServicePrincipal("cloudwatch.amazonaws.com"), "kms:Decrypt", "kms:GenerateDataKey*")
        self.topic = sns.Topic(self, "AlarmTopic", master_key=self.topic_key, enforce_ssl=True)
        self.subscription: sns.Subscription | None = None
        if props.alarm_email:
            self.subscription = self.topic.add_subscription(subs.EmailSubscription(props.alarm_email))
