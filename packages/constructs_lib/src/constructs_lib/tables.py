"""DynamoDB tables with the project's defaults: on-demand, PITR, AWS-owned or customer-managed encryption.

Composes like aws-solutions-constructs: bring an existing ``dynamodb.ITable`` (the construct then
creates nothing and only exposes it), or pass any ``dynamodb.Table`` option through ``table_props``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from constructs import Construct

from constructs_lib.overrides import PassThrough, as_kwargs, check_overrides

#: Attribute names Powertools' DynamoDBPersistenceLayer uses by default.
IDEMPOTENCY_KEY_ATTR = "id"
IDEMPOTENCY_TTL_ATTR = "expiration"
#: Defaults of the typed props left unset.
DEFAULT_PARTITION_KEY = "pk"
DEFAULT_REMOVAL_POLICY = RemovalPolicy.DESTROY

#: Props that shape a created table: none may be combined with ``existing_table``.
_SHAPING = (
    "partition_key",
    "sort_key",
    "ttl_attribute",
    "removal_policy",
    "deletion_protection",
    "encryption_key",
    "table_props",
)


@dataclass(frozen=True)
class DataTableProps:
    """Props for :class:`DataTable`.

    Attributes:
        partition_key: string partition key name; default ``pk``.
        sort_key: optional string sort key name; default none.
        ttl_attribute: optional TTL attribute; default none.
        removal_policy: default DESTROY (dev); prod passes RETAIN.
        deletion_protection: default False; prod passes True.
        encryption_key: customer-managed KMS key (``TableEncryption.CUSTOMER_MANAGED``); default
            none (the AWS-owned key). Callers then also need the key's actions (``table.encryption_key``).
        global_secondary_indexes: indexes to add (``dynamodb.GlobalSecondaryIndexProps``); default none.
        table_props: ``dynamodb.TableProps`` (or ``dynamodb.Table`` keyword arguments) merged over the
            defaults (e.g. ``table_class``, ``stream``); a key also given as a typed prop above is
            rejected. Default none.
        existing_table: use this table instead of creating one; none of the props above may be
            given with it. Default: a table is created.
    """

    partition_key: str | None = None
    sort_key: str | None = None
    ttl_attribute: str | None = None
    removal_policy: RemovalPolicy | None = None
    deletion_protection: bool | None = None
    encryption_key: kms.IKey | None = None
    global_secondary_indexes: Sequence[dynamodb.GlobalSecondaryIndexProps] = field(default_factory=tuple)
    table_props: PassThrough | None = None
    existing_table: dynamodb.ITable | None = None

    def __post_init__(self) -> None:
        if self.existing_table is not None:
            given = [name for name in _SHAPING if getattr(self, name) is not None]
            if self.global_secondary_indexes:
                given.append("global_secondary_indexes")
            if given:
                raise ValueError(
                    f"existing_table and {', '.join(given)} are mutually exclusive: "
                    "the table is not created here, so its props cannot apply"
                )
            return
        overrides = self.table_overrides()
        partition_key = self.partition_key or (
            overrides["partition_key"].name if "partition_key" in overrides else DEFAULT_PARTITION_KEY
        )
        if self.sort_key is not None and self.sort_key == partition_key:
            raise ValueError("sort_key must differ from partition_key")
        if overrides.get("point_in_time_recovery") is False or (
            "point_in_time_recovery_specification" in overrides
            and not overrides["point_in_time_recovery_specification"].point_in_time_recovery_enabled
        ):
            raise ValueError("table_props: point-in-time recovery stays enabled on every table")

    def table_overrides(self) -> dict[str, Any]:
        """``table_props`` as keyword arguments for ``dynamodb.Table`` (validated)."""
        return check_overrides(
            dynamodb.Table,
            self.table_props,
            what="table_props",
            typed={
                "partition_key": self.partition_key,
                "sort_key": self.sort_key,
                "time_to_live_attribute": self.ttl_attribute,
                "removal_policy": self.removal_policy,
                "deletion_protection": self.deletion_protection,
                "encryption_key": self.encryption_key,
            },
        )


class DataTable(Construct):
    """An on-demand table with point-in-time recovery, encrypted with ``encryption_key`` if given.

    Attributes:
        table: the table (created, or ``existing_table``).
    """

    def __init__(self, scope: Construct, construct_id: str, *, props: DataTableProps | None = None) -> None:
        super().__init__(scope, construct_id)
        props = props or DataTableProps()
        self.table: dynamodb.ITable
        if props.existing_table is not None:
            self.table = props.existing_table
            return
        defaults: dict[str, Any] = {
            "partition_key": dynamodb.Attribute(
                name=props.partition_key or DEFAULT_PARTITION_KEY, type=dynamodb.AttributeType.STRING
            ),
            "sort_key": (
                dynamodb.Attribute(name=props.sort_key, type=dynamodb.AttributeType.STRING) if props.sort_key else None
            ),
            "billing_mode": dynamodb.BillingMode.PAY_PER_REQUEST,
            "point_in_time_recovery_specification": dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            "time_to_live_attribute": props.ttl_attribute,
            "removal_policy": props.removal_policy or DEFAULT_REMOVAL_POLICY,
            "deletion_protection": bool(props.deletion_protection),
            "encryption": dynamodb.TableEncryption.CUSTOMER_MANAGED if props.encryption_key is not None else None,
            "encryption_key": props.encryption_key,
        }
        table = dynamodb.Table(self, "Table", **{**defaults, **props.table_overrides()})
        for index in props.global_secondary_indexes:
            table.add_global_secondary_index(**as_kwargs(index))
        self.table = table


class IdempotencyTable(DataTable):
    """The table behind Powertools idempotency: key ``id``, TTL on ``expiration``.

    Records expire through TTL (``expiration`` is set on every record by Powertools). With
    ``existing_table``, that table must have this layout (an imported table cannot be checked).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        removal_policy: RemovalPolicy | None = None,
        deletion_protection: bool | None = None,
        table_props: PassThrough | None = None,
        existing_table: dynamodb.ITable | None = None,
    ) -> None:
        common: dict[str, Any] = {
            "removal_policy": removal_policy,
            "deletion_protection": deletion_protection,
            "table_props": table_props,
        }
        if existing_table is not None:
            props = DataTableProps(existing_table=existing_table, **common)
        else:
            props = DataTableProps(partition_key=IDEMPOTENCY_KEY_ATTR, ttl_attribute=IDEMPOTENCY_TTL_ATTR, **common)
        super().__init__(scope, construct_id, props=props)
