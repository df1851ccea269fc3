"""The one alarm shape this library uses: fire on the first occurrence, tell the topic."""

from __future__ import annotations

from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_sns as sns
from constructs import Construct


def first_occurrence_alarm(
    scope: Construct, construct_id: str, metric: cloudwatch.IMetric, description: str, topic: sns.ITopic
) -> cloudwatch.Alarm:
    """An alarm on ``metric > 0`` over one period (the metric's own), missing data not breaching,
    ALARM and OK actions on ``topic``: what ``ResilienceChecks`` requires of a failure alarm."""
    alarm = cloudwatch.Alarm(
        scope,
        construct_id,
        alarm_description=description,
        metric=metric,
        threshold=0,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluation_periods=1,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
    )
    alarm.add_alarm_action(cw_actions.SnsAction(topic))
    alarm.add_ok_action(cw_actions.SnsAction(topic))
    return alarm
