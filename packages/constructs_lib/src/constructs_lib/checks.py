"""Synth-time resilience checks, as a CDK Aspect over the synthesized L1 resources.

Why hand-written: cdk-nag's AwsSolutions-SQS3 only checks that a queue has *a* DLQ; no
published rule pack checks that every DLQ is alarmed or that a queue's visibility timeout
covers 6x its consumer's timeout, which is what stops duplicate deliveries mid-processing;
nor that every Lambda function and state machine has an alarm on its failures that reaches
someone (cdk-nag's CloudWatch rules look at alarms that exist, not at what lacks one).

An alarm counts when it fires on the first failure (``> 0`` or ``>= 1``), names the resource in
its ``FunctionName`` / ``StateMachineArn`` dimension (a ``Ref`` to it), and has an ALARM action on an
SNS topic (a topic of this stack, or an ``arn:...:sns:...`` string). A metric-math alarm counts when
one of its metrics is that metric (``Errors - ExpectedErrors``).

A function whose errors alarm subtracts ``ExpectedErrors`` is on the step middleware: its environment must
name the alarm's namespace and service, and every task invoking it must retry what the middleware raises
(:mod:`constructs_lib.checks_middleware`).

Every alarm action on a topic of this stack must be deliverable: the topic policy and the topic's
key policy must let ``cloudwatch.amazonaws.com`` publish for that alarm (:mod:`constructs_lib.delivery`).

Each finding is an error annotation on the offending resource, so ``cdk synth`` fails.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jsii
from aws_cdk import Annotations, IAspect, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import IConstruct

from constructs_lib.cfn_reads import alarm_metrics as _alarm_metrics
from constructs_lib.cfn_reads import get as _get
from constructs_lib.cfn_reads import ref_target as _ref_target
from constructs_lib.checks_middleware import check_middleware_defaults
from constructs_lib.delivery import alarm_topics, undeliverable_reason
from constructs_lib.queue import VISIBILITY_TO_TIMEOUT_RATIO

SQS_DEFAULT_VISIBILITY_SECONDS = 30
LAMBDA_DEFAULT_TIMEOUT_SECONDS = 3

MISSING_DLQ = "ResilienceChecks: queue has no dead-letter queue (RedrivePolicy)"
MISSING_ALARM = (
    "ResilienceChecks: dead-letter queue has no alarm on ApproximateNumberOfMessagesVisible > 0 "
    "within 60 s that notifies someone"
)
SHORT_VISIBILITY = "ResilienceChecks: visibility timeout is below 6x the consuming function's timeout"
MISSING_FUNCTION_ALARM = (
    "ResilienceChecks: function has no alarm on its Errors (AWS/Lambda Errors > 0 on its FunctionName) "
    "with an ALARM action on an SNS topic"
)
MISSING_STATE_MACHINE_ALARM = (
    "ResilienceChecks: state machine has no alarm on ExecutionsFailed (AWS/States ExecutionsFailed > 0 "
    "on its StateMachineArn) with an ALARM action on an SNS topic"
)
UNDELIVERABLE_ACTION = "ResilienceChecks: alarm action cannot be delivered (AWS would refuse it)"
#: (namespace, metric, dimension) of the failure alarm each resource type needs.
FUNCTION_FAILURE_METRIC = ("AWS/Lambda", "Errors", "FunctionName")
STATE_MACHINE_FAILURE_METRIC = ("AWS/States", "ExecutionsFailed", "StateMachineArn")


def _fires_on_first(stack: Stack, alarm: cloudwatch.CfnAlarm) -> bool:
    threshold = stack.resolve(alarm.threshold)
    return (alarm.comparison_operator == "GreaterThanThreshold" and threshold == 0) or (
        alarm.comparison_operator == "GreaterThanOrEqualToThreshold" and threshold == 1
    )


def _notifies_sns(
    stack: Stack, alarm: cloudwatch.CfnAlarm | cloudwatch.CfnCompositeAlarm, topic_ids: set[str], covered: set[str]
) -> bool:
    """An ALARM action on an SNS topic (a ``Ref`` to a topic of this stack, or an SNS topic ARN string), or
    named by a composite alarm that has one (``covered``: one incident, one notification, decision 0030)."""
    if stack.get_logical_id(alarm) in covered:
        return True
    for action in stack.resolve(alarm.alarm_actions) or []:
        if _ref_target(action) in topic_ids:
            return True
        if isinstance(action, str) and action.startswith("arn:") and action.split(":")[2:3] == ["sns"]:
            return True
    return False


def _rule_alarms(rule: Any) -> set[str]:
    """The logical IDs a composite's resolved ``AlarmRule`` reads (``Fn::GetAtt`` / ``Ref`` inside it)."""
    if isinstance(rule, dict):
        if "Fn::GetAtt" in rule:
            return {str(rule["Fn::GetAtt"][0])}
        return set().union(*(_rule_alarms(v) for v in rule.values())) if rule else set()
    if isinstance(rule, list):
        return set().union(*(_rule_alarms(v) for v in rule)) if rule else set()
    return set()


