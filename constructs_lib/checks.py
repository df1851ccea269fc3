"""Synth-time resilience checks, as a CDK Aspect over the synthesized L1 resources.

Why hand-written: cdk-nag's AwsSolutions-SQS3 only checks that a queue has *a* DLQ; no
published rule pack checks that every DLQ is alarmed or that a queue's visibility timeout
covers 6x its consumer's timeout, which is what stops duplicate deliveries mid-processing.

Each finding is an error annotation on the offending resource, so ``cdk synth`` fails.
"""

from __future__ import annotations

from typing import Any

import jsii
from aws_cdk import Annotations, IAspect, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from constructs import IConstruct

from constructs_lib.queue import VISIBILITY_TO_TIMEOUT_RATIO

SQS_DEFAULT_VISIBILITY_SECONDS = 30
LAMBDA_DEFAULT_TIMEOUT_SECONDS = 3

MISSING_DLQ = "ResilienceChecks: queue has no dead-letter queue (RedrivePolicy)"
MISSING_ALARM = (
    "ResilienceChecks: dead-letter queue has no alarm on ApproximateNumberOfMessagesVisible > 0 "
    "within 60 s that notifies someone"
)
SHORT_VISIBILITY = "ResilienceChecks: visibility timeout is below 6x the consuming function's timeout"


def _ref_target(value: Any) -> str | None:
    """Logical ID behind ``{"Ref": id}`` or ``{"Fn::GetAtt": [id, attr]}``, else None."""
    if isinstance(value, dict):
        if "Ref" in value:
            return str(value["Ref"])
        if "Fn::GetAtt" in value:
            return str(value["Fn::GetAtt"][0])
    return None


def _get(mapping: dict[str, Any], key: str) -> Any:
    """Read a property whether the resolver produced camelCase or PascalCase keys."""
    return mapping.get(key, mapping.get(key[:1].upper() + key[1:]))


@jsii.implements(IAspect)
class ResilienceChecks:
    """Fails synth when a queue has no DLQ, a DLQ has no alarm, or visibility < 6x consumer timeout."""

    def visit(self, node: IConstruct) -> None:
        if not isinstance(node, Stack):
            return
        stack = node
        queues: dict[str, sqs.CfnQueue] = {}
        alarms: list[cloudwatch.CfnAlarm] = []
        functions: dict[str, lambda_.CfnFunction] = {}
        mappings: list[lambda_.CfnEventSourceMapping] = []
        for child in stack.node.find_all():
            if isinstance(child, sqs.CfnQueue):
                queues[stack.get_logical_id(child)] = child
            elif isinstance(child, cloudwatch.CfnAlarm):
                alarms.append(child)
            elif isinstance(child, lambda_.CfnFunction):
                functions[stack.get_logical_id(child)] = child
            elif isinstance(child, lambda_.CfnEventSourceMapping):
                mappings.append(child)
        # Only resources of this stack (nested stacks are visited on their own).
        queues = {k: v for k, v in queues.items() if Stack.of(v) is stack}

        dlq_ids: set[str] = set()
        for queue in queues.values():
            policy = stack.resolve(queue.redrive_policy) if queue.redrive_policy is not None else None
            target = _ref_target(_get(policy, "deadLetterTargetArn")) if isinstance(policy, dict) else None
            if target:
                dlq_ids.add(target)
        for logical_id, queue in queues.items():
            if logical_id in dlq_ids:
                continue
            policy = stack.resolve(queue.redrive_policy) if queue.redrive_policy is not None else None
            if not policy:
                Annotations.of(queue).add_error(MISSING_DLQ)

        alarmed: set[str] = set()
        for alarm in alarms:
            if alarm.metric_name != "ApproximateNumberOfMessagesVisible" or alarm.namespace != "AWS/SQS":
                continue
            threshold = stack.resolve(alarm.threshold)
            period = stack.resolve(alarm.period)
            fires_on_first_message = (alarm.comparison_operator == "GreaterThanThreshold" and threshold == 0) or (
                alarm.comparison_operator == "GreaterThanOrEqualToThreshold" and threshold == 1
            )
            if not fires_on_first_message or period is None or int(period) > 60 or not alarm.alarm_actions:
                continue
            for dim in stack.resolve(alarm.dimensions) or []:
                if _get(dim, "name") == "QueueName":
                    target = _ref_target(_get(dim, "value"))
                    if target:
                        alarmed.add(target)
        for dlq_id in sorted(dlq_ids - alarmed):
            if dlq_id in queues:
                Annotations.of(queues[dlq_id]).add_error(MISSING_ALARM)

        for mapping in mappings:
            source = _ref_target(stack.resolve(mapping.event_source_arn))
            function_id = _ref_target(stack.resolve(mapping.function_name))
            if source not in queues or function_id not in functions:
                continue
            queue = queues[source]
            visibility = stack.resolve(queue.visibility_timeout)
            visibility_s = int(visibility) if visibility is not None else SQS_DEFAULT_VISIBILITY_SECONDS
            timeout = stack.resolve(functions[function_id].timeout)
            timeout_s = int(timeout) if timeout is not None else LAMBDA_DEFAULT_TIMEOUT_SECONDS
            if visibility_s < VISIBILITY_TO_TIMEOUT_RATIO * timeout_s:
                Annotations.of(queue).add_error(
                    f"{SHORT_VISIBILITY}: {visibility_s} s < {VISIBILITY_TO_TIMEOUT_RATIO} x {timeout_s} s"
                )
