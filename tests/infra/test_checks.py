"""constructs_lib.checks.ResilienceChecks: each synth-time check fires, and stays quiet when satisfied."""

from __future__ import annotations

import re

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Annotations, Match, Matcher

from constructs_lib.checks import MISSING_ALARM, MISSING_DLQ, SHORT_VISIBILITY
from constructs_lib.queue import ResilientQueue, ResilientQueueProps
from tests.infra.conftest import InlineFunctionFactory, SynthResult

STACK = "/ChecksUnderTest"


def _regexp(message: str) -> Matcher:
    return Match.string_like_regexp(re.escape(message))


def _queue_with_dlq(stack: Stack, *, visibility_s: int = 30) -> tuple[sqs.Queue, sqs.Queue]:
    dlq = sqs.Queue(stack, "Dlq", enforce_ssl=True)
    queue = sqs.Queue(
        stack,
        "Queue",
        enforce_ssl=True,
        visibility_timeout=Duration.seconds(visibility_s),
        dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=3),
    )
    return queue, dlq


def _errors_alarm(stack: Stack, fn: lambda_.Function) -> None:
    """What ResilienceChecks requires of every function: an Errors alarm notifying an SNS topic."""
    fn.metric_errors().create_alarm(
        stack,
        f"{fn.node.id}Errors",
        threshold=0,
        evaluation_periods=1,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    ).add_alarm_action(cw_actions.SnsAction(sns.Topic(stack, f"{fn.node.id}Topic")))


def _dlq_alarm(stack: Stack, dlq: sqs.Queue) -> cloudwatch.Alarm:
    return dlq.metric_approximate_number_of_messages_visible(period=Duration.minutes(1)).create_alarm(
        stack,
        "DlqAlarm",
        threshold=0,
        evaluation_periods=1,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    )


def test_checks_queue_without_dlq_is_missing_dlq(checked_stack: Stack) -> None:
    sqs.Queue(checked_stack, "Raw")
    annotations = Annotations.from_stack(checked_stack)
    annotations.has_error(f"{STACK}/Raw/Resource", _regexp(MISSING_DLQ))
    assert len(annotations.find_error("*", Match.any_value())) == 1


def test_checks_dlq_without_alarm_is_missing_alarm(checked_stack: Stack) -> None:
    _queue_with_dlq(checked_stack)
    annotations = Annotations.from_stack(checked_stack)
    annotations.has_error(f"{STACK}/Dlq/Resource", _regexp(MISSING_ALARM))
    # The source queue has its DLQ; the DLQ itself needs none.
    annotations.has_no_error(f"{STACK}/Queue/Resource", Match.any_value())
    annotations.has_no_error("*", _regexp(MISSING_DLQ))


def test_checks_alarm_on_other_queue_is_missing_alarm(checked_stack: Stack) -> None:
    _, _dlq = _queue_with_dlq(checked_stack)
    other = sqs.Queue(checked_stack, "Other", enforce_ssl=True)
    other.metric_approximate_number_of_messages_visible().create_alarm(
        checked_stack, "OtherAlarm", threshold=0, evaluation_periods=1
    )
    annotations = Annotations.from_stack(checked_stack)
    annotations.has_error(f"{STACK}/Dlq/Resource", _regexp(MISSING_ALARM))


def test_checks_short_visibility_for_lambda_consumer(
    checked_stack: Stack, inline_function: InlineFunctionFactory
) -> None:
    queue, dlq = _queue_with_dlq(checked_stack, visibility_s=30)
    _dlq_alarm(checked_stack, dlq)
    consumer = inline_function(checked_stack, "Consumer", 10)
    consumer.add_event_source(sources.SqsEventSource(queue, report_batch_item_failures=True))
    annotations = Annotations.from_stack(checked_stack)
    annotations.has_error(f"{STACK}/Queue/Resource", _regexp(f"{SHORT_VISIBILITY}: 30 s < 6 x 10 s"))
    annotations.has_no_error("*", _regexp(MISSING_ALARM))
    annotations.has_no_error("*", _regexp(MISSING_DLQ))


def test_checks_visibility_exactly_six_times_passes(
    checked_stack: Stack, inline_function: InlineFunctionFactory
) -> None:
    queue, dlq = _queue_with_dlq(checked_stack, visibility_s=60)
    _dlq_alarm(checked_stack, dlq)
    consumer = inline_function(checked_stack, "Consumer", 10)
    _errors_alarm(checked_stack, consumer)
    consumer.add_event_source(sources.SqsEventSource(queue))
    Annotations.from_stack(checked_stack).has_no_error("*", Match.any_value())


def test_checks_default_visibility_vs_default_timeout(
    checked_stack: Stack, inline_function: InlineFunctionFactory
) -> None:
    """Unset values fall back to the service defaults: 30 s visibility vs a 6 s consumer -> 30 < 36."""
    dlq = sqs.Queue(checked_stack, "Dlq")
    queue = sqs.Queue(checked_stack, "Queue", dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=3))
    _dlq_alarm(checked_stack, dlq)
    inline_function(checked_stack, "Consumer", 6).add_event_source(sources.SqsEventSource(queue))
    Annotations.from_stack(checked_stack).has_error(
        f"{STACK}/Queue/Resource", _regexp(f"{SHORT_VISIBILITY}: 30 s < 6 x 6 s")
    )


def test_checks_resilient_queue_is_compliant(checked_stack: Stack, inline_function: InlineFunctionFactory) -> None:
    consumer = inline_function(checked_stack, "Consumer", 30)
    _errors_alarm(checked_stack, consumer)
    ResilientQueue(
        checked_stack,
        "Orders",
        props=ResilientQueueProps(
            alarm_topic=sns.Topic(checked_stack, "Alarms"),
            consumer=consumer,
            consumer_timeout=Duration.seconds(30),
        ),
    )
    annotations = Annotations.from_stack(checked_stack)
    annotations.has_no_error("*", Match.any_value())
    assert annotations.find_error("*", Match.any_value()) == []


def test_checks_pipeline_stack_has_no_errors(dev: SynthResult) -> None:
    """build_app attaches ResilienceChecks to the whole app; the real stack passes all of them."""
    Annotations.from_stack(dev.stack).has_no_error("*", Match.any_value())


def test_checks_useless_dlq_alarm_is_missing_alarm(checked_stack: Stack) -> None:
    _, dlq = _queue_with_dlq(checked_stack)
    dlq.metric_approximate_number_of_messages_visible(period=Duration.days(1)).create_alarm(
        checked_stack,
        "UselessAlarm",
        threshold=1000,
        evaluation_periods=1,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    )
    Annotations.from_stack(checked_stack).has_error(f"{STACK}/Dlq/Resource", _regexp(MISSING_ALARM))
