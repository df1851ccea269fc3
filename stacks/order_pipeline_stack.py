"""The order pipeline: orders queue -> intake -> saga (reserve, charge, ship; compensations).

Stage rules (constructs_lib/stage.py): with the provider context keys (always in prod) the charge,
refund and ship steps reach real providers over HTTPS (:class:`constructs_lib.providers.HttpsProvider`)
and nothing of the sandbox is deployed (no functions, no ledger table, no sandbox code in the layer);
without them (dev only) the sandbox provider functions stand in. In prod a customer-managed key
encrypts the orders table and every log group, and logs are kept a year.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk import CfnOutput, Duration, Fn, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subs
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from constructs_lib.alarms import first_occurrence_alarm
from constructs_lib.dashboard import DashboardGraph, DashboardTitles, PipelineDashboard, PipelineDashboardProps
from constructs_lib.encryption import DataEncryptionKey, DataEncryptionKeyProps
from constructs_lib.function import PipelineFunction, PipelineFunctionProps
from constructs_lib.layers import PythonPackagesLayer, PythonPackagesLayerProps, SourceTreeLayer, SourceTreeLayerProps
from constructs_lib.providers import HttpsProvider, HttpsProviderProps
from constructs_lib.queue import ResilientQueue, ResilientQueueProps
from constructs_lib.saga import OrderSaga, OrderSagaProps
from constructs_lib.stage import StageConfig
from constructs_lib.tables import DataTable, DataTableProps, IdempotencyTable

LAMBDAS_DIR = Path(__file__).resolve().parent.parent / "lambdas"
#: The app's metric namespace: POWERTOOLS_METRICS_NAMESPACE of every function, the dashboard, the alarms.
METRICS_NAMESPACE = "OrderPipeline"
#: The middleware package (packages/lambda_resilience), staged into the app code layer.
MIDDLEWARE_PACKAGE_DIR = LAMBDAS_DIR.parent / "packages" / "lambda_resilience" / "src" / "lambda_resilience"
#: What the layers hold (kept here, apart from the wiring, so the list can change on its own).
#: Source packages staged into the app-code layer, in every stage ...
APP_CODE_PACKAGES = (MIDDLEWARE_PACKAGE_DIR, LAMBDAS_DIR / "order_domain")
#: ... and those added only where the sandbox providers are deployed (never in prod).
SANDBOX_CODE_PACKAGES = (LAMBDAS_DIR / "sandbox",)
#: Runtime distributions staged into the Powertools layer (versions from lambdas/requirements.txt).
LAYER_DISTRIBUTIONS = (
    "aws-lambda-powertools",
    "jmespath",
    "typing_extensions",
    "fastjsonschema",
    "jsonpath-ng",
    "urllib3",  # the HTTPS provider adapters (order_domain.https_providers)
    "aws-xray-sdk",  # Powertools Tracer (lambda_resilience.tracing)
    "wrapt",  # the X-Ray SDK's dependency; staged without its C extension (pure-Python fallback)
)
#: Distributions staged without their optional compiled extension.
LAYER_PURE_PYTHON_FALLBACK = ("wrapt",)
STEP_TIMEOUT = Duration.seconds(30)
INTAKE_TIMEOUT = Duration.seconds(30)
#: Intake's event source MaximumConcurrency (with the throttle backoff): StartExecution refills at
#: 300/s; at 10 records a batch and ~1 s a batch intake needs ~30 concurrent batches to use all of
#: it, x3 for requeue churn = 100. Without a cap the mapping ramps to 1,000 and takes the whole
#: account's Lambda concurrency from the saga's own functions (TooManyRequestsException).
INTAKE_MAX_CONCURRENCY = 100
#: The order message contract's body limit (lambdas/order_domain/model.py MAX_BODY_BYTES; a test
#: keeps them equal: the CDK app does not import the Lambda code).
ORDER_BODY_MAX_BYTES = 64 * 1024
#: Room for the message attributes a producer and intake's requeue send with an order: SQS counts
#: every attribute's name, type and value in the message size ("All parts of the message attribute,
#: including Name, Type, and Value, are part of the message size restriction":
#: https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_MessageAttributeValue.html).
#: The correlation ID (at most 128 characters), the requeue and replay counts need under 300 bytes; 4 KiB.
ORDER_ATTRIBUTES_ALLOWANCE_BYTES = 4 * 1024
#: The orders queue's MaximumMessageSize: a body over the contract (plus attributes) is refused at
#: SendMessage, so the producer learns it synchronously; a body the queue still accepts (up to
#: this size) is dead-lettered by intake as permanent, with its category (the DLQ holds 1 MiB).
ORDERS_QUEUE_MAX_MESSAGE_BYTES = ORDER_BODY_MAX_BYTES + ORDER_ATTRIBUTES_ALLOWANCE_BYTES
#: Metrics the sweeper emits (lambdas/sweeper/handler.py) under service=sweeper.
STUCK_ORDERS_METRIC = "StuckOrders"
SIDE_EFFECT_MISMATCHES_METRIC = "SideEffectMismatches"
#: The sweeper reconciles orders that became terminal this recently (three 5-minute sweeps).
SWEEP_RECONCILE_WINDOW_SECONDS = 900
#: A sweep makes provider lookups per order; it stops taking orders 10 s before this and leaves
#: the rest to the next sweep (every 5 minutes).
SWEEPER_TIMEOUT = Duration.minutes(2)


def _dlq_alarm_text(queue_id: str) -> str:
    return f"{queue_id}/Dlq: messages in the DLQ (each is an order needing attention)"


#: Grants by use, each proven by the local run's IAM check (README "Least privilege"). Powertools'
#: idempotency layer: conditional put, read-back, update to COMPLETED, and delete of the in-progress
#: record when the function raises.
DDB_IDEMPOTENCY = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem")
#: Saga steps read the order and move its status with conditional updates; they never put or delete it.
DDB_ORDER_STEP = ("dynamodb:GetItem", "dynamodb:UpdateItem")
#: Reservations: read, transactional put/update (no ConditionCheck items), tombstone put.
DDB_INVENTORY = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem")


DDB_READ_ONLY = frozenset({"dynamodb:GetItem", "dynamodb:Query", "dynamodb:ConditionCheckItem"})
#: What a DynamoDB caller needs on a table's customer-managed key (DynamoDB calls KMS on the caller's
#: behalf, ``kms:ViaService``): named actions, no ``GenerateDataKey*`` / ``ReEncrypt*`` wildcards.
KMS_FOR_DDB_READ = ("kms:Decrypt", "kms:DescribeKey")
KMS_FOR_DDB_WRITE = ("kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey")


def _grant_key_use(table: dynamodb.ITable, grantee: iam.IGrantable, actions: tuple[str, ...]) -> None:
    """With a customer-managed key, DynamoDB callers need the key too: decrypt to read, encrypt to write."""
    key = table.encryption_key
    if key is None:
        return
    kms_actions = KMS_FOR_DDB_READ if set(actions) <= DDB_READ_ONLY else KMS_FOR_DDB_WRITE
    grantee.grant_principal.add_to_principal_policy(
        iam.PolicyStatement(actions=list(kms_actions), resources=[key.key_arn])
    )


def _grant_items(table: dynamodb.ITable, grantee: iam.IGrantable, *actions: str) -> None:
    """Item actions on the table itself only (``Table.grant`` would add ``<arn>/index/*``)."""
    grantee.grant_principal.add_to_principal_policy(
        iam.PolicyStatement(actions=list(actions), resources=[table.table_arn])
    )
    _grant_key_use(table, grantee, actions)


def _grant_queue(queue: sqs.IQueue, grantee: iam.IGrantable, *actions: str) -> None:
    """Named queue actions only: CDK's ``grant_send_messages`` / ``grant_consume_messages`` add
    ``GetQueueUrl`` and ``GetQueueAttributes``, which nothing here calls (URLs come from the
    environment). Queues use SQS-managed encryption, so no key grant is needed."""
    grantee.grant_principal.add_to_principal_policy(
        iam.PolicyStatement(actions=list(actions), resources=[queue.queue_arn])
    )


class OrderPipelineStack(Stack):
    """Wires the constructs; every created resource is an attribute for tests and the local runner."""

    def __init__(self, scope: Construct, construct_id: str, *, stage: StageConfig, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        removal = stage.removal_policy

        # Alarms -> one encrypted topic (a customer-managed key: CloudWatch cannot use aws/sns).
        topic_key = kms.Key(self, "AlarmTopicKey", enable_key_rotation=True, removal_policy=removal)
        topic_key.grant(iam.ServicePrincipal("cloudwatch.amazonaws.com"), "kms:Decrypt", "kms:GenerateDataKey*")
        self.alarm_topic = sns.Topic(self, "AlarmTopic", master_key=topic_key, enforce_ssl=True)
        self.alarm_subscription: sns.Subscription | None = None
        if stage.alarm_email:  # always in prod (StageConfig requires it)
            self.alarm_subscription = self.alarm_topic.add_subscription(subs.EmailSubscription(stage.alarm_email))

        # Prod: one customer-managed key (rotated yearly) for order data and every log group.
        self.data_key: kms.IKey | None = None
        if stage.customer_managed_keys:
            self.data_key = DataEncryptionKey(self, "DataKey", props=DataEncryptionKeyProps(removal_policy=removal)).key

        # Tables.
        table_opts: dict[str, Any] = {"removal_policy": removal, "deletion_protection": stage.deletion_protection}
        self.idempotency_table = IdempotencyTable(self, "IdempotencyTable", **table_opts).table
        by_status = dynamodb.GlobalSecondaryIndexProps(
            index_name="by-status",
            partition_key=dynamodb.Attribute(name="status", type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name="updated_at", type=dynamodb.AttributeType.STRING),
            projection_type=dynamodb.ProjectionType.INCLUDE,
            non_key_attributes=["correlation_id"],  # the sweeper logs each stuck order under its ID
        )
        self.orders_table = DataTable(
            self,
            "OrdersTable",
            props=DataTableProps(
                partition_key="order_id",
                encryption_key=self.data_key,
                global_secondary_indexes=(by_status,),
                **table_opts,
            ),
        ).table
        self.inventory_table = DataTable(self, "InventoryTable", props=DataTableProps(**table_opts)).table
        self.failures_table = DataTable(
            self,
            "FailuresTable",
            props=DataTableProps(partition_key="message_id", ttl_attribute="expires_at", **table_opts),
        ).table
        self.ledger_table: dynamodb.ITable | None = None
        if stage.uses_sandbox:
            self.ledger_table = DataTable(
                self,
                "SandboxLedgerTable",
                props=DataTableProps(sort_key="sk", encryption_key=self.data_key, **table_opts),
            ).table

        # Layers: Powertools (the version the tests use) and our shared code.
        powertools = PythonPackagesLayer(
            self,
            "PowertoolsLayer",
            props=PythonPackagesLayerProps(
                distributions=LAYER_DISTRIBUTIONS, pure_python_fallback=LAYER_PURE_PYTHON_FALLBACK
            ),
        ).layer
        # Our shared code; the sandbox package only where the sandbox is deployed (never in prod).
        app_packages = [*APP_CODE_PACKAGES, *(SANDBOX_CODE_PACKAGES if stage.uses_sandbox else ())]
        app_code = SourceTreeLayer(
            self,
            "AppCodeLayer",
            props=SourceTreeLayerProps(
                packages=app_packages,
                description="shared middleware, order domain" + (", sandbox providers" if stage.uses_sandbox else ""),
            ),
        ).layer

        def function(
            name: str,
            folder: str,
            env: dict[str, str],
            timeout: Duration = STEP_TIMEOUT,
            *,
            alarm_on_throttles: bool = False,
            alarm_description: str | None = None,
        ) -> PipelineFunction:
            return PipelineFunction(
                self,
                name,
                props=PipelineFunctionProps(
                    code_dir=LAMBDAS_DIR / folder,
                    service_name=folder.replace("_", "-"),
                    timeout=timeout,
                    layers=(powertools, app_code),
                    environment=env,
                    metrics_namespace=METRICS_NAMESPACE,
                    removal_policy=removal,
                    log_retention=stage.log_retention,
                    log_encryption_key=self.data_key,
                    alarm_topic=self.alarm_topic,
                    alarm_on_throttles=alarm_on_throttles,
                    alarm_description=alarm_description,
                ),
            )

        # Providers: the real ones over HTTPS when configured (always in prod), else the sandbox.
        self.payment_provider: PipelineFunction | None = None
        self.carrier: PipelineFunction | None = None
        self.payment_api: HttpsProvider | None = None
        self.carrier_api: HttpsProvider | None = None
        if stage.payment_api is not None and stage.carrier_api is not None:
            self.payment_api = HttpsProvider(
                self, "PaymentApi", props=HttpsProviderProps(endpoint=stage.payment_api, env_prefix="PAYMENT_API")
            )
            self.carrier_api = HttpsProvider(
                self, "CarrierApi", props=HttpsProviderProps(endpoint=stage.carrier_api, env_prefix="CARRIER_API")
            )
        else:
            assert self.ledger_table is not None
            ledger_env = {"LEDGER_TABLE_NAME": self.ledger_table.table_name}
            self.payment_provider = function("SandboxPayment", "sandbox_payment", ledger_env)
            self.carrier = function("SandboxCarrier", "sandbox_carrier", ledger_env)
            # The payment sandbox settles refunds in a transaction and counts requests (Query); the
            # carrier only puts and reads its own records: it cannot rewrite payment ones.
            _grant_items(
                self.ledger_table,
                self.payment_provider.function,
                "dynamodb:GetItem",
                "dynamodb:PutItem",
                "dynamodb:UpdateItem",
                "dynamodb:Query",
            )
            _grant_items(self.ledger_table, self.carrier.function, "dynamodb:GetItem", "dynamodb:PutItem")

        # Orders whose compensation kept failing land here; humans drain it, so it alarms on depth.
        self.needs_attention = ResilientQueue(
            self,
            "NeedsAttentionQueue",
            props=ResilientQueueProps(
                alarm_topic=self.alarm_topic,
                retention_period=Duration.days(14),
                alarm_on_queue_depth=True,
                removal_policy=removal,
                dlq_alarm_description=_dlq_alarm_text("NeedsAttentionQueue"),
                queue_alarm_description=(
                    "NeedsAttentionQueue/Queue: messages waiting (each is an order needing attention)"
                ),
            ),
        )

        base_env = {
            "IDEMPOTENCY_TABLE_NAME": self.idempotency_table.table_name,
            "ORDERS_TABLE_NAME": self.orders_table.table_name,
        }
        inventory_env = {**base_env, "INVENTORY_TABLE_NAME": self.inventory_table.table_name}
        payment_env = dict(base_env)
        carrier_env = dict(base_env)
        if self.payment_provider is not None and self.carrier is not None:
            payment_env["PAYMENT_PROVIDER_FUNCTION"] = self.payment_provider.function.function_name
            carrier_env["CARRIER_FUNCTION"] = self.carrier.function.function_name
        self.reserve = function("ReserveInventory", "reserve_inventory", inventory_env)
        self.release = function("ReleaseInventory", "release_inventory", inventory_env)
        self.charge = function("ChargePayment", "charge_payment", payment_env)
        self.refund = function("RefundPayment", "refund_payment", payment_env)
        self.ship = function("ShipOrder", "ship_order", carrier_env)
        self.cancel_shipment = function("CancelShipment", "cancel_shipment", carrier_env)
        self.finalize = function(
            "FinalizeOrder",
            "finalize_order",
            {**base_env, "NEEDS_ATTENTION_QUEUE_URL": self.needs_attention.queue.queue_url},
        )
        _grant_queue(self.needs_attention.queue, self.finalize.function, "sqs:SendMessage")

        steps = (self.reserve, self.release, self.charge, self.refund, self.ship, self.cancel_shipment, self.finalize)
        for step in steps:
            _grant_items(self.idempotency_table, step.function, *DDB_IDEMPOTENCY)
            _grant_items(self.orders_table, step.function, *DDB_ORDER_STEP)
        for step in (self.reserve, self.release):
            _grant_items(self.inventory_table, step.function, *DDB_INVENTORY)
        for step, sandbox, api in (
            (self.charge, self.payment_provider, self.payment_api),
            (self.refund, self.payment_provider, self.payment_api),
            (self.ship, self.carrier, self.carrier_api),
            (self.cancel_shipment, self.carrier, self.carrier_api),
        ):
            if api is not None:
                api.grant_to(step.function)
            elif sandbox is not None:
                sandbox.grant_invoke_to(step.function)

        self.saga = OrderSaga(
            self,
            "OrderSaga",
            props=OrderSagaProps(
                reserve_inventory=self.reserve.function,
                charge_payment=self.charge.function,
                ship_order=self.ship.function,
                cancel_shipment=self.cancel_shipment.function,
                refund_payment=self.refund.function,
                release_inventory=self.release.function,
                finalize_order=self.finalize.function,
                orders_table=self.orders_table,
                needs_attention_queue=self.needs_attention.queue,
                step_timeout=STEP_TIMEOUT,
                removal_policy=removal,
                log_retention=stage.log_retention,
                log_encryption_key=self.data_key,
                alarm_topic=self.alarm_topic,
            ),
        )

        throttle_backoff = stage.intake_throttle_backoff
        self.intake = function(
            "Intake",
            "intake",
            {
                **base_env,
                "STATE_MACHINE_ARN": self.saga.state_machine.state_machine_arn,
                "FAILURES_TABLE_NAME": self.failures_table.table_name,
            },
            INTAKE_TIMEOUT,
            alarm_on_throttles=True,  # throttled intake: orders wait in the queue, then dead-letter
        )
        _grant_items(self.idempotency_table, self.intake.function, *DDB_IDEMPOTENCY)
        # PutItem records attempt 1; UpdateItem records attempt N+1 on the existing order (conditional).
        _grant_items(
            self.orders_table, self.intake.function, "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"
        )
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
                max_concurrency=INTAKE_MAX_CONCURRENCY if throttle_backoff else None,
                max_message_size_bytes=ORDERS_QUEUE_MAX_MESSAGE_BYTES,
                removal_policy=removal,
                dlq_alarm_description=_dlq_alarm_text("OrdersQueue"),
            ),
        )
        if throttle_backoff:
            # A throttled record is sent again with a delay and acknowledged (lambda_resilience.backoff):
            # a spike turns into latency, never into valid orders in the DLQ (README, "Black Friday").
            self.intake.function.add_environment("THROTTLE_REQUEUE_QUEUE_URL", self.orders_queue.queue.queue_url)
            _grant_queue(self.orders_queue.queue, self.intake.function, "sqs:SendMessage")
        # Permanent failures go to the DLQ at once; transient ones are recorded for the replay tool.
        self.intake.function.add_environment("DEAD_LETTER_QUEUE_URL", self.orders_queue.dlq.queue_url)
        _grant_queue(self.orders_queue.dlq, self.intake.function, "sqs:SendMessage")
        _grant_items(self.failures_table, self.intake.function, "dynamodb:UpdateItem")

        # DLQ replay: transient failures go back to their source queue, on a schedule and
        # whenever a DLQ alarm goes to ALARM (idempotent consumers make a replay harmless).
        replay_pairs = [(self.orders_queue.dlq, self.orders_queue.queue)]
        self.dlq_replay = function(
            "DlqReplay",
            "dlq_replay",
            {
                "FAILURES_TABLE_NAME": self.failures_table.table_name,
                "REPLAY_TARGETS": self.to_json_string(
                    [{"dlq_url": dlq.queue_url, "source_url": src.queue_url} for dlq, src in replay_pairs]
                ),
            },
            Duration.minutes(5),
        )
        for dlq, src in replay_pairs:
            _grant_queue(
                dlq, self.dlq_replay.function, "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility"
            )
            _grant_queue(src, self.dlq_replay.function, "sqs:SendMessage")
        _grant_items(self.failures_table, self.dlq_replay.function, "dynamodb:GetItem")
        replay_target = targets.LambdaFunction(self.dlq_replay.function, retry_attempts=2)
        self.replay_schedule = events.Rule(
            self, "ReplaySchedule", schedule=events.Schedule.rate(Duration.minutes(15)), targets=[replay_target]
        )
        self.replay_on_alarm = events.Rule(
            self,
            "ReplayOnDlqAlarm",
            event_pattern=events.EventPattern(
                source=["aws.cloudwatch"],
                detail_type=["CloudWatch Alarm State Change"],
                resources=[self.orders_queue.dlq_alarm.alarm_arn],
                detail={"state": {"value": ["ALARM"]}},
            ),
            targets=[replay_target],
        )

        # Stuck-order sweeper: every 5 minutes, alarm when any order is stuck.
        if stage.stuck_after_minutes * 60 <= self.saga.timeout.to_seconds():
            raise ValueError(
                f"stuck_after_minutes ({stage.stuck_after_minutes}) must exceed the saga timeout "
                f"({int(self.saga.timeout.to_seconds())} s): a retrying saga is not stuck"
            )
        # It finishes or parks stuck orders and reconciles recently terminal ones with the providers'
        # records (lambdas/order_domain/sweeper.py): the order table's index and items, RUNNING
        # executions, the providers' lookups, the needs-attention queue.
        sweeper_env = {
            "ORDERS_TABLE_NAME": self.orders_table.table_name,
            "STUCK_AFTER_SECONDS": str(stage.stuck_after_minutes * 60),
            "RECONCILE_WINDOW_SECONDS": str(SWEEP_RECONCILE_WINDOW_SECONDS),
            "STATE_MACHINE_ARN": self.saga.state_machine.state_machine_arn,
            "NEEDS_ATTENTION_QUEUE_URL": self.needs_attention.queue.queue_url,
        }
        if self.payment_provider is not None and self.carrier is not None:
            sweeper_env["PAYMENT_PROVIDER_FUNCTION"] = self.payment_provider.function.function_name
            sweeper_env["CARRIER_FUNCTION"] = self.carrier.function.function_name
        self.sweeper = function(
            "Sweeper",
            "sweeper",
            sweeper_env,
            SWEEPER_TIMEOUT,
            # A sweeper that fails publishes no StuckOrders at all: its errors alarm says so.
            alarm_description="the stuck-order sweeper is failing (stuck orders would go unreported)",
        )
        self.sweeper.function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["dynamodb:Query"], resources=[f"{self.orders_table.table_arn}/index/by-status"]
            )
        )
        _grant_key_use(self.orders_table, self.sweeper.function, ("dynamodb:Query",))
        _grant_items(self.orders_table, self.sweeper.function, *DDB_ORDER_STEP)
        _grant_queue(self.needs_attention.queue, self.sweeper.function, "sqs:SendMessage")
        self.sweeper.function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["states:ListExecutions"], resources=[self.saga.state_machine.state_machine_arn]
            )
        )
        for sandbox, api in ((self.payment_provider, self.payment_api), (self.carrier, self.carrier_api)):
            if api is not None:
                api.grant_to(self.sweeper.function)
            elif sandbox is not None:
                sandbox.grant_invoke_to(self.sweeper.function)
        self.sweep_rule = events.Rule(
            self,
            "SweepSchedule",
            schedule=events.Schedule.rate(Duration.minutes(5)),
            targets=[targets.LambdaFunction(self.sweeper.function, retry_attempts=2)],
        )
        stuck_orders = cloudwatch.Metric(
            namespace=METRICS_NAMESPACE,
            metric_name=STUCK_ORDERS_METRIC,
            dimensions_map={"service": "sweeper"},
            statistic="Maximum",
            period=Duration.minutes(5),
        )
        self.stuck_alarm = first_occurrence_alarm(
            self,
            "StuckOrdersAlarm",
            stuck_orders,
            f"orders non-terminal for more than {stage.stuck_after_minutes} minutes",
            self.alarm_topic,
        )
        self.mismatch_alarm = first_occurrence_alarm(
            self,
            "SideEffectMismatchAlarm",
            cloudwatch.Metric(
                namespace=METRICS_NAMESPACE,
                metric_name=SIDE_EFFECT_MISMATCHES_METRIC,
                dimensions_map={"service": "sweeper"},
                statistic="Maximum",
                period=Duration.minutes(5),
            ),
            "a COMPLETED or COMPENSATED order whose provider records disagree (see the needs-attention queue)",
            self.alarm_topic,
        )
        assert self.sweeper.errors_alarm is not None
        self.sweeper_errors_alarm = self.sweeper.errors_alarm

        functions = tuple(
            f
            for f in (
                self.intake,
                self.reserve,
                self.charge,
                self.ship,
                self.cancel_shipment,
                self.refund,
                self.release,
                self.finalize,
                self.payment_provider,
                self.carrier,
                self.sweeper,
                self.dlq_replay,
            )
            if f is not None
        )
        self.functions: tuple[PipelineFunction, ...] = functions
        function_alarms = [
            alarm for f in functions for alarm in (f.errors_alarm, f.throttles_alarm) if alarm is not None
        ]

        self.dashboard = PipelineDashboard(
            self,
            "Dashboard",
            props=PipelineDashboardProps(
                queues=[self.orders_queue, self.needs_attention],
                state_machine=self.saga.state_machine,
                metrics_namespace=METRICS_NAMESPACE,
                extra_graphs=[
                    DashboardGraph(
                        "Stuck orders (sweeper): found, finished, parked; side-effect mismatches",
                        [
                            stuck_orders.with_(label="Stuck orders"),
                            *(
                                cloudwatch.Metric(
                                    namespace=METRICS_NAMESPACE,
                                    metric_name=name,
                                    dimensions_map={"service": "sweeper"},
                                    statistic="Sum",
                                    period=Duration.minutes(5),
                                    label=label,
                                )
                                for name, label in (
                                    ("StuckOrdersFinished", "Finished (COMPLETED)"),
                                    ("StuckOrdersParked", "Parked (NEEDS_ATTENTION)"),
                                    (SIDE_EFFECT_MISMATCHES_METRIC, "Side-effect mismatches"),
                                )
                            ),
                        ],
                        label="orders",
                    )
                ],
                titles=DashboardTitles(
                    dlq_depth="DLQ depth (each is an order needing attention)",
                    executions="Saga executions",
                    other_alarms="Function, saga and sweeper alarms",
                ),
                services=[
                    "intake",
                    "reserve-inventory",
                    "charge-payment",
                    "ship-order",
                    "cancel-shipment",
                    "refund-payment",
                    "release-inventory",
                    "finalize-order",
                ],
                alarms=[*function_alarms, *self.saga.alarms.values(), self.stuck_alarm, self.mismatch_alarm],
            ),
        ).dashboard

        CfnOutput(self, "NeedsAttentionQueueUrl", value=self.needs_attention.queue.queue_url)
        CfnOutput(self, "NeedsAttentionDlqUrl", value=self.needs_attention.dlq.queue_url)
        CfnOutput(self, "InventoryTableName", value=self.inventory_table.table_name)
        CfnOutput(self, "SagaTimeoutSeconds", value=str(int(self.saga.timeout.to_seconds())))
        CfnOutput(self, "FailuresTableName", value=self.failures_table.table_name)
        CfnOutput(self, "LogGroupNames", value=Fn.join(",", [f.log_group.log_group_name for f in functions]))
        CfnOutput(self, "OrdersQueueUrl", value=self.orders_queue.queue.queue_url)
        CfnOutput(self, "OrdersDlqUrl", value=self.orders_queue.dlq.queue_url)
        CfnOutput(self, "StateMachineArn", value=self.saga.state_machine.state_machine_arn)
        CfnOutput(self, "OrdersTableName", value=self.orders_table.table_name)
        CfnOutput(self, "IdempotencyTableName", value=self.idempotency_table.table_name)
        if self.ledger_table is not None:
            CfnOutput(self, "LedgerTableName", value=self.ledger_table.table_name)
        CfnOutput(self, "AlarmTopicArn", value=self.alarm_topic.topic_arn)
