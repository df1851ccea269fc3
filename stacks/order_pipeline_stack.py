"""The order pipeline: orders queue -> intake -> saga (reserve, charge, ship; compensations).

The stack only wires the app's constructs (``stacks/order_constructs``); each grants what its
functions use, sets the environment variables it defines (``order_domain.env``) and registers its
queues, functions, alarms and graphs on the one monitoring facade, whose dashboard is built last.

Stage rules (``stacks/order_constructs/stage.py``): with the provider context keys (always in prod)
the charge, refund and ship steps reach real providers over HTTPS and nothing of the sandbox is
deployed (no functions, no ledger table, no sandbox code in the layer); without them (dev only) the
sandbox provider functions stand in. In prod a customer-managed key encrypts the orders table and
every log group, and logs are kept a year.

Logical IDs: every grouping construct is a :class:`constructs_lib.logical_ids.TransparentScope`, so
each resource keeps the logical ID it had when the stack created everything itself (no table,
queue, log group or key is replaced by this layout; tests/infra/test_logical_ids.py).
"""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Duration, Fn, Stack
from constructs import Construct

from constructs_lib.dashboard import DashboardTitles
from constructs_lib.function import PipelineFunction
from constructs_lib.logical_ids import StableLogicalIdStack
from constructs_lib.monitoring import Monitoring, MonitoringProps
from constructs_lib.queue import VISIBILITY_TO_TIMEOUT_RATIO
from order_domain.settings.intake import start_delay_budget_seconds
from stacks.order_constructs.alerting import Alerting, AlertingProps
from stacks.order_constructs.api import OrderApi, OrderApiProps, OrderApiThrottle
from stacks.order_constructs.data import OrderData, OrderDataProps
from stacks.order_constructs.functions import LAMBDAS_DIR, STEP_TIMEOUT, OrderFunctionDefaults, metrics_namespace
from stacks.order_constructs.incident_alarms import add_incident_alarms
from stacks.order_constructs.intake import INTAKE_TIMEOUT, OrderIntake, OrderIntakeProps
from stacks.order_constructs.layers import OrderLayers, OrderLayersProps
from stacks.order_constructs.log_queries import TraceQuery
from stacks.order_constructs.message_sizes import (
    ORDER_ATTRIBUTES_ALLOWANCE_BYTES,
    ORDER_BODY_MAX_BYTES,
    ORDERS_QUEUE_MAX_MESSAGE_BYTES,
)
from stacks.order_constructs.needs_attention import NeedsAttention, NeedsAttentionProps
from stacks.order_constructs.order_saga import OrderSaga, OrderSagaProps
from stacks.order_constructs.providers import OrderProviders, OrderProvidersProps
from stacks.order_constructs.replay import DlqReplay, DlqReplayProps
from stacks.order_constructs.runbooks import Severity, route_alarms
from stacks.order_constructs.stage import StageConfig
from stacks.order_constructs.steps import SagaSteps, SagaStepsProps
from stacks.order_constructs.sweeper import StuckOrderSweeper, StuckOrderSweeperProps
from stacks.order_constructs.webhook import WEBHOOK_PATH, ProviderWebhook, ProviderWebhookProps

__all__ = [
    "LAMBDAS_DIR",
    "ORDERS_QUEUE_MAX_MESSAGE_BYTES",
    "ORDER_ATTRIBUTES_ALLOWANCE_BYTES",
    "ORDER_BODY_MAX_BYTES",
    "OrderPipelineStack",
]

DASHBOARD_TITLES = DashboardTitles(
    dlq_depth="DLQ depth (each is an order needing attention)",
    executions="Saga executions",
    other_alarms="Function, saga and sweeper alarms",
)


