"""The order pipeline's tables (and, in prod, the customer-managed key of order data and logs)."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from constructs import Construct

from constructs_lib.encryption import DataEncryptionKey, DataEncryptionKeyProps
from constructs_lib.logical_ids import TransparentScope
from constructs_lib.tables import DataTable, DataTableProps, IdempotencyTable

#: The orders table's index of orders by status, newest update last: the sweeper queries it.
BY_STATUS_INDEX = "by-status"
#: The sparse index of orders with an unsettled effect (order_domain.settlement): only items carrying
#: ``settle_shard`` and ``settle_due`` are in it, so the sweeper's poll reads those, never the table.
UNSETTLED_INDEX = "unsettled"
#: The data key's description (the key existed before this module: the text is the deployed one).
DATA_KEY_DESCRIPTION = "order data at rest: tables and log groups"


@dataclass(frozen=True)
class OrderDataProps:
    """Props for :class:`OrderData`.

    Attributes:
        removal_policy: of the tables and the key; default DESTROY (prod passes RETAIN).
        deletion_protection: of the tables; default False (prod passes True).
        customer_managed_key: create the data key and encrypt the orders and ledger tables with it
            (prod); default False (AWS-owned keys).
        with_ledger: create the sandbox providers' ledger table (dev without provider keys); default False.
    """

    removal_policy: RemovalPolicy = RemovalPolicy.DESTROY
    deletion_protection: bool = False
    customer_managed_key: bool = False
    with_ledger: bool = False

    def __post_init__(self) -> None:
        if self.deletion_protection and self.removal_policy == RemovalPolicy.DESTROY:
            raise ValueError("deletion_protection with removal_policy DESTROY: a stack delete would fail on the tables")


class OrderData(TransparentScope):
    """Idempotency, orders (GSI ``by-status``), inventory, failures and (sandbox) ledger tables.

    Attributes:
        data_key: the customer-managed key (``customer_managed_key``), else None.
        idempotency_table, orders_table, inventory_table, failures_table: the tables.
        ledger_table: the sandbox ledger (``with_ledger``), else None.
    """

    def __init__(self, scope: Construct, construct_id: str, *, props: OrderDataProps) -> None:
        super().__init__(scope, construct_id)
        self.data_key: kms.IKey | None = None
        if props.customer_managed_key:
            self.data_key = DataEncryptionKey(
                self,
                "DataKey",
                props=DataEncryptionKeyProps(removal_policy=props.removal_policy, description=DATA_KEY_DESCRIPTION),
            ).key
        removal, protect = props.removal_policy, props.deletion_protection
        self.idempotency_table = IdempotencyTable(
            self, "IdempotencyTable", removal_policy=removal, deletion_protection=protect
        ).table
        by_status = dynamodb.GlobalSecondaryIndexProps(
            index_name=BY_STATUS_INDEX,
            partition_key=dynamodb.Attribute(name="status", type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name="updated_at", type=dynamodb.AttributeType.STRING),
            projection_type=dynamodb.ProjectionType.INCLUDE,
            non_key_attributes=["correlation_id"],  # the sweeper logs each stuck order under its ID
        )
        unsettled = dynamodb.GlobalSecondaryIndexProps(
            index_name=UNSETTLED_INDEX,
            partition_key=dynamodb.Attribute(name="settle_shard", type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name="settle_due", type=dynamodb.AttributeType.STRING),
            projection_type=dynamodb.ProjectionType.KEYS_ONLY,  # the poll reads each order whole before acting
        )
        self.orders_table = DataTable(
            self,
            "OrdersTable",
            props=DataTableProps(
                partition_key="order_id",
                encryption_key=self.data_key,
                global_secondary_indexes=(by_status, unsettled),
                removal_policy=removal,
                deletion_protection=protect,
            ),
        ).table
        self.inventory_table = DataTable(
            self, "InventoryTable", props=DataTableProps(removal_policy=removal, deletion_protection=protect)
        ).table
        self.failures_table = DataTable(
            self,
            "FailuresTable",
            props=DataTableProps(
                partition_key="message_id",
                ttl_attribute="expires_at",
                removal_policy=removal,
                deletion_protection=protect,
            ),
        ).table
        self.ledger_table: dynamodb.ITable | None = None
        if props.with_ledger:
            self.ledger_table = DataTable(
                self,
                "SandboxLedgerTable",
                props=DataTableProps(
                    sort_key="sk", encryption_key=self.data_key, removal_policy=removal, deletion_protection=protect
                ),
            ).table
