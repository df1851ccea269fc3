"""Intake: the orders queue and the function that validates each order and starts its saga."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

import order_domain.env as env
from constructs_lib.logical_ids import TransparentScope
from constructs_lib.queue import ResilientQueue, ResilientQueueProps
from order_domain.settings.intake import ORDERS_MAX_RECEIVE_COUNT
from stacks.order_constructs.functions import OrderFunctionDefaults
from stacks.order_constructs.grants import DDB_IDEMPOTENCY, grant_items, grant_queue
from stacks.order_constructs.message_sizes import ORDERS_QUEUE_MAX_MESSAGE_BYTES
from stacks.order_constructs.needs_attention import dlq_alarm_text

INTAKE_TIMEOUT = Duration.seconds(30)
#: Intake's event source MaximumConcurrency (with the throttle backoff): StartExecution refills at
#: 300/s in the largest Regions (https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html,
#: "Quotas related to API action throttling"); at 10 records a batch and ~1 s a batch intake needs ~30
#: concurrent batches to use all of it, x3 for requeue churn = 100. Without a cap the mapping scales by up to 300
#: a minute to 1,000 concurrent batches (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html) and
#: takes the account's Lambda concurrency (1,000 by default:
#: https://docs.aws.amazon.com/lambda/latest/dg/lambda-concurrency.html) from the saga's own functions
#: (TooManyRequestsException). A tighter cap (24) was measured to drain the seeds' spike slower (results.md).
INTAKE_MAX_CONCURRENCY = 100
#: Records per intake invocation (the event source mapping's BatchSize).
INTAKE_BATCH_SIZE = 10
#: Page when the oldest order waits longer than this (a stalled or starved intake). Above the
#: sweeper-free backlog of a normal day, below the stuck-order threshold (220 min, decision 0005).
ORDERS_MAX_MESSAGE_AGE = Duration.minutes(10)


@dataclass(frozen=True)
class OrderIntakeProps:
    """Props for :class:`OrderIntake`.

    Attributes:
        functions: the order functions' defaults.
        idempotency_table, orders_table, failures_table: the tables intake writes.
        state_machine: the saga intake starts.
        throttle_backoff: requeue a throttled record with a delay (``THROTTLE_REQUEUE_QUEUE_URL``,
            ``sqs:SendMessage`` on the orders queue) and cap the event source at
            :data:`INTAKE_MAX_CONCURRENCY`; default True.
    """

    functions: OrderFunctionDefaults
    idempotency_table: dynamodb.ITable
    orders_table: dynamodb.ITable
    failures_table: dynamodb.ITable
    state_machine: sfn.IStateMachine
    throttle_backoff: bool = True


class OrderIntake(TransparentScope):
    """The intake function (alarms on errors and throttles) consuming the orders queue (3 receives,
    batches of 10, partial batch responses) with its DLQ.

    Intake writes attempt 1 of an order (PutItem) or attempt N+1 (conditional UpdateItem), starts the
    saga, sends permanent failures to the DLQ at once and records transient ones for the replay
    function (failures table, UpdateItem).

    Attributes:
        function: the intake ``PipelineFunction``.
        orders_queue: the ``ResilientQueue`` (queue, DLQ, DLQ alarm, event source).
        capacity_figures: what ``ops capacity`` reads of intake in the template (``batch_size``,
            ``maximum_concurrency``, ``reserved_concurrency``), for sizing the order API's throttle.
    """

    def __init__(self, scope: Construct, construct_id: str, *, props: OrderIntakeProps) -> None:
        super().__init__(scope, construct_id)
        functions = props.functions
        self.function = functions.create(
            self,
            "Intake",
            "intake",
            {
                env.IDEMPOTENCY_TABLE_NAME: props.idempotency_table.table_name,
                env.ORDERS_TABLE_NAME: props.orders_table.table_name,
                env.STATE_MACHINE_ARN: props.state_machine.state_machine_arn,
                env.FAILURES_TABLE_NAME: props.failures_table.table_name,
            },
            timeout=INTAKE_TIMEOUT,
            alarm_on_throttles=True,  # throttled intake: orders wait in the queue, then dead-letter
        )
        self._grant_tables(props)
        self.orders_queue = ResilientQueue(
            self,
            "OrdersQueue",
            props=ResilientQueueProps(
                alarm_topic=functions.alarm_topic,
                consumer=self.function.function,
                consumer_timeout=INTAKE_TIMEOUT,
                max_receive_count=ORDERS_MAX_RECEIVE_COUNT,  # AWS: at least 5 for a Lambda consumer
                batch_size=INTAKE_BATCH_SIZE,
                max_concurrency=INTAKE_MAX_CONCURRENCY if props.throttle_backoff else None,
                max_message_size_bytes=ORDERS_QUEUE_MAX_MESSAGE_BYTES,
                removal_policy=functions.removal_policy,
                dlq_alarm_description=dlq_alarm_text("OrdersQueue"),
                max_message_age=ORDERS_MAX_MESSAGE_AGE,
            ),
        )
        functions.monitoring.monitor_queue(
            self.orders_queue.queue,
            label="OrdersQueue",
            dlq=self.orders_queue.dlq,
            alarms=(self.orders_queue.dlq_alarm, self.orders_queue.dlq_arrivals_alarm, self.orders_queue.age_alarm),
        )
        self._wire_queue(props)
        self.capacity_figures: dict[str, int | None] = {
            "batch_size": INTAKE_BATCH_SIZE,
            "maximum_concurrency": INTAKE_MAX_CONCURRENCY if props.throttle_backoff else None,
            "reserved_concurrency": None,
        }

    def _grant_tables(self, props: OrderIntakeProps) -> None:
        fn = self.function.function
        grant_items(props.idempotency_table, fn, *DDB_IDEMPOTENCY)
        # PutItem records attempt 1; UpdateItem records attempt N+1 on the existing order (conditional).
        grant_items(props.orders_table, fn, "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem")
        props.state_machine.grant_start_execution(fn)

    def _wire_queue(self, props: OrderIntakeProps) -> None:
        fn, queue = self.function.function, self.orders_queue
        if props.throttle_backoff:
            # A throttled record is sent again with a delay and acknowledged (lambda_resilience.backoff):
            # a spike turns into latency, never into valid orders in the DLQ (README, "Black Friday").
            fn.add_environment(env.THROTTLE_REQUEUE_QUEUE_URL, queue.queue.queue_url)
            grant_queue(queue.queue, fn, "sqs:SendMessage")
        # Permanent failures go to the DLQ at once; transient ones are recorded for the replay tool.
        fn.add_environment(env.DEAD_LETTER_QUEUE_URL, queue.dlq.queue_url)
        grant_queue(queue.dlq, fn, "sqs:SendMessage")
        grant_items(props.failures_table, fn, "dynamodb:UpdateItem")