class OrderPipelineStack(StableLogicalIdStack):
    """Wires the constructs; every created resource is an attribute for tests and the local runner."""

    def __init__(self, scope: Construct, construct_id: str, *, stage: StageConfig, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.stage = stage
        self.metrics_namespace = metrics_namespace(stage.name)
        self.monitoring = Monitoring(
            self, "Monitoring", props=MonitoringProps(metrics_namespace=self.metrics_namespace, titles=DASHBOARD_TITLES)
        )
        alerting = Alerting(
            self, "Alerting", props=AlertingProps(removal_policy=stage.removal_policy, alarm_email=stage.alarm_email)
        )
        self.alarm_topic, self.alarm_subscription = alerting.topic, alerting.subscription
        self.ticket_topic, self.ticket_subscription = alerting.ticket_topic, alerting.ticket_subscription
        self._data(stage)
        self.layers = OrderLayers(
            self, "Layers", props=OrderLayersProps(with_sandbox=stage.uses_sandbox, otel_layer_arn=stage.otel_layer_arn)
        )
        defaults = OrderFunctionDefaults(
            layers=self.layers.layers,
            monitoring=self.monitoring,
            alarm_topic=self.alarm_topic,
            removal_policy=stage.removal_policy,
            log_retention=stage.log_retention,
            log_encryption_key=self.data_key,
            metrics_namespace=self.metrics_namespace,
        )
        self._providers(stage, defaults)
        self.needs_attention = NeedsAttention(
            self,
            "NeedsAttention",
            props=NeedsAttentionProps(self.alarm_topic, self.monitoring, removal_policy=stage.removal_policy),
        ).queue
        self._saga(stage, defaults)
        self._edges(stage, defaults)
        self._webhook(stage, defaults)
        self._api(stage)
        self.dashboard = self.monitoring.build_dashboard()
        topics = {Severity.PAGE: self.alarm_topic, Severity.TICKET: self.ticket_topic}
        self.runbooks = route_alarms(self, stage.runbook_base_url, topics)
        self.incident_alarms = add_incident_alarms(self, self.runbooks, stage.runbook_base_url, topics)
        self._outputs()

    def _data(self, stage: StageConfig) -> None:
        data = OrderData(
            self,
            "Data",
            props=OrderDataProps(
                removal_policy=stage.removal_policy,
                deletion_protection=stage.deletion_protection,
                customer_managed_key=stage.customer_managed_keys,
                with_ledger=stage.uses_sandbox,
            ),
        )
        self.data_key = data.data_key
        self.idempotency_table, self.orders_table = data.idempotency_table, data.orders_table
        self.inventory_table, self.failures_table = data.inventory_table, data.failures_table
        self.ledger_table = data.ledger_table

    def _providers(self, stage: StageConfig, defaults: OrderFunctionDefaults) -> None:
        self.providers = OrderProviders(
            self,
            "Providers",
            props=OrderProvidersProps(
                functions=defaults,
                payment_api=stage.payment_api,
                carrier_api=stage.carrier_api,
                ledger_table=self.ledger_table,
            ),
        )
        self.payment_api, self.carrier_api = self.providers.payment_api, self.providers.carrier_api
        self.payment_provider, self.carrier = self.providers.payment_provider, self.providers.carrier

    def _saga(self, stage: StageConfig, defaults: OrderFunctionDefaults) -> None:
        steps = SagaSteps(
            self,
            "Steps",
            props=SagaStepsProps(
                functions=defaults,
                idempotency_table=self.idempotency_table,
                orders_table=self.orders_table,
                inventory_table=self.inventory_table,
                providers=self.providers,
                needs_attention_queue=self.needs_attention.queue,
            ),
        )
        self.saga_steps = steps
        self.reserve, self.charge, self.ship = steps.reserve, steps.charge, steps.ship
        self.cancel_shipment, self.refund, self.release = steps.cancel_shipment, steps.refund, steps.release
        self.finalize = steps.finalize
        self.provider_outage_alarms = steps.provider_outage_alarms
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
                removal_policy=stage.removal_policy,
                log_retention=stage.log_retention,
                log_encryption_key=self.data_key,
                log_level=stage.saga_log_level,
                include_execution_data=stage.saga_execution_data,
                log_group_class=stage.saga_log_class,
                log_group_name=f"/aws/vendedlogs/states/{self.stack_name}-order-saga",
                alarm_topic=self.alarm_topic,
                monitoring=self.monitoring,
            ),
        )

    def _edges(self, stage: StageConfig, defaults: OrderFunctionDefaults) -> None:
        """Intake in front of the saga, the DLQ replay and the stuck-order sweeper behind it."""
        machine = self.saga.state_machine
        intake = OrderIntake(
            self,
            "OrderIntake",
            props=OrderIntakeProps(
                functions=defaults,
                idempotency_table=self.idempotency_table,
                orders_table=self.orders_table,
                failures_table=self.failures_table,
                state_machine=machine,
                throttle_backoff=stage.intake_throttle_backoff,
            ),
        )
        self.intake, self.orders_queue = intake.function, intake.orders_queue
        replay = DlqReplay(
            self,
            "Replay",
            props=DlqReplayProps(functions=defaults, failures_table=self.failures_table, queues=(self.orders_queue,)),
        )
        self.dlq_replay, self.replay_schedule, self.replay_on_alarm = (
            replay.function,
            replay.replay_schedule,
            replay.replay_on_alarm,
        )
        sweeper = StuckOrderSweeper(
            self,
            "StuckOrders",
            props=StuckOrderSweeperProps(
                functions=defaults,
                orders_table=self.orders_table,
                state_machine=machine,
                saga_timeout=self.saga.timeout,
                needs_attention_queue=self.needs_attention.queue,
                providers=self.providers,
                stuck_after_minutes=stage.stuck_after_minutes,
                start_delay=Duration.seconds(
                    # the orders queue's visibility timeout: the queue construct's default ratio
                    start_delay_budget_seconds(
                        visibility_timeout_seconds=VISIBILITY_TO_TIMEOUT_RATIO * INTAKE_TIMEOUT.to_seconds()
                    )
                ),
            ),
        )
        self.sweeper, self.sweep_rule = sweeper.function, sweeper.sweep_rule
        self.stuck_alarm, self.mismatch_alarm = sweeper.stuck_alarm, sweeper.mismatch_alarm
        self.sweeper_errors_alarm = sweeper.errors_alarm
        self.sweeper_heartbeat_alarm, self.parked_alarm = sweeper.heartbeat_alarm, sweeper.parked_alarm
        self.sweep_deferred_alarm = sweeper.deferred_alarm
        self.intake_capacity_figures = intake.capacity_figures

    def _webhook(self, stage: StageConfig, defaults: OrderFunctionDefaults) -> None:
        """The providers' webhook function and signing secret (its route is added with the API)."""
        self.webhook = ProviderWebhook(
            self,
            "ProviderWebhook",
            props=ProviderWebhookProps(
                functions=defaults,
                orders_table=self.orders_table,
                needs_attention_queue=self.needs_attention.queue,
                signing_secret_arn=stage.webhook_secret_arn,
                removal_policy=stage.removal_policy,
            ),
        )
        self.provider_webhook = self.webhook.function

    def _api(self, stage: StageConfig) -> None:
        """The order API in front of the orders queue and table, throttled at what the pipeline sustains."""
        figures = {**self.intake_capacity_figures, "workflow": "STANDARD"}  # the saga is a Standard workflow
        self.order_api = OrderApi(
            self,
            "OrderApi",
            props=OrderApiProps(
                orders_queue=self.orders_queue.queue,
                orders_table=self.orders_table,
                throttle=OrderApiThrottle.from_capacity(figures, region=Stack.of(self).region),
                monitoring=self.monitoring,
                alarm_topic=self.alarm_topic,
                max_message_bytes=ORDERS_QUEUE_MAX_MESSAGE_BYTES,
                removal_policy=stage.removal_policy,
                log_retention=stage.log_retention,
                log_encryption_key=self.data_key,
                owns_account_log_role=stage.api_account_log_role,
                route_throttles=ProviderWebhook.method_throttle(),
                routes_alarmed_apart=((WEBHOOK_PATH, "POST"),),
            ),
        )
        self.webhook.add_route(self.order_api.api, self.monitoring)

    @property
    def functions(self) -> tuple[PipelineFunction, ...]:
        """Every function of the stack (intake, the steps, the sandbox providers, sweeper, replay, webhook)."""
        return (
            self.intake,
            *self.saga_steps.all,
            *self.providers.functions,
            self.sweeper,
            self.dlq_replay,
            self.provider_webhook,
        )

    def _outputs(self) -> None:
        TraceQuery(self, "TraceQuery", log_groups=[f.log_group for f in self.functions])
        CfnOutput(self, "NeedsAttentionQueueUrl", value=self.needs_attention.queue.queue_url)
        CfnOutput(self, "NeedsAttentionDlqUrl", value=self.needs_attention.dlq.queue_url)
        CfnOutput(self, "InventoryTableName", value=self.inventory_table.table_name)
        CfnOutput(self, "SagaTimeoutSeconds", value=str(int(self.saga.timeout.to_seconds())))
        CfnOutput(self, "FailuresTableName", value=self.failures_table.table_name)
        CfnOutput(self, "LogGroupNames", value=Fn.join(",", [f.log_group.log_group_name for f in self.functions]))
        CfnOutput(self, "OrdersQueueUrl", value=self.orders_queue.queue.queue_url)
        CfnOutput(self, "OrdersDlqUrl", value=self.orders_queue.dlq.queue_url)
        CfnOutput(self, "StateMachineArn", value=self.saga.state_machine.state_machine_arn)
        CfnOutput(self, "OrdersTableName", value=self.orders_table.table_name)
        CfnOutput(self, "IdempotencyTableName", value=self.idempotency_table.table_name)
        if self.ledger_table is not None:
            CfnOutput(self, "LedgerTableName", value=self.ledger_table.table_name)
        CfnOutput(self, "AlarmTopicArn", value=self.alarm_topic.topic_arn)
        CfnOutput(self, "TicketTopicArn", value=self.ticket_topic.topic_arn)
        CfnOutput(self, "OrderApiUrl", value=self.order_api.api.url)
