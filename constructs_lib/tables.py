"""DynamoDB tables with the project's defaults: on-demand, PITR, AWS-owned or customer-managed encryption."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from constructs import Construct

#: Attribute names Powertools' DynamoDBPersistenceLayer uses by default.
IDEMPOTENCY_KEY_ATTR = "id"
IDEMPOTENCY_TTL_ATTR = "expiration"


@dataclass(frozen=True)
class DataTableProps:
    """Props for :class:`DataTable` and :class:`IdempotencyTable`.

    Attributes:
        partition_key: string partition key name; default ``pk``.
        sort_key: optional string sort key name; default none.
        ttl_attribute: optional TTL attribute; default none.
        removal_policy: default DESTROY (dev); prod passes RETAIN.
        deletion_protection: default False; prod passes True.
        encryption_key: customer-managed KMS key (``TableEncryption.CUSTOMER_MANAGED``); default
            none (the AWS-owned key). Callers then also need the key's actions: the stack's
            grants add them (``table.encryption_key``).
    """

    partition_key: str = "pk"
    sort_key: str | None = None
    ttl_attribute: str | None = None
    removal_policy: RemovalPolicy = RemovalPolicy.DESTROY
    deletion_protection: bool = False
    encryption_key: kms.IKey | None = None

    def __post_init__(self) -> None:
        if self.sort_key == self.partition_key:
            raise ValueError("sort_key must differ from partition_key")


class DataTable(Construct):
    """An on-demand table with point-in-time recovery, encrypted with ``encryption_key`` if given.

    Attributes:
        table: the ``dynamodb.Table``.
    """

    def __init__(self, scope: Construct, construct_id: str, *, props: DataTableProps | None = None) -> None:
        super().__init__(scope, construct_id)
        props = props or DataTableProps()
        self.table = dynamodb.Table(
            self,
            "Table",
            partition_key=dynamodb.Attribute(name=props.partition_key, type=dynamodb.AttributeType.STRING),
            sort_key=(
                dynamodb.Attribute(name=props.sort_key, type=dynamodb.AttributeType.STRING) if props.sort_key else None
            ),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            time_to_live_attribute=props.ttl_attribute,
            removal_policy=props.removal_policy,
            deletion_protection=props.deletion_protection,
            encryption=dynamodb.TableEncryption.CUSTOMER_MANAGED if props.encryption_key is not None else None,
            encryption_key=props.encryption_key,
        )


class IdempotencyTable(DataTable):
    """The table behind Powertools idempotency: key ``id``, TTL on ``expiration``.

    Records expire through TTL (``expiration`` is set on every record by Powertools).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        removal_policy: RemovalPolicy = RemovalPolicy.DESTROY,
        deletion_protection: bool = False,
    ) -> None:
        super().__init__(
            scope,
            construct_id,
            props=DataTableProps(
                partition_key=IDEMPOTENCY_KEY_ATTR,
                ttl_attribute=IDEMPOTENCY_TTL_ATTR,
                removal_policy=removal_policy,
                deletion_protection=deletion_protection,
            ),
        )
