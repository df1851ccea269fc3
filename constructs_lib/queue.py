"""An SQS queue that cannot fail silently: DLQ, DLQ alarm, and a partial-batch Lambda consumer."""

from __future__ import annotations

from dataclasses import dataclass, field

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from constructs_lib.alarms import first_occurrence_alarm

#: Minimum ratio between a queue's visibility timeout and its consumer's timeout (AWS guidance: 6x).
VISIBILITY_TO_TIMEOUT_RATIO = 6
#: DLQ retention: the SQS maximum, so an operator has two weeks to triage and replay.
DLQ_RETENTION = Duration.days(14)


@dataclass(frozen=True)
class ResilientQueueProps:
    """Props for :class:`ResilientQueue`.

    Attributes:
        alarm_topic: SNS topic the DLQ alarm notifies (ALARM and OK).
        consumer: function to attach through an event source mapping; default none.
        consumer_timeout: the consumer's timeout; required with ``consumer`` (functions do not
            expose their timeout as a concrete value).
        visibility_timeout: default ``6 x consumer_timeout`` (30 s without consumer); a smaller
            value is rejected at synth time.
        max_receive_count: receives before SQS moves a message to the DLQ; default 3.
        retention_period: source queue retention; default 4 days.
        batch_size: event source batch size; default 10.
        max_batching_window: default none (0 s).
        max_concurrency: event source maximum concurrency (2..1000); default unset.
        removal_policy: for both queues; default DESTROY (prod passes RETAIN so a stack
            delete never drops failed messages).
        alarm_on_queue_depth: also alarm when the queue itself holds a message (for queues
            that humans drain, like needs-attention); default False.
    """

    alarm_topic: sns.ITopic
    consumer: lambda_.IFunction | None = None
    consumer_timeout: Duration | None = None
    visibility_timeout: Duration | None = None
    max_receive_count: int = 3
    retention_period: Duration = field(default_factory=lambda: Duration.days(4))
    batch_size: int = 10
    max_batching_window: Duration | None = None
    max_concurrency: int | None = None
    removal_policy: RemovalPolicy = RemovalPolicy.DESTROY
    alarm_on_queue_depth: bool = False

    def __post_init__(self) -> None:
        if (self.consumer is None) != (self.consumer_timeout is None):
            raise ValueError("consumer and consumer_timeout go together")
        if not 1 <= self.max_receive_count <= 1000:
            raise ValueError(f"max_receive_count must be within 1..1000, got {self.max_receive_count}")
        if not 1 <= self.batch_size <= 10000:
            raise ValueError(f"batch_size must be within 1..10000, got {self.batch_size}")
        if self.batch_size > 10 and (self.max_batching_window is None or self.max_batching_window.to_seconds() < 1):
            raise ValueError("batch_size above 10 needs max_batching_window of at least 1 s (SQS event source rule)")
        if self.max_concurrency is not None and not 2 <= self.max_concurrency <= 1000:
            raise ValueError("max_concurrency must be within 2..1000")
        if self.consumer_timeout is not None and self.visibility_timeout is not None:
            needed = self.consumer_timeout.to_seconds() * VISIBILITY_TO_TIMEOUT_RATIO
            if self.visibility_timeout.to_seconds() < needed:
                raise ValueError(
                    f"visibility_timeout {self.visibility_timeout.to_seconds()} s is below "
                    f"{VISIBILITY_TO_TIMEOUT_RATIO}x the consumer timeout ({needed} s): "
                    "messages would reappear while still being processed"
                )


class ResilientQueue(Construct):
    """Queue + DLQ (14 days) + DLQ depth alarm + optional partial-batch consumer.

    Both queues use SQS-managed SSE and deny non-TLS access. The alarm fires when the DLQ has
    any visible message in a 1-minute period (Maximum > 0, 1 evaluation period, missing data
    not breaching) and notifies ``alarm_topic`` on ALARM and OK.

    Attributes:
        queue: the source queue.
        dlq: its dead-letter queue.
        dlq_alarm: the DLQ depth alarm.
        event_source: the SQS event source (``None`` without consumer).
        max_receive_count: the redrive policy's maxReceiveCount.
    """

    def __init__(self, scope: Construct, construct_id: str, *, props: ResilientQueueProps) -> None:
        super().__init__(scope, construct_id)
        if props.visibility_timeout is not None:
            visibility = props.visibility_timeout
        elif props.consumer_timeout is not None:
            visibility = Duration.seconds(props.consumer_timeout.to_seconds() * VISIBILITY_TO_TIMEOUT_RATIO)
        else:
            visibility = Duration.seconds(30)
        self.max_receive_count = props.max_receive_count
        self.dlq = sqs.Queue(
            self,
            "Dlq",
            retention_period=DLQ_RETENTION,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            removal_policy=props.removal_policy,
        )
        self.queue = sqs.Queue(
            self,
            "Queue",
            visibility_timeout=visibility,
            retention_period=props.retention_period,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            dead_letter_queue=sqs.DeadLetterQueue(queue=self.dlq, max_receive_count=props.max_receive_count),
            removal_policy=props.removal_policy,
        )
        self.dlq_alarm = self._depth_alarm("DlqDepthAlarm", self.dlq, props.alarm_topic, "messages in the DLQ")
        self.queue_alarm: cloudwatch.Alarm | None = None
        if props.alarm_on_queue_depth:
            self.queue_alarm = self._depth_alarm("QueueDepthAlarm", self.queue, props.alarm_topic, "messages waiting")

        self.event_source: sources.SqsEventSource | None = None
        if props.consumer is not None:
            self.event_source = sources.SqsEventSource(
                self.queue,
                batch_size=props.batch_size,
                max_batching_window=props.max_batching_window,
                report_batch_item_failures=True,
                max_concurrency=props.max_concurrency,
            )
            props.consumer.add_event_source(self.event_source)

    def _depth_alarm(self, name: str, queue: sqs.Queue, topic: sns.ITopic, what: str) -> cloudwatch.Alarm:
        """Alarm when ``queue`` has a visible message in any 1-minute period; notify ``topic``."""
        return first_occurrence_alarm(
            self,
            name,
            queue.metric_approximate_number_of_messages_visible(period=Duration.minutes(1), statistic="Maximum"),
            f"{self.node.id}/{queue.node.id}: {what} (each is an order needing attention)",
            topic,
        )
