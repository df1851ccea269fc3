"""The one alarm shape this library uses (fire on the first occurrence, tell the topic), and the
function alarms built from it for any function, created here or not."""

from __future__ import annotations

from dataclasses import dataclass, field

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from constructs import Construct

#: Period of the function alarms (one evaluation period: any unexpected error in a minute pages within it).
FUNCTION_ALARM_PERIOD = Duration.minutes(1)
# No alarm of this library notifies on OK: ``PutMetricAlarm`` creates an alarm in INSUFFICIENT_DATA, "the
# alarm is then evaluated and its state is set appropriately. Any actions associated with the new state are then
# executed" (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricAlarm.html): every
# deploy that creates alarms would send one OK notification per alarm. An incident's start is its notification.
#: The middleware's EMF count of failed invocations a workflow handles by design
#: (``lambda_resilience.step.EXPECTED_ERRORS_METRIC``; the product does not import the middleware here).
EXPECTED_ERRORS_METRIC = "ExpectedErrors"


def first_occurrence_alarm(
    scope: Construct, construct_id: str, metric: cloudwatch.IMetric, description: str, topic: sns.ITopic
) -> cloudwatch.Alarm:
    """An alarm on ``metric > 0`` over one period (the metric's own), missing data not breaching,
    an ALARM action on ``topic``: what ``ResilienceChecks`` requires of a failure alarm.

    No OK action (see the note at the top of this module)."""
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
    return alarm


def arrivals_alarm(
    scope: Construct, construct_id: str, depth: cloudwatch.Metric, description: str, topic: sns.ITopic
) -> cloudwatch.Alarm:
    """An alarm on ``DIFF(depth) > 0``: the queue's visible messages grew in the last period.

    A depth alarm already in ALARM says nothing about the next message (CloudWatch notifies on a state
    change only: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html);
    this one returns to OK the period after an arrival, so each later arrival pages again.
    ``NumberOfMessagesSent`` cannot replace it on a DLQ: a message moved there
    by a redrive policy is not counted in it
    (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-available-cloudwatch-metrics.html)."""
    return first_occurrence_alarm(
        scope,
        construct_id,
        cloudwatch.MathExpression(
            expression="DIFF(depth)",
            using_metrics={"depth": depth},
            period=depth.period,
            label="messages arrived (visible messages grew)",
        ),
        description,
        topic,
    )


@dataclass(frozen=True)
class FunctionAlarmsProps:
    """Props for :class:`FunctionAlarms`.

    Attributes:
        function: the function to watch: any ``lambda_.IFunction`` (e.g. ``Function.from_function_arn``).
        alarm_topic: SNS topic (new or existing) notified on ALARM.
        errors_description: what an error of this function means; default
            ``"<function name>: invocations failed"``.
        alarm_on_throttles: also alarm on ``Throttles``; default False.
        throttles_description: default ``"<function name>: invocations throttled (concurrency exhausted)"``.
        period: the alarms' period; default 1 minute.
        expected_errors: the function's own count of failed invocations its caller handles by design
            (business outcomes, retried transient failures; see :func:`expected_errors_metric`). When
            given, the errors alarm pages on ``Errors - FILL(expected, 0) > 0`` (metric math): a
            declined card never pages, a bug, a timeout or a crash does.
    """

    function: lambda_.IFunction
    alarm_topic: sns.ITopic
    errors_description: str | None = None
    alarm_on_throttles: bool = False
    throttles_description: str | None = None
    period: Duration = field(default_factory=lambda: FUNCTION_ALARM_PERIOD)
    expected_errors: cloudwatch.IMetric | None = None

    def __post_init__(self) -> None:
        if self.throttles_description is not None and not self.alarm_on_throttles:
            raise ValueError("throttles_description needs alarm_on_throttles")
        if self.period.to_seconds() < 60 or self.period.to_seconds() % 60:
            raise ValueError("period must be a whole number of minutes (at least 1)")


