"""The needs-attention queue: orders whose compensation kept failing; humans drain it."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_sns as sns
from constructs import Construct

from constructs_lib.logical_ids import TransparentScope
from constructs_lib.monitoring import Monitoring
from constructs_lib.queue import ResilientQueue, ResilientQueueProps

#: Kept the SQS maximum: an operator has two weeks to act on a parked order.
RETENTION = Duration.days(14)


def dlq_alarm_text(queue_id: str) -> str:
    """The DLQ alarm description of an order queue (each message is an order needing attention)."""
    return f"{queue_id}/Dlq: messages in the DLQ (each is an order needing attention)"


@dataclass(frozen=True)
class NeedsAttentionProps:
    """Props for :class:`NeedsAttention`.

    Attributes:
        alarm_topic: notified when the queue or its DLQ holds a message.
        monitoring: the facade the queue and its alarms are registered on.
        removal_policy: of the queues; default DESTROY (prod passes RETAIN).
    """

    alarm_topic: sns.ITopic
    monitoring: Monitoring
    removal_policy: RemovalPolicy = RemovalPolicy.DESTROY


class NeedsAttention(TransparentScope):
    """A :class:`constructs_lib.queue.ResilientQueue` (14 days) alarming on its own depth, not only its DLQ's.

    Attributes:
        queue: the ``ResilientQueue`` (``queue.queue``, ``queue.dlq``, its alarms).
    """

    def __init__(self, scope: Construct, construct_id: str, *, props: NeedsAttentionProps) -> None:
        super().__init__(scope, construct_id)
        self.queue = ResilientQueue(
            self,
            "NeedsAttentionQueue",
            props=ResilientQueueProps(
                alarm_topic=props.alarm_topic,
                retention_period=RETENTION,
                alarm_on_queue_depth=True,
                removal_policy=props.removal_policy,
                dlq_alarm_description=dlq_alarm_text("NeedsAttentionQueue"),
                queue_alarm_description=(
                    "NeedsAttentionQueue/Queue: messages waiting (each is an order needing attention)"
                ),
            ),
        )
        props.monitoring.monitor_queue(
            self.queue.queue,
            label="NeedsAttentionQueue",
            dlq=self.queue.dlq,
            alarms=(
                self.queue.dlq_alarm,
                self.queue.dlq_arrivals_alarm,
                self.queue.queue_alarm,
                self.queue.queue_arrivals_alarm,
            ),
        )
