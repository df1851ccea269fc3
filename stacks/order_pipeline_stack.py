"""The order pipeline: orders queue -> intake -> saga (reserve, charge, ship; compensations)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk import CfnOutput, Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subs
from constructs import Construct

from constructs_lib.function import PipelineFunction, PipelineFunctionProps
from constructs_lib.layers import PythonPackagesLayer, PythonPackagesLayerProps, SourceTreeLayer, SourceTreeLayerProps
from constructs_lib.queue import ResilientQueue, ResilientQueueProps
from constructs_lib.saga import OrderSaga, OrderSagaProps
from constructs_lib.stage import StageConfig
from constructs_lib.tables import DataTable, DataTableProps, IdempotencyTable

LAMBDAS_DIR = Path(__file__).resolve().parent.parent / "lambdas"
#: Runtime distributions staged into the Powertools layer (versions from lambdas/requirements.txt).
LAYER_DISTRIBUTIONS = ("aws-lambda-powertools", "jmespath", "typing_extensions", "fastjsonschema")
STEP_TIMEOUT = Duration.seconds(30)
INTAKE_TIMEOUT = Duration.seconds(30)

DDB_ITEM_RW = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem")
DDB_TRANSACT = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:ConditionCheckItem")


class OrderPipelineStack(Stack):
    """Wires the constructs; every created resource is an attribute for tests and the local runner."""

    def __init__(self, scope: Construct, construct_id: str, *, stage: StageConfig, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        removal = stage.removal_policy

        # Alarms -> one encrypted topic (a customer-managed key: CloudWatch cannot use aws/sns).
        topic_key = kms.Key(self, "AlarmTopicKey", enable_key_rotation=True, removal_policy=removal)
        topic_key.grant(iam.ServicePrincipal("cloudwatch.amazonaws.com"), "kms:Decrypt", "kms:GenerateDataKey*")
        self.alarm_topic = sns.Topic(self, "AlarmTopic", master_key=topic_key, enforce_ssl=True)
        if stage.alarm_email:
            self.alarm_topic.add_subscription(subs.EmailSubscription(stage.alarm_email))

        # Tables.
        table_opts: dict[str, Any] = {"removal_policy": removal, "deletion_protection": stage.deletion_protection}
        self.idempotency_table = IdempotencyTable(self, "IdempotencyTable", **table_opts).table
        self.orders_table = DataTable(
            self, "OrdersTable", props=DataTableProps(partition_key="order_id", **table_opts)
        ).table
        self.inventory_table = DataTable(self, "InventoryTable", props=DataTableProps(**table_opts)).table
        self.ledger_table = DataTable(
            self, "SandboxLedgerTable", props=DataTableProps(sort_key="sk", **table_opts)
        ).table

        # Layers: Powertools (the version the tests use) and our shared code.
        powertools = PythonPackagesLayer(
            self, "PowertoolsLayer", props=PythonPackagesLayerProps(distributions=LAYER_DISTRIBUTIONS)
        ).layer
        app_code = SourceTreeLayer(
            self,
            "AppCodeLayer",
            props=SourceTreeLayerProps(
                packages=[LAMBDAS_DIR / "shared", LAMBDAS_DIR / "order_domain", LAMBDAS_DIR / "sandbox"],
                description="shared middleware, order domain, sandbox providers",
            ),
        ).layer

        def function(name: str, folder: str, env: dict[str, str], timeout: Duration = STEP_TIMEOUT) -> PipelineFunction:
            return PipelineFunction(
                self,
                name,
                props=PipelineFunctionProps(
                    code_dir=LAMBDAS_DIR / folder,
                    service_name=folder.replace("_", "-"),
                    timeout=timeout,
                    layers=(powertools, app_code),
                    environment=env,
                    removal_policy=removal,
                ),
            )

        ledger_env = {"LEDGER_TABLE_NAME": self.ledger_table.table_name}
        self.payment_provider = function("SandboxPayment", "sandbox_payment", ledger_env)
        self.carrier = function("SandboxCarrier", "sandbox_carrier", ledger_env)
        for provider in (self.payment_provider, self.carrier):
            self.ledger_table.grant(provider.function, *DDB_ITEM_RW)

        base_env = {
            "IDEMPOTENCY_TABLE_NAME": self.idempotency_table.table_name,
            "ORDERS_TABLE_NAME": self.orders_table.table_name,
        }
        inventory_env = {**base_env, "INVENTORY_TABLE_NAME": self.inventory_table.table_name}
        payment_env = {**base_env, "PAYMENT_PROVIDER_FUNCTION": self.payment_provider.function.function_name}
        carrier_env = {**base_env, "CARRIER_FUNCTION": self.carrier.function.function_name}
        self.reserve = function("ReserveInventory", "reserve_inventory", inventory_env)
        self.release = function("ReleaseInventory", "release_inventory", inventory_env)
        self.charge = function("ChargePayment", "charge_payment", payment_env)
        self.refund = function("RefundPayment", "refund_payment", payment_env)
        self.ship = function("ShipOrder", "ship_order", carrier_env)
        self.finalize = function("FinalizeOrder", "finalize_order", base_env)

        steps = (self.reserve, self.release, self.charge, self.refund, self.ship, self.finalize)
        for step in steps:
            self.idempotency_table.grant(step.function, *DDB_ITEM_RW)
            self.orders_table.grant(step.function, *DDB_ITEM_RW)
        for step in (self.reserve, self.release):
            self.inventory_table.grant(step.function, *DDB_TRANSACT)
        for step in (self.charge, self.refund):
            self.payment_provider.grant_invoke_to(step.function)
        self.carrier.grant_invoke_to(self.ship.function)

        self.saga = OrderSaga(
            self,
            "OrderSaga",
            props=OrderSagaProps(
                reserve_inventory=self.reserve.function,
                charge_payment=self.charge.function,
                ship_order=self.ship.function,
                refund_payment=self.refund.function,
                release_inventory=self.release.function,
                finalize_order=self.finalize.function,
                step_timeout=STEP_TIMEOUT,
                removal_policy=removal,
            ),
        )

        self.intake = function(
            "Intake",
            "intake",
            {**base_env, "STATE_MACHINE_ARN": self.saga.state_machine.state_machine_arn},
            INTAKE_TIMEOUT,
        )
        self.idempotency_table.grant(self.intake.function, *DDB_ITEM_RW)
        self.orders_table.grant(self.intake.function, "dynamodb:GetItem", "dynamodb:PutItem")
        self.saga.state_machine.grant_start_execution(self.intake.function)

        self.orders_queue = ResilientQueue(
            self,
            "OrdersQueue",
            props=ResilientQueueProps(
                alarm_topic=self.alarm_topic,
                consumer=self.intake.function,
                consumer_timeout=INTAKE_TIMEOUT,
                max_receive_count=3,
                batch_size=10,
                removal_policy=removal,
            ),
        )

        CfnOutput(self, "OrdersQueueUrl", value=self.orders_queue.queue.queue_url)
        CfnOutput(self, "OrdersDlqUrl", value=self.orders_queue.dlq.queue_url)
        CfnOutput(self, "StateMachineArn", value=self.saga.state_machine.state_machine_arn)
        CfnOutput(self, "OrdersTableName", value=self.orders_table.table_name)
        CfnOutput(self, "IdempotencyTableName", value=self.idempotency_table.table_name)
        CfnOutput(self, "LedgerTableName", value=self.ledger_table.table_name)
        CfnOutput(self, "AlarmTopicArn", value=self.alarm_topic.topic_arn)