def add_function_alarms(
    scope: Construct, props: FunctionAlarmsProps, name: str
) -> tuple[cloudwatch.Alarm, cloudwatch.Alarm | None]:
    """``ErrorsAlarm`` (and ``ThrottlesAlarm``) in ``scope``: Sum > 0 in one period, to the topic.
    With ``expected_errors``, the errors alarm watches ``Errors`` minus the expected ones."""
    errors_metric: cloudwatch.IMetric = props.function.metric_errors(period=props.period, statistic="Sum")
    if props.expected_errors is not None:
        errors_metric = cloudwatch.MathExpression(
            expression="errors - FILL(expected, 0)",
            using_metrics={"errors": errors_metric, "expected": props.expected_errors},
            period=props.period,
            label="unexpected errors",
        )
    errors = first_occurrence_alarm(
        scope,
        "ErrorsAlarm",
        errors_metric,
        props.errors_description
        or f"{name}: invocations failed" + (" unexpectedly (not a business outcome)" if props.expected_errors else ""),
        props.alarm_topic,
    )
    throttles = None
    if props.alarm_on_throttles:
        throttles = first_occurrence_alarm(
            scope,
            "ThrottlesAlarm",
            props.function.metric_throttles(period=props.period, statistic="Sum"),
            props.throttles_description or f"{name}: invocations throttled (concurrency exhausted)",
            props.alarm_topic,
        )
    return errors, throttles


def expected_errors_metric(namespace: str, service: str, period: Duration = FUNCTION_ALARM_PERIOD) -> cloudwatch.Metric:
    """The middleware's ``ExpectedErrors`` (Sum) of one Powertools service."""
    return cloudwatch.Metric(
        namespace=namespace,
        metric_name=EXPECTED_ERRORS_METRIC,
        dimensions_map={"service": service},
        statistic="Sum",
        period=period,
    )


class FunctionAlarms(Construct):
    """The alarms :class:`constructs_lib.function.PipelineFunction` gives its own function, for any function.

    Attributes:
        errors_alarm: the ``Errors`` alarm.
        throttles_alarm: the ``Throttles`` alarm, or None without ``alarm_on_throttles``.
    """

    def __init__(self, scope: Construct, construct_id: str, *, props: FunctionAlarmsProps) -> None:
        super().__init__(scope, construct_id)
        self.errors_alarm, self.throttles_alarm = add_function_alarms(self, props, construct_id)


#: CloudWatch allows at most 10 metrics in a metric-math alarm
#: (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Create-alarm-on-metric-math-expression.html):
#: two per function (its invocations and its transient failures).
MAX_OUTAGE_FUNCTIONS = 5
#: "the total evaluation time can be no longer than one day" (EvaluationPeriods x Period, for periods of a minute
#: or more: https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricAlarm.html).
MAX_EVALUATION_SECONDS = 86_400
#: The step middleware's EMF counts (``lambda_resilience.step``): every transient failure of a step, and those of
#: a dependency outside AWS only (a provider's 5xx, timeout or refused connection).
TRANSIENT_FAILURES_METRIC = "TransientFailures"
DEPENDENCY_FAILURES_METRIC = "DependencyFailures"
#: The middleware's counts of operations, not invocations: the invocations making an operation's first call to a
#: dependency, and those of them that failed on it (an operation retried many times counts once in each).
FIRST_CALLS_METRIC = "DependencyFirstCalls"
FIRST_CALL_FAILURES_METRIC = "DependencyFirstCallFailures"


