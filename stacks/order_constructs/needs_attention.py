"""The needs-attention queue: orders whose compensation kept failing; humans drain it."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
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
        _hold_arrivals(self.queue.queue_arrivals_alarm)
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


#: An arrival holds the needs-attention arrivals alarm in ALARM for this many one-minute periods.
ARRIVAL_HOLD_PERIODS = 10


def _hold_arrivals(alarm: cloudwatch.Alarm | None) -> None:
    """1 of the last 10 one-minute datapoints ("M out of N":
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-evaluation.html): the first arrival
    still alarms within a minute, and the alarm stays in ALARM for 10 minutes, until ParkedOrders (the sweeper's
    count, every 5 minutes, over two sweeps) holds the incident; with 1 of 1 it went back to OK first and
    OrdersAtRisk paged the same park twice (decision 0030). The queue's depth is no bridge: park messages
    outlive the repairs."""
    assert alarm is not None
    cfn = alarm.node.default_child
    assert isinstance(cfn, cloudwatch.CfnAlarm)
    cfn.evaluation_periods = ARRIVAL_HOLD_PERIODS
    cfn.datapoints_to_alarm = 1
