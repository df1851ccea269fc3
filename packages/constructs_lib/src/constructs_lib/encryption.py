"""A customer-managed KMS key for data at rest: DynamoDB tables and CloudWatch Logs log groups."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

#: What CloudWatch Logs needs on a key that encrypts log groups (AWS: "Encrypt log data in CloudWatch
#: Logs using AWS KMS", step 2: the key policy for the ``logs.<region>.amazonaws.com`` principal).
LOGS_KEY_ACTIONS = ("kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*", "kms:Describe*")


@dataclass(frozen=True)
class DataEncryptionKeyProps:
    """Props for :class:`DataEncryptionKey`.

    Attributes:
        description: the key's description; default ``"data at rest: tables and log groups"``.
        removal_policy: default RETAIN (a deleted key makes every table and log encrypted with it
            unreadable); DESTROY schedules deletion with the stack.
        allow_log_groups: let CloudWatch Logs in this stack's region use the key for this
            account's log groups; default True.
    """

    description: str = "data at rest: tables and log groups"
    removal_policy: RemovalPolicy = RemovalPolicy.RETAIN
    allow_log_groups: bool = True


class DataEncryptionKey(Construct):
    """One symmetric customer-managed key with yearly automatic rotation.

    With ``allow_log_groups``, the key policy lets ``logs.<region>.amazonaws.com`` use the key only
    under the encryption context of a log group of this account and region
    (``kms:EncryptionContext:aws:logs:arn`` like ``arn:<partition>:logs:<region>:<account>:log-group:*``),
    as AWS documents for log group encryption; CDK's ``LogGroup(encryption_key=...)`` adds no such
    statement itself. Tables need no key policy statement: DynamoDB uses the key through the
    callers' grants (``grant_*`` on a table encrypted with it adds the key's actions too).

    Attributes:
        key: the ``kms.Key``.
    """

    def __init__(self, scope: Construct, construct_id: str, *, props: DataEncryptionKeyProps | None = None) -> None:
        super().__init__(scope, construct_id)
        props = props or DataEncryptionKeyProps()
        self.key = kms.Key(
            self,
            "Key",
            description=props.description,
            enable_key_rotation=True,
            removal_policy=props.removal_policy,
        )
        if props.allow_log_groups:
            stack = Stack.of(self)
            self.key.add_to_resource_policy(
                iam.PolicyStatement(
                    sid="AllowCloudWatchLogsOfThisAccount",
                    principals=[iam.ServicePrincipal(f"logs.{stack.region}.amazonaws.com")],
                    actions=list(LOGS_KEY_ACTIONS),
                    resources=["*"],  # in a key policy, "*" is this key
                    conditions={
                        "ArnLike": {
                            "kms:EncryptionContext:aws:logs:arn": (
                                f"arn:{stack.partition}:logs:{stack.region}:{stack.account}:log-group:*"
                            )
                        }
                    },
                )
            )