def _alarmed_targets(stack: Stack, found: _StackResources, metric: tuple[str, str, str]) -> set[str]:
    """Logical IDs named by a first-failure alarm on ``metric`` that notifies an SNS topic."""
    namespace, metric_name, dimension = metric
    targets: set[str] = set()
    for alarm in found.alarms:
        if not _fires_on_first(stack, alarm) or not _notifies_sns(stack, alarm, found.topic_ids, found.covered):
            continue
        for watched in _alarm_metrics(stack, alarm):
            if watched["namespace"] != namespace or watched["metric_name"] != metric_name:
                continue
            for dim in watched["dimensions"] or []:
                if _get(dim, "name") == dimension:
                    target = _ref_target(_get(dim, "value"))
                    if target:
                        targets.add(target)
    return targets


def _check_delivery(
    stack: Stack,
    alarms: list[cloudwatch.CfnAlarm | cloudwatch.CfnCompositeAlarm],
    topics: dict[str, sns.CfnTopic],
    policies: dict[str, list[Any]],
    keys: dict[str, kms.CfnKey],
) -> None:
    """An error on each alarm whose action on a topic of this stack CloudWatch could not deliver."""
    for alarm in alarms:
        for topic_id in alarm_topics(stack, alarm):
            reason = topic_id and undeliverable_reason(stack, alarm, topic_id, topics, policies, keys)
            if reason:
                Annotations.of(alarm).add_error(f"{UNDELIVERABLE_ACTION}: {reason}")


@dataclass
class _StackResources:
    """The resources of one stack the checks read (nested stacks are visited on their own)."""

    queues: dict[str, sqs.CfnQueue] = field(default_factory=dict)
    alarms: list[cloudwatch.CfnAlarm] = field(default_factory=list)
    functions: dict[str, lambda_.CfnFunction] = field(default_factory=dict)
    mappings: list[lambda_.CfnEventSourceMapping] = field(default_factory=list)
    machines: dict[str, sfn.CfnStateMachine] = field(default_factory=dict)
    topic_ids: set[str] = field(default_factory=set)
    topics: dict[str, sns.CfnTopic] = field(default_factory=dict)
    topic_policies: dict[str, list[Any]] = field(default_factory=dict)
    keys: dict[str, kms.CfnKey] = field(default_factory=dict)
    composites: list[cloudwatch.CfnCompositeAlarm] = field(default_factory=list)
    #: Alarms named by a composite alarm that notifies an SNS topic (they may keep no action of their own).
    covered: set[str] = field(default_factory=set)


def _collect(stack: Stack) -> _StackResources:
    found = _StackResources()
    for child in stack.node.find_all():
        if isinstance(child, sqs.CfnQueue):
            found.queues[stack.get_logical_id(child)] = child
        elif isinstance(child, cloudwatch.CfnAlarm):
            found.alarms.append(child)
        elif isinstance(child, lambda_.CfnFunction):
            found.functions[stack.get_logical_id(child)] = child
        elif isinstance(child, lambda_.CfnEventSourceMapping):
            found.mappings.append(child)
        elif isinstance(child, sfn.CfnStateMachine):
            found.machines[stack.get_logical_id(child)] = child
        elif isinstance(child, sns.CfnTopic):
            found.topic_ids.add(stack.get_logical_id(child))
            found.topics[stack.get_logical_id(child)] = child
        elif isinstance(child, sns.CfnTopicPolicy):
            for ref in stack.resolve(child.topics) or []:
                found.topic_policies.setdefault(str(_ref_target(ref)), []).append(stack.resolve(child.policy_document))
        elif isinstance(child, kms.CfnKey):
            found.keys[stack.get_logical_id(child)] = child
        elif isinstance(child, cloudwatch.CfnCompositeAlarm):
            found.composites.append(child)
    _collect_covered(stack, found)
    # Only resources of this stack (nested stacks are visited on their own).
    found.queues = {k: v for k, v in found.queues.items() if Stack.of(v) is stack}
    found.functions = {k: v for k, v in found.functions.items() if Stack.of(v) is stack}
    found.machines = {k: v for k, v in found.machines.items() if Stack.of(v) is stack}
    return found