@dataclass(frozen=True)
class TransientShareAlarmProps:
    """Props for :class:`TransientShareAlarm`.

    Attributes:
        functions: ``(function, Powertools service name)`` of each function calling what may go down
            (1..5); its ``failures_metric`` (dimension ``service``) and its ``AWS/Lambda Invocations`` are summed.
        namespace: the functions' metric namespace.
        alarm_topic: notified on ALARM.
        description: what an outage of those functions' dependency means.
        share: pages when transient failures exceed this share of the invocations; default 0.5.
        floor: ... plus this many (a quiet minute's one or two retried failures never page); default 5.
        period: default 1 minute (one evaluation period: an outage pages within a minute).
        failures_metric: the EMF count of failures read (under ``namespace``); default ``TransientFailures`` (every
            transient failure, the function's own throttled AWS calls included). ``DEPENDENCY_FAILURES_METRIC``
            reads a dependency's failures only (``lambda_resilience``'s ``DependencyUnavailable``): an alarm on
            one provider that the functions' own DynamoDB throttling or crashed idempotency records never trip.
        calls_metric: the EMF count (under ``namespace``, dimension ``service``) the failures are a share of; default
            None: the functions' ``AWS/Lambda Invocations`` (unchanged). With ``FIRST_CALLS_METRIC`` and
            ``failures_metric=FIRST_CALL_FAILURES_METRIC`` the alarm counts operations, not invocations: a few
            operations refused on every retry are a few failures, whatever the retries.
        clear_after_periods: ALARM holds until this many periods in a row are below the threshold (``DatapointsToAlarm``
            1 of ``EvaluationPeriods`` this many: "M out of N",
            https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-evaluation.html); the first breaching
            period still alarms at once. Default 1 (unchanged). More keeps a long outage at a low rate, where some
            minutes bring no new operation, one notification instead of one per busy minute.
    """

    functions: tuple[tuple[lambda_.IFunction, str], ...]
    namespace: str
    alarm_topic: sns.ITopic
    description: str
    share: float = 0.5
    floor: int = 5
    period: Duration = field(default_factory=lambda: FUNCTION_ALARM_PERIOD)
    failures_metric: str = TRANSIENT_FAILURES_METRIC
    calls_metric: str | None = None
    clear_after_periods: int = 1

    def __post_init__(self) -> None:
        if self.clear_after_periods < 1 or self.clear_after_periods * self.period.to_seconds() > MAX_EVALUATION_SECONDS:
            raise ValueError(
                f"clear_after_periods must be at least 1 and its periods at most one day (PutMetricAlarm), "
                f"got {self.clear_after_periods}"
            )
        if not self.failures_metric:
            raise ValueError("failures_metric must name a metric")
        if self.calls_metric is not None and not self.calls_metric:
            raise ValueError("calls_metric must name a metric (or be None: the functions' Invocations)")
        if not 1 <= len(self.functions) <= MAX_OUTAGE_FUNCTIONS:
            raise ValueError(f"functions: 1..{MAX_OUTAGE_FUNCTIONS} (10 metrics per alarm), got {len(self.functions)}")
        if not 0 < self.share < 1:
            raise ValueError(f"share must be within (0, 1), got {self.share}")
        if self.floor < 0:
            raise ValueError(f"floor must be >= 0, got {self.floor}")
        if self.period.to_seconds() < 60 or self.period.to_seconds() % 60:
            raise ValueError("period must be a whole number of minutes (at least 1)")


class TransientShareAlarm(Construct):
    """An outage of what some functions call, as a rate: pages when, in one period, their transient
    (retried) failures (``failures_metric``) exceed ``share`` of their invocations (or ``calls_metric``) plus
    ``floor`` (``failures - share * invocations > floor``, metric math). Each such failure is expected (the
    workflow retries it), a high share of them is not.

    Attributes:
        alarm: the alarm.
    """

    def __init__(self, scope: Construct, construct_id: str, *, props: TransientShareAlarmProps) -> None:
        super().__init__(scope, construct_id)
        using: dict[str, cloudwatch.IMetric] = {}
        # The failures first (inserted first, and first by name): a tool that keeps one metric of a metric-math alarm
        # keeps the first (tools/rehearse.py), and failures > floor is the nearer stand-in.
        for i, (_, service) in enumerate(props.functions):
            using[f"failed{i}"] = cloudwatch.Metric(
                namespace=props.namespace,
                metric_name=props.failures_metric,
                dimensions_map={"service": service},
                statistic="Sum",
                period=props.period,
            )
        for i, (function, service) in enumerate(props.functions):
            using[f"invoked{i}"] = (
                function.metric_invocations(period=props.period, statistic="Sum")
                if props.calls_metric is None
                else cloudwatch.Metric(
                    namespace=props.namespace,
                    metric_name=props.calls_metric,
                    dimensions_map={"service": service},
                    statistic="Sum",
                    period=props.period,
                )
            )
        failed = " + ".join(f"FILL(failed{i}, 0)" for i in range(len(props.functions)))
        calls = " + ".join(f"FILL(invoked{i}, 0)" for i in range(len(props.functions)))
        self.alarm = cloudwatch.Alarm(
            self,
            "Alarm",
            alarm_description=props.description,
            metric=cloudwatch.MathExpression(
                expression=f"({failed}) - {props.share:g} * ({calls})",
                using_metrics=using,
                period=props.period,
                label="transient failures beyond their share of invocations",
            ),
            threshold=props.floor,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=props.clear_after_periods,
            datapoints_to_alarm=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        self.alarm.add_alarm_action(cw_actions.SnsAction(props.alarm_topic))
