"""DLQ replay: transient failures go back to their source queue, on a schedule and on a DLQ alarm."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from constructs import Construct

import order_domain.env as env
from constructs_lib.logical_ids import TransparentScope, keep_rule_permission_id
from constructs_lib.queue import ResilientQueue
from stacks.order_constructs.functions import OrderFunctionDefaults
from stacks.order_constructs.grants import grant_items, grant_queue

REPLAY_TIMEOUT = Duration.minutes(5)
#: The schedule also backs the replay-on-alarm rule (an alarm's event that fails delivery).
REPLAY_SCHEDULE = Duration.minutes(15)


@dataclass(frozen=True)
class DlqReplayProps:
    """Props for :class:`DlqReplay`.

    Attributes:
        functions: the order functions' defaults.
        failures_table: where intake records transient failures (the function reads it).
        queues: the queues whose DLQ is replayed into them; at least one, no duplicates.
    """

    functions: OrderFunctionDefaults
    failures_table: dynamodb.ITable
    queues: Sequence[ResilientQueue]

    def __post_init__(self) -> None:
        if not self.queues:
            raise ValueError("queues must name at least one queue to replay")
        if len({id(q) for q in self.queues}) != len(self.queues):
            raise ValueError("queues contains a queue twice (its messages would be replayed twice)")


class DlqReplay(TransparentScope):
    """The replay function (``REPLAY_TARGETS``: each DLQ's URL with its source's), run every 15
    minutes and whenever a DLQ alarm goes to ALARM (idempotent consumers make a replay harmless).

    Grants: receive, delete and change visibility on each DLQ, send on its source queue, GetItem on
    the failures table.

    Attributes:
        function: the replay ``PipelineFunction``.
        replay_schedule, replay_on_alarm: the EventBridge rules.
    """

    def __init__(self, scope: Construct, construct_id: str, *, props: DlqReplayProps) -> None:
        super().__init__(scope, construct_id)
        pairs = [(q.dlq, q.queue) for q in props.queues]
        targets_json = Stack.of(self).to_json_string(
            [{"dlq_url": dlq.queue_url, "source_url": src.queue_url} for dlq, src in pairs]
        )
        self.function = props.functions.create(
            self,
            "DlqReplay",
            "dlq_replay",
            {env.FAILURES_TABLE_NAME: props.failures_table.table_name, env.REPLAY_TARGETS: targets_json},
            timeout=REPLAY_TIMEOUT,
            idempotency_metrics=False,
        )
        fn = self.function.function
        for dlq, src in pairs:
            # GetQueueAttributes: a read ends on the DLQ's own counts, not on one empty receive
            # (lambda_resilience.receive).
            grant_queue(
                dlq,
                fn,
                "sqs:ReceiveMessage",
                "sqs:DeleteMessage",
                "sqs:ChangeMessageVisibility",
                "sqs:GetQueueAttributes",
            )
            grant_queue(src, fn, "sqs:SendMessage")
        # UpdateItem: each run's record for `ops dlq history` (lambda_resilience.replay_history).
        grant_items(props.failures_table, fn, "dynamodb:GetItem", "dynamodb:UpdateItem")
        target = targets.LambdaFunction(fn, retry_attempts=2)
        self.replay_schedule = events.Rule(
            self, "ReplaySchedule", schedule=events.Schedule.rate(REPLAY_SCHEDULE), targets=[target]
        )
        alarms: list[cloudwatch.IAlarm] = [q.dlq_alarm for q in props.queues]
        self.replay_on_alarm = events.Rule(
            self,
            "ReplayOnDlqAlarm",
            event_pattern=events.EventPattern(
                source=["aws.cloudwatch"],
                detail_type=["CloudWatch Alarm State Change"],
                resources=[a.alarm_arn for a in alarms],
                detail={"state": {"value": ["ALARM"]}},
            ),
            targets=[target],
        )
        for rule in (self.replay_schedule, self.replay_on_alarm):
            keep_rule_permission_id(rule, fn)
