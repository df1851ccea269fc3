"""An SQS queue that cannot fail silently: DLQ, DLQ alarm, and a partial-batch Lambda consumer.

Composes like aws-solutions-constructs: bring an existing queue (and the DLQ it redrives to) or an
existing DLQ, pass any ``sqs.Queue`` option through ``queue_props`` / ``dead_letter_queue_props``,
attach any ``lambda_.IFunction`` as the consumer, notify any ``sns.ITopic``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from constructs_lib.alarms import arrivals_alarm, first_occurrence_alarm
from constructs_lib.logical_ids import keep_sqs_event_source_id
from constructs_lib.overrides import PassThrough, check_overrides

if TYPE_CHECKING:
    from constructs_lib.monitoring import Monitoring

#: Minimum ratio between a queue's visibility timeout and its consumer's timeout (AWS guidance: 6x).
VISIBILITY_TO_TIMEOUT_RATIO = 6
#: DLQ retention: the SQS maximum, so an operator has two weeks to triage and replay.
DLQ_RETENTION = Duration.days(14)
#: Defaults of the typed props left unset.
DEFAULT_MAX_RECEIVE_COUNT = 3
DEFAULT_RETENTION = Duration.days(4)
DEFAULT_VISIBILITY_WITHOUT_CONSUMER = Duration.seconds(30)
#: SQS's bounds of a queue's MaximumMessageSize ("from 1,024 bytes (1 KiB) up to 1,048,576 bytes
#: (1 MiB)"): https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SetQueueAttributes.html
SQS_MIN_MESSAGE_BYTES = 1_024
SQS_MAX_MESSAGE_BYTES = 1_048_576

#: Options ``ResilientQueue`` sets itself on the source queue, and what to use instead.
_QUEUE_OWNED = {"dead_letter_queue": "existing_dead_letter_queue / dead_letter_queue_props and max_receive_count"}
#: ... and on the DLQ it creates (a DLQ that redrives again would hide messages from the alarm).
_DLQ_OWNED = {"dead_letter_queue": "nothing: a dead-letter queue does not redrive further"}


def _weakens_transport_or_encryption(values: Mapping[str, Any]) -> str | None:
    if values.get("encryption") == sqs.QueueEncryption.UNENCRYPTED:
        return "encryption=UNENCRYPTED (every queue keeps server-side encryption)"
    if values.get("enforce_ssl") is False:
        return "enforce_ssl=False (every queue denies non-TLS access)"
    return None


@dataclass(frozen=True)
class ResilientQueueProps:
    """Props for :class:`ResilientQueue`.

    Attributes:
        alarm_topic: SNS topic (new or existing) the alarms notify on ALARM (never on OK: a deploy would).
        existing_queue: use this queue instead of creating one; it must already redrive to
            ``existing_dead_letter_queue`` (required with it), which gets the alarm. The 6x
            visibility rule cannot be checked on an imported queue (``ResilienceChecks`` still
            checks every queue defined in the stack). Default: a queue is created.
        existing_dead_letter_queue: the DLQ to redrive to (e.g. one shared DLQ) instead of creating
            one. Default: a DLQ is created (14 days, SQS-managed SSE, TLS enforced).
        queue_props: ``sqs.QueueProps`` (or its keyword arguments) merged over the source queue's
            defaults; not with ``existing_queue``; ``dead_letter_queue`` is the construct's own.
            Default none.
        dead_letter_queue_props: the same for the DLQ the construct creates; not with
            ``existing_dead_letter_queue``. Default none.
        consumer: function (new or existing) attached through an event source mapping; default none.
        consumer_timeout: the consumer's timeout; required with ``consumer`` (``IFunction`` does
            not expose its timeout as a concrete value).
        visibility_timeout: default ``6 x consumer_timeout`` (30 s without consumer); a smaller
            value (here or in ``queue_props``) is rejected at synth time.
        max_receive_count: receives before SQS moves a message to the DLQ, 1..1000; default 3.
            Not with ``existing_queue`` (its redrive policy is already set).
        retention_period: source queue retention; default 4 days.
        batch_size: event source batch size; default 10.
        max_batching_window: default none (0 s).
        max_concurrency: event source maximum concurrency (2..1000); default unset.
        max_message_size_bytes: the queue's MaximumMessageSize (1,024..1,048,576): SQS refuses a
            larger message (body plus attributes) at SendMessage, so the producer learns it at once.
            The DLQ created here then gets the SQS maximum, so it holds every message the queue
            accepted plus the dead-letterer's attributes. Not with ``existing_queue``. Default
            unset (SQS's default).
        removal_policy: for the queues created here; default DESTROY (pass RETAIN so a stack
            delete never drops failed messages).
        alarm_on_queue_depth: also alarm when the queue itself holds a message (for queues
            that humans drain); default False.
        max_message_age: also alarm when the oldest message of the queue is older than this
            (``ApproximateAgeOfOldestMessage`` Maximum over 1 minute: a stalled consumer); default none.
        dlq_alarm_description: the DLQ alarm's description; default
            ``"<id>: messages in the dead-letter queue (each failed processing; triage, then replay)"``.
        queue_alarm_description: the queue-depth alarm's description; default
            ``"<id>: messages waiting in the queue"``.
        announce_each_arrival: beside each depth alarm, an arrivals alarm (``DIFF(depth) > 0`` over 1
            minute) that pages for every new message even while the depth alarm is already in ALARM
            (:func:`constructs_lib.alarms.arrivals_alarm`); default True.
        monitoring: the stack's :class:`constructs_lib.monitoring.Monitoring`: the queue, its DLQ and its
            alarms register themselves there (label ``monitoring_label``, default the construct's id);
            default none (register them yourself, or leave them off the dashboard).
        monitoring_label: the queue's label on the dashboard; default the construct's id.
    """

    alarm_topic: sns.ITopic
    existing_queue: sqs.IQueue | None = None
    existing_dead_letter_queue: sqs.IQueue | None = None
    queue_props: PassThrough | None = None
    dead_letter_queue_props: PassThrough | None = None
    consumer: lambda_.IFunction | None = None
    consumer_timeout: Duration | None = None
    visibility_timeout: Duration | None = None
    max_receive_count: int | None = None
    retention_period: Duration | None = None
    batch_size: int = 10
    max_batching_window: Duration | None = None
    max_concurrency: int | None = None
    max_message_size_bytes: int | None = None
    removal_policy: RemovalPolicy = RemovalPolicy.DESTROY
    alarm_on_queue_depth: bool = False
    max_message_age: Duration | None = None
    dlq_alarm_description: str | None = None
    queue_alarm_description: str | None = None
    announce_each_arrival: bool = True
    monitoring: Monitoring | None = None
    monitoring_label: str | None = None

    def __post_init__(self) -> None:
        if (self.consumer is None) != (self.consumer_timeout is None):
            raise ValueError("consumer and consumer_timeout go together")
        if self.existing_queue is not None:
            self._check_existing_queue()
        if self.existing_dead_letter_queue is not None and self.dead_letter_queue_props is not None:
            raise ValueError(
                "existing_dead_letter_queue and dead_letter_queue_props are mutually exclusive: "
                "the DLQ is not created here, so its props cannot apply"
            )
        self._check_ranges()
        self._check_overrides()

    def _check_ranges(self) -> None:
        """Counts and sizes within what SQS and the event source mapping accept."""
        if self.max_receive_count is not None and not 1 <= self.max_receive_count <= 1000:
            raise ValueError(f"max_receive_count must be within 1..1000, got {self.max_receive_count}")
        if not 1 <= self.batch_size <= 10000:
            raise ValueError(f"batch_size must be within 1..10000, got {self.batch_size}")
        if self.batch_size > 10 and (self.max_batching_window is None or self.max_batching_window.to_seconds() < 1):
            raise ValueError("batch_size above 10 needs max_batching_window of at least 1 s (SQS event source rule)")
        if self.max_concurrency is not None and not 2 <= self.max_concurrency <= 1000:
            raise ValueError("max_concurrency must be within 2..1000")
        size = self.max_message_size_bytes
        if size is not None and not SQS_MIN_MESSAGE_BYTES <= size <= SQS_MAX_MESSAGE_BYTES:
            raise ValueError(
                f"max_message_size_bytes must be within {SQS_MIN_MESSAGE_BYTES}..{SQS_MAX_MESSAGE_BYTES}, got {size}"
            )

    def _check_overrides(self) -> None:
        """The queue and DLQ overrides neither weaken transport or encryption nor break the pairing."""
        queue = self.queue_overrides()
        dlq = self.dead_letter_queue_overrides()
        for name, values in (("queue_props", queue), ("dead_letter_queue_props", dlq)):
            weakened = _weakens_transport_or_encryption(values)
            if weakened:
                raise ValueError(f"{name}: {weakened}")
        if queue.get("fifo") and self.existing_dead_letter_queue is None and not dlq.get("fifo"):
            raise ValueError("a FIFO queue needs a FIFO DLQ: set fifo=True in dead_letter_queue_props too")
        visibility = queue.get("visibility_timeout", self.visibility_timeout)
        if self.consumer_timeout is not None and visibility is not None:
            needed = self.consumer_timeout.to_seconds() * VISIBILITY_TO_TIMEOUT_RATIO
            if visibility.to_seconds() < needed:
                raise ValueError(
                    f"visibility_timeout {visibility.to_seconds()} s is below "
                    f"{VISIBILITY_TO_TIMEOUT_RATIO}x the consumer timeout ({needed} s): "
                    "messages would reappear while still being processed"
                )

    def _check_existing_queue(self) -> None:
        if self.queue_props is not None:
            raise ValueError(
                "existing_queue and queue_props are mutually exclusive: the queue is not created here, "
                "so its props cannot apply"
            )
        if self.existing_dead_letter_queue is None:
            raise ValueError(
                "existing_queue needs existing_dead_letter_queue (the DLQ its redrive policy names): "
                "the construct alarms on it"
            )
        for name in ("visibility_timeout", "retention_period", "max_receive_count", "max_message_size_bytes"):
            if getattr(self, name) is not None:
                raise ValueError(f"existing_queue and {name} are mutually exclusive: the queue is not created here")

    def queue_overrides(self) -> dict[str, Any]:
        """``queue_props`` as keyword arguments for ``sqs.Queue`` (validated)."""
        return check_overrides(
            sqs.Queue,
            self.queue_props,
            what="queue_props",
            owned=_QUEUE_OWNED,
            typed={
                "visibility_timeout": self.visibility_timeout,
                "retention_period": self.retention_period,
                "max_message_size_bytes": self.max_message_size_bytes,
            },
        )

    def dead_letter_queue_overrides(self) -> dict[str, Any]:
        """``dead_letter_queue_props`` as keyword arguments for ``sqs.Queue`` (validated)."""
        return check_overrides(
            sqs.Queue, self.dead_letter_queue_props, what="dead_letter_queue_props", owned=_DLQ_OWNED
        )


class ResilientQueue(Construct):
    """Queue + DLQ (14 days) + DLQ depth alarm + optional partial-batch consumer.

    Queues created here use SQS-managed SSE and deny non-TLS access (``queue_props`` may change
    other options, never these). The alarm fires when the DLQ has any visible message in a
    1-minute period (Maximum > 0, 1 evaluation period, missing data not breaching) and notifies
    ``alarm_topic`` on ALARM. The event source reports partial batch failures.

    Attributes:
        queue: the source queue (created, or ``existing_queue``).
        dlq: its dead-letter queue (created, or ``existing_dead_letter_queue``).
        dlq_alarm: the DLQ depth alarm.
        queue_alarm: the queue-depth alarm (``alarm_on_queue_depth``), else None.
        dlq_arrivals_alarm, queue_arrivals_alarm: the arrivals alarms (``announce_each_arrival``; the
            queue's with ``alarm_on_queue_depth`` only), else None.
        event_source: the SQS event source (``None`` without consumer).
        max_receive_count: the redrive policy's maxReceiveCount (None with ``existing_queue``).
    """

    def __init__(self, scope: Construct, construct_id: str, *, props: ResilientQueueProps) -> None:
        super().__init__(scope, construct_id)
        secure: dict[str, Any] = {
            "encryption": sqs.QueueEncryption.SQS_MANAGED,
            "enforce_ssl": True,
            "removal_policy": props.removal_policy,
        }
        self.dlq: sqs.IQueue = self._dead_letter_queue(props, secure)
        self.queue: sqs.IQueue
        self.max_receive_count: int | None
        if props.existing_queue is not None:
            self.queue = props.existing_queue
            self.max_receive_count = None
        else:
            self.max_receive_count = props.max_receive_count or DEFAULT_MAX_RECEIVE_COUNT
            self.queue = self._new_queue(props, secure, self.max_receive_count)

        self.dlq_alarm = self._depth_alarm(
            "DlqDepthAlarm",
            self.dlq,
            props.alarm_topic,
            props.dlq_alarm_description
            or f"{construct_id}: messages in the dead-letter queue (each failed processing; triage, then replay)",
        )
        self.queue_alarm: cloudwatch.Alarm | None = None
        if props.alarm_on_queue_depth:
            self.queue_alarm = self._depth_alarm(
                "QueueDepthAlarm",
                self.queue,
                props.alarm_topic,
                props.queue_alarm_description or f"{construct_id}: messages waiting in the queue",
            )
        self.dlq_arrivals_alarm: cloudwatch.Alarm | None = None
        self.queue_arrivals_alarm: cloudwatch.Alarm | None = None
        if props.announce_each_arrival:
            self._arrivals_alarms(construct_id, props)
        self.age_alarm: cloudwatch.Alarm | None = self._age_alarm(construct_id, props)
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
            keep_sqs_event_source_id(props.consumer, self.queue)
        if props.monitoring is not None:
            alarms = (
                self.dlq_alarm,
                self.dlq_arrivals_alarm,
                self.queue_alarm,
                self.queue_arrivals_alarm,
                self.age_alarm,
            )
            label = props.monitoring_label or construct_id
            props.monitoring.monitor_queue(self.queue, label=label, dlq=self.dlq, alarms=alarms)

    def _dead_letter_queue(self, props: ResilientQueueProps, secure: dict[str, Any]) -> sqs.IQueue:
        if props.existing_dead_letter_queue is not None:
            return props.existing_dead_letter_queue
        dlq_defaults: dict[str, Any] = {"retention_period": DLQ_RETENTION, **secure}
        if props.max_message_size_bytes is not None:  # holds any accepted message + dead-letter attributes
            dlq_defaults["max_message_size_bytes"] = SQS_MAX_MESSAGE_BYTES
        return sqs.Queue(self, "Dlq", **{**dlq_defaults, **props.dead_letter_queue_overrides()})

    def _new_queue(self, props: ResilientQueueProps, secure: dict[str, Any], max_receive_count: int) -> sqs.Queue:
        if props.visibility_timeout is not None:
            visibility = props.visibility_timeout
        elif props.consumer_timeout is not None:
            visibility = Duration.seconds(props.consumer_timeout.to_seconds() * VISIBILITY_TO_TIMEOUT_RATIO)
        else:
            visibility = DEFAULT_VISIBILITY_WITHOUT_CONSUMER
        queue_defaults = {
            "visibility_timeout": visibility,
            "retention_period": props.retention_period or DEFAULT_RETENTION,
            "dead_letter_queue": sqs.DeadLetterQueue(queue=self.dlq, max_receive_count=max_receive_count),
            **secure,
        }
        if props.max_message_size_bytes is not None:
            queue_defaults["max_message_size_bytes"] = props.max_message_size_bytes
        return sqs.Queue(self, "Queue", **{**queue_defaults, **props.queue_overrides()})

    def _age_alarm(self, construct_id: str, props: ResilientQueueProps) -> cloudwatch.Alarm | None:
        """The oldest message waits longer than ``max_message_age`` (none without it)."""
        if props.max_message_age is None:
            return None
        alarm = cloudwatch.Alarm(
            self,
            "OldestMessageAgeAlarm",
            alarm_description=f"{construct_id}: the oldest message waits longer than "
            f"{int(props.max_message_age.to_seconds())} s (a stalled or starved consumer)",
            metric=self.queue.metric_approximate_age_of_oldest_message(period=Duration.minutes(1), statistic="Maximum"),
            threshold=props.max_message_age.to_seconds(),
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        alarm.add_alarm_action(cw_actions.SnsAction(props.alarm_topic))  # no OK action (constructs_lib/alarms.py)
        return alarm

    def _arrivals_alarms(self, construct_id: str, props: ResilientQueueProps) -> None:
        """Each new message in the DLQ (and the queue, with its depth alarm) pages again (decision 0023)."""
        self.dlq_arrivals_alarm = arrivals_alarm(
            self,
            "DlqArrivalsAlarm",
            self._depth(self.dlq),
            f"{construct_id}: another message reached the dead-letter queue",
            props.alarm_topic,
        )
        if props.alarm_on_queue_depth:
            self.queue_arrivals_alarm = arrivals_alarm(
                self,
                "QueueArrivalsAlarm",
                self._depth(self.queue),
                f"{construct_id}: another message is waiting in the queue",
                props.alarm_topic,
            )

    @staticmethod
    def _depth(queue: sqs.IQueue) -> cloudwatch.Metric:
        return queue.metric_approximate_number_of_messages_visible(period=Duration.minutes(1), statistic="Maximum")

    def _depth_alarm(self, name: str, queue: sqs.IQueue, topic: sns.ITopic, description: str) -> cloudwatch.Alarm:
        """Alarm when ``queue`` has a visible message in any 1-minute period; notify ``topic``."""
        return first_occurrence_alarm(self, name, self._depth(queue), description, topic)
