"""The saga's step functions: reserve / release inventory, charge / refund, ship / cancel, finalize.

Each step gets the environment its settings read (``order_domain.env``) and the grants its code
uses (:mod:`stacks.order_constructs.grants`); the providers' part comes from
:class:`stacks.order_constructs.providers.OrderProviders`.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_sqs as sqs
from constructs import Construct

import order_domain.env as env
from constructs_lib.alarms import TransientShareAlarm, TransientShareAlarmProps
from constructs_lib.function import PipelineFunction
from constructs_lib.logical_ids import TransparentScope
from stacks.order_constructs.functions import METRICS_NAMESPACE, OrderFunctionDefaults
from stacks.order_constructs.grants import DDB_IDEMPOTENCY, DDB_INVENTORY, DDB_ORDER_STEP, grant_items, grant_queue
from stacks.order_constructs.providers import OrderProviders


@dataclass(frozen=True)
class SagaStepsProps:
    """Props for :class:`SagaSteps`.

    Attributes:
        functions: the order functions' defaults.
        idempotency_table, orders_table, inventory_table: the tables the steps use.
        providers: payment and carrier (real or sandbox).
        needs_attention_queue: where FinalizeOrder announces a parked order.
    """

    functions: OrderFunctionDefaults
    idempotency_table: dynamodb.ITable
    orders_table: dynamodb.ITable
    inventory_table: dynamodb.ITable
    providers: OrderProviders
    needs_attention_queue: sqs.IQueue


class SagaSteps(TransparentScope):
    """Seven functions, each with its idempotency grants and the order's GetItem / UpdateItem (never
    Put or Delete); reserve and release also the inventory table; charge and refund the payment
    provider, ship and cancel the carrier; finalize ``sqs:SendMessage`` on the needs-attention queue.

    Attributes:
        reserve, release, charge, refund, ship, cancel_shipment, finalize: the functions.
        all: the seven, in saga order (forward steps, compensations, finalize).
        provider_outage_alarm: the share of transient failures of the four provider steps (a provider
            outage pages within a minute; docs/decisions/0023).
    """

    def __init__(self, scope: Construct, construct_id: str, *, props: SagaStepsProps) -> None:
        super().__init__(scope, construct_id)
        create = props.functions.create
        base = {
            env.IDEMPOTENCY_TABLE_NAME: props.idempotency_table.table_name,
            env.ORDERS_TABLE_NAME: props.orders_table.table_name,
        }
        inventory = {**base, env.INVENTORY_TABLE_NAME: props.inventory_table.table_name}
        self.reserve = create(self, "ReserveInventory", "reserve_inventory", inventory)
        self.charge = create(self, "ChargePayment", "charge_payment", base)
        self.ship = create(self, "ShipOrder", "ship_order", base)
        self.cancel_shipment = create(self, "CancelShipment", "cancel_shipment", base)
        self.refund = create(self, "RefundPayment", "refund_payment", base)
        self.release = create(self, "ReleaseInventory", "release_inventory", inventory)
        finalize_env = {**base, env.NEEDS_ATTENTION_QUEUE_URL: props.needs_attention_queue.queue_url}
        self.finalize = create(self, "FinalizeOrder", "finalize_order", finalize_env)
        self.all: tuple[PipelineFunction, ...] = (
            self.reserve,
            self.charge,
            self.ship,
            self.cancel_shipment,
            self.refund,
            self.release,
            self.finalize,
        )
        self._grant(props)
        calling = (self.charge, self.refund, self.ship, self.cancel_shipment)
        services = ("charge-payment", "refund-payment", "ship-order", "cancel-shipment")  # their service names
        self.provider_outage_alarm = TransientShareAlarm(
            self,
            "ProviderOutage",
            props=TransientShareAlarmProps(
                functions=tuple((f.function, s) for f, s in zip(calling, services, strict=True)),
                namespace=METRICS_NAMESPACE,
                alarm_topic=props.functions.alarm_topic,
                description="a provider is failing: over half of the provider steps' invocations failed transiently "
                "in a minute (retried, but orders stall and park)",
            ),
        ).alarm
        props.functions.monitoring.add_alarms((self.provider_outage_alarm,))

    def _grant(self, props: SagaStepsProps) -> None:
        grant_queue(props.needs_attention_queue, self.finalize.function, "sqs:SendMessage")
        for step in self.all:
            grant_items(props.idempotency_table, step.function, *DDB_IDEMPOTENCY)
            grant_items(props.orders_table, step.function, *DDB_ORDER_STEP)
        for step in (self.reserve, self.release):
            grant_items(props.inventory_table, step.function, *DDB_INVENTORY)
        for step in (self.charge, self.refund):
            props.providers.connect_payment(step)
        for step in (self.ship, self.cancel_shipment):
            props.providers.connect_carrier(step)
