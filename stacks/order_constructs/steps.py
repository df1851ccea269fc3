"""The saga's step functions: reserve / release inventory, charge / refund, ship / cancel, finalize.

Each step gets the environment its settings read (``order_domain.env``) and the grants its code
uses (:mod:`stacks.order_constructs.grants`); the providers' part comes from
:class:`stacks.order_constructs.providers.OrderProviders`.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_sqs as sqs
from constructs import Construct

import order_domain.env as env
from constructs_lib.alarms import (
    FIRST_CALL_FAILURES_METRIC,
    FIRST_CALLS_METRIC,
    TransientShareAlarm,
    TransientShareAlarmProps,
)
from constructs_lib.function import PipelineFunction
from constructs_lib.logical_ids import TransparentScope
from stacks.order_constructs.functions import OrderFunctionDefaults
from stacks.order_constructs.grants import DDB_IDEMPOTENCY, DDB_INVENTORY, DDB_ORDER_STEP, grant_items, grant_queue
from stacks.order_constructs.providers import OrderProviders

#: A provider outage pages when more than 2 + half of a minute's operations failed on their first call
#: (decision 0033): 5 operations refused in a minute, all of them, page; 4 never do. make chaos's outage
#: (16 orders in 90 s, at most three minutes) puts at least 6 in one of its minutes, whatever minute it starts in.
OUTAGE_FLOOR = 2
#: ... and returns to OK after this many minutes in a row below it ("M out of N", 1 of 5: issue 41). CloudWatch's
#: windows slide, so a minute's operations can fall in two evaluations: two quiet minutes put up to three windows in
#: a row below the floor; five hold ALARM through them, and clear five minutes after the outage ends.
OUTAGE_CLEAR_AFTER_MINUTES = 5


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
        payment_outage_alarm, carrier_outage_alarm: the share of the operations each provider's steps (charge and
            refund; ship and cancel) sent it that failed on it at their first call (``DependencyFirstCallFailures``
            of ``DependencyFirstCalls``, retries not counted): an outage pages within a minute, and one provider
            failing while the other's alarm is already in ALARM pages too (docs/decisions 0023, 0033).
        provider_outage_alarms: the two.
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
        # Their Powertools service names (the dimension of the middleware's counts).
        payment = ((self.charge, "charge-payment"), (self.refund, "refund-payment"))
        carrier = ((self.ship, "ship-order"), (self.cancel_shipment, "cancel-shipment"))
        self.payment_outage_alarm = self._outage_alarm(props, "PaymentOutage", "the payment provider", payment)
        self.carrier_outage_alarm = self._outage_alarm(props, "CarrierOutage", "the carrier", carrier)
        self.provider_outage_alarms = (self.payment_outage_alarm, self.carrier_outage_alarm)
        props.functions.monitoring.add_alarms(self.provider_outage_alarms)

    def _outage_alarm(
        self, props: SagaStepsProps, construct_id: str, provider: str, steps: tuple[tuple[PipelineFunction, str], ...]
    ) -> cloudwatch.Alarm:
        """One provider's outage alarm: its own, so a second provider's outage is announced while the first's
        alarm is still in ALARM (CloudWatch notifies on a state change only)."""
        return TransientShareAlarm(
            self,
            construct_id,
            props=TransientShareAlarmProps(
                functions=tuple((f.function, service) for f, service in steps),
                namespace=props.functions.metrics_namespace,
                alarm_topic=props.functions.alarm_topic,
                description=f"{provider} is failing: over half of the operations its steps sent it in a minute "
                "failed on their first call (retried, but orders stall and park)",
                # Operations, not invocations (decision 0033): each operation's first call (its intent newly
                # recorded) and whether the provider failed it. The steps' throttled DynamoDB calls and idempotency
                # records in progress after a crash are no outage of the provider, nor is one key refused on
                # every retry (issue 41).
                failures_metric=FIRST_CALL_FAILURES_METRIC,
                calls_metric=FIRST_CALLS_METRIC,
                floor=OUTAGE_FLOOR,
                # A long outage at a low rate has minutes without a new operation: ALARM holds through them (it
                # clears after five quiet minutes in a row), one notification instead of one per busy minute.
                clear_after_periods=OUTAGE_CLEAR_AFTER_MINUTES,
            ),
        ).alarm

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