def _collect_covered(stack: Stack, found: _StackResources) -> None:
    """The alarms a composite that notifies an SNS topic names (they may keep no action of their own)."""
    for composite in found.composites:
        if _notifies_sns(stack, composite, found.topic_ids, set()):
            found.covered |= _rule_alarms(stack.resolve(composite.alarm_rule))


def _check_dlqs(stack: Stack, queues: dict[str, sqs.CfnQueue]) -> set[str]:
    """An error on each queue that is not a DLQ and has no redrive policy; the DLQs' logical IDs."""
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
    return dlq_ids


def _check_dlq_alarms(stack: Stack, found: _StackResources, dlq_ids: set[str]) -> None:
    """An error on each DLQ without a first-occurrence alarm (period <= 60 s) on its visible messages."""
    alarmed: set[str] = set()
    for alarm in found.alarms:
        if alarm.metric_name != "ApproximateNumberOfMessagesVisible" or alarm.namespace != "AWS/SQS":
            continue
        period = stack.resolve(alarm.period)
        notifies = bool(alarm.alarm_actions) or stack.get_logical_id(alarm) in found.covered
        if not _fires_on_first(stack, alarm) or period is None or int(period) > 60 or not notifies:
            continue
        for dim in stack.resolve(alarm.dimensions) or []:
            if _get(dim, "name") == "QueueName":
                target = _ref_target(_get(dim, "value"))
                if target:
                    alarmed.add(target)
    for dlq_id in sorted(dlq_ids - alarmed):
        if dlq_id in found.queues:
            Annotations.of(found.queues[dlq_id]).add_error(MISSING_ALARM)


def _check_visibility(stack: Stack, found: _StackResources) -> None:
    """An error on each consumed queue whose visibility timeout is under 6x its consumer's timeout."""
    for mapping in found.mappings:
        source = _ref_target(stack.resolve(mapping.event_source_arn))
        function_id = _ref_target(stack.resolve(mapping.function_name))
        if source not in found.queues or function_id not in found.functions:
            continue
        queue = found.queues[source]
        visibility = stack.resolve(queue.visibility_timeout)
        visibility_s = int(visibility) if visibility is not None else SQS_DEFAULT_VISIBILITY_SECONDS
        timeout = stack.resolve(found.functions[function_id].timeout)
        timeout_s = int(timeout) if timeout is not None else LAMBDA_DEFAULT_TIMEOUT_SECONDS
        if visibility_s < VISIBILITY_TO_TIMEOUT_RATIO * timeout_s:
            Annotations.of(queue).add_error(
                f"{SHORT_VISIBILITY}: {visibility_s} s < {VISIBILITY_TO_TIMEOUT_RATIO} x {timeout_s} s"
            )


def _check_failure_alarms(stack: Stack, found: _StackResources) -> None:
    """An error on each function and state machine without a failure alarm acting on a topic."""
    alarmed_functions = _alarmed_targets(stack, found, FUNCTION_FAILURE_METRIC)
    for logical_id, function in found.functions.items():
        if logical_id not in alarmed_functions:
            Annotations.of(function).add_error(MISSING_FUNCTION_ALARM)
    alarmed_machines = _alarmed_targets(stack, found, STATE_MACHINE_FAILURE_METRIC)
    for logical_id, machine in found.machines.items():
        if logical_id not in alarmed_machines:
            Annotations.of(machine).add_error(MISSING_STATE_MACHINE_ALARM)


@jsii.implements(IAspect)
class ResilienceChecks:
    """Fails synth when a queue has no DLQ, a DLQ has no alarm, visibility < 6x consumer timeout,
    a Lambda function / state machine has no alarm on its failures that acts on an SNS topic, or the
    defaults do not fit the step middleware (:mod:`constructs_lib.checks_middleware`: an ``ExpectedErrors``
    nothing emits, a task's retries missing ``TransientStepError`` / ``UnknownStepError``)."""

    def visit(self, node: IConstruct) -> None:
        if not isinstance(node, Stack):
            return
        stack = node
        found = _collect(stack)
        dlq_ids = _check_dlqs(stack, found.queues)
        _check_dlq_alarms(stack, found, dlq_ids)
        _check_visibility(stack, found)
        _check_delivery(stack, [*found.alarms, *found.composites], found.topics, found.topic_policies, found.keys)
        _check_failure_alarms(stack, found)
        check_middleware_defaults(stack, found.functions, found.alarms, found.machines)
