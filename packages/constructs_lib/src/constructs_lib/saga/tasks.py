"""The saga's tasks and retry policies: what a step runs (:class:`LambdaTask`, :class:`ServiceTask`),
how long one attempt may take (for the budget), and how it is retried (:class:`RetryPolicy`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

#: Lambda service faults worth retrying (the errors Step Functions documents for Lambda tasks:
#: https://docs.aws.amazon.com/step-functions/latest/dg/bp-lambda-serviceexception.html).
LAMBDA_SERVICE_ERRORS: tuple[str, ...] = (
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
    "Lambda.ClientExecutionTimeoutException",
)

#: What the step middleware (``lambda_resilience.step.step_handler``) raises for a failure worth
#: retrying: every transient one as ``TransientStepError``, an unexpected one (a bug?) as
#: ``UnknownStepError`` (retried, then caught). Step Functions names a Lambda function error by the
#: ``errorType`` the runtime reports, the exception's class name
#: (https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html,
#: https://docs.aws.amazon.com/lambda/latest/dg/python-exceptions.html).
MIDDLEWARE_STEP_ERRORS: tuple[str, ...] = ("TransientStepError", "UnknownStepError")

#: The saga's default ``retry_on``: Lambda's service errors and what the step middleware raises as
#: transient or unknown (business errors keep their own names and are never in it).
DEFAULT_RETRY_ON: tuple[str, ...] = (*LAMBDA_SERVICE_ERRORS, *MIDDLEWARE_STEP_ERRORS)

#: The saga's default ``refused_input_errors``: what the step middleware raises when the step's ``parse``
#: rejects the execution input (``InvalidStepInput``). Refused at the first step, the execution fails at once;
#: left to the catch-all, every compensation would get the same input, fail, be retried, and park.
DEFAULT_REFUSED_INPUT_ERRORS: tuple[str, ...] = ("InvalidStepInput",)

#: Throttling and server errors of a direct DynamoDB integration: ``DynamoDB.<ErrorName>``, with the
#: ``Exception`` suffix even where DynamoDB's own name lacks it
#: (https://docs.aws.amazon.com/step-functions/latest/dg/supported-services-awssdk.html); the unsuffixed
#: ``DynamoDB.RequestLimitExceeded`` is kept for an engine that does not add it.
DYNAMODB_TRANSIENT_ERRORS: tuple[str, ...] = (
    "DynamoDB.ProvisionedThroughputExceededException",
    "DynamoDB.ThrottlingException",
    "DynamoDB.RequestLimitExceededException",
    "DynamoDB.RequestLimitExceeded",
    "DynamoDB.InternalServerErrorException",
)

#: Every error (a catcher or retrier for it must be meant: never on business errors).
STATES_ALL = "States.ALL"

#: Lambda refused the invocation for want of concurrency: nothing ran, so an attempt costs no function time.
#: Waited out by a retrier of its own (``SagaProps.throttle_retry``) rather than the transient errors'.
THROTTLE_ERRORS: tuple[str, ...] = ("Lambda.TooManyRequestsException",)

#: A task state the saga can retry, catch and chain: a ``tasks.*`` state, or a ``sfn.CustomState``
#: holding a ``"Type": "Task"`` (for an integration field the ``tasks`` class does not expose, e.g.
#: ``MessageAttributes`` of ``arn:aws:states:::sqs:sendMessage``).
TaskState = sfn.TaskStateBase | sfn.CustomState

#: A Lambda attempt may spend up to 10 s in a failed Init phase before its invocation, which then
#: re-runs Init within the function timeout: "The Init phase is limited to 10 seconds. If all three
#: tasks do not complete within 10 seconds, Lambda retries the Init phase at the time of the first
#: function invocation with the configured function timeout."
#: https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html
LAMBDA_INIT_SECONDS = 10.0

#: Our allowance, per task attempt, for Step Functions' own latency (scheduling the state, the
#: integration's API call and its answer, the transition, a retrier's wake-up). We found no latency
#: bound in the Step Functions documentation, so this is a documented assumption of ours, not an
#: AWS figure: 2 s per attempt, well above the sub-second transitions of Standard workflows in
#: practice. Raise it with ``SagaProps.state_latency``.
STATE_LATENCY_SECONDS = 2.0


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter.

    Attributes:
        interval: first delay; default 1 s.
        backoff_rate: multiplier; default 2.
        max_attempts: retries after the first try; default 3.
        max_delay: cap on one delay; default 10 s.
    """

    interval: Duration = field(default_factory=lambda: Duration.seconds(1))
    backoff_rate: float = 2.0
    max_attempts: int = 3
    max_delay: Duration = field(default_factory=lambda: Duration.seconds(10))

    def __post_init__(self) -> None:
        if self.max_attempts < 0 or self.backoff_rate < 1:
            raise ValueError("max_attempts must be >= 0 and backoff_rate >= 1")

    def worst_case_seconds(self, step_timeout_seconds: float, overhead_seconds: float = 0.0) -> float:
        """Upper bound of one task's time including all retries (every attempt times out).

        ``overhead_seconds`` is added to each attempt (a Lambda Init phase, Step Functions' latency).
        """
        delays = sum(
            min(self.interval.to_seconds() * self.backoff_rate**n, self.max_delay.to_seconds())
            for n in range(self.max_attempts)
        )
        return (self.max_attempts + 1) * (step_timeout_seconds + overhead_seconds) + delays

    def apply(self, task: TaskState, errors: Sequence[str]) -> None:
        """Add this policy as a retrier on ``task`` for ``errors`` (nothing if there are none)."""
        if not errors:
            return
        task.add_retry(
            errors=list(errors),
            interval=self.interval,
            backoff_rate=self.backoff_rate,
            max_attempts=self.max_attempts,
            max_delay=self.max_delay,
            jitter_strategy=sfn.JitterType.FULL,
        )


def apply_retries(
    task: TaskState,
    policy: RetryPolicy,
    errors: Sequence[str],
    throttle: RetryPolicy | None,
    outage: tuple[RetryPolicy, Sequence[str]] | None = None,
) -> None:
    """``policy`` on ``errors``; with ``throttle``, the :data:`THROTTLE_ERRORS` among them get that retrier
    instead, first; with ``outage`` (a policy and its errors), those errors get that retrier next (Step
    Functions uses the first retrier whose ErrorEquals names the error)."""
    waited = [e for e in THROTTLE_ERRORS if e in errors] if throttle is not None else []
    if throttle is not None and waited:
        throttle.apply(task, waited)
    if outage is not None:
        outage_policy, outage_errors = outage
        down = [e for e in outage_errors if e in errors and e not in waited]
        outage_policy.apply(task, down)
        waited += down
    policy.apply(task, [e for e in errors if e not in waited])


#: Default retry of compensations (any error): 5 retries, 2 s doubling, capped at 30 s.
def default_compensation_retry() -> RetryPolicy:
    return RetryPolicy(interval=Duration.seconds(2), max_attempts=5, max_delay=Duration.seconds(30))


class SagaTask(Protocol):
    """What the saga needs of a task: how to build its state, how long one attempt may take, and
    which errors are transient for it (retried on forward steps and recorders)."""

    @property
    def retry_on(self) -> Sequence[str] | None: ...

    def attempt_seconds(self, where: str) -> float: ...

    def init_seconds(self) -> float: ...

    def build(self, scope: Construct, state_id: str, *, result_path: str) -> TaskState: ...


@dataclass(frozen=True)
class LambdaTask:
    """A Lambda invocation (``payload_response_only``; the function's result goes to the result path).

    Attributes:
        function: the function to invoke.
        timeout: the function's timeout, for the execution budget; default the function's own
            ``timeout`` when it is a ``lambda_.Function`` (an imported function must pass it).
        payload: the invocation payload (``sfn.JsonPath`` values allowed); default the whole state.
        retry_on: errors retried on a forward step / recorder; default the saga's ``retry_on``.
    """

    function: lambda_.IFunction
    timeout: Duration | None = None
    payload: Mapping[str, Any] | None = None
    retry_on: Sequence[str] | None = None

    def attempt_seconds(self, where: str) -> float:
        timeout = self.timeout
        if timeout is None and isinstance(self.function, lambda_.Function):
            timeout = self.function.timeout
        if timeout is None:
            raise ValueError(
                f"{where}: LambdaTask needs timeout= for a function whose timeout the construct cannot read "
                "(an imported function, or one without a timeout): the execution timeout is budgeted from it"
            )
        return timeout.to_seconds()

    def init_seconds(self) -> float:
        """A cold start's failed Init phase before the attempt (:data:`LAMBDA_INIT_SECONDS`)."""
        return LAMBDA_INIT_SECONDS

    def build(self, scope: Construct, state_id: str, *, result_path: str) -> TaskState:
        return tasks.LambdaInvoke(
            scope,
            state_id,
            lambda_function=self.function,
            payload=sfn.TaskInput.from_object(dict(self.payload)) if self.payload is not None else None,
            payload_response_only=True,
            retry_on_service_exceptions=False,  # the saga adds its own retrier (full jitter, budgeted)
            result_path=result_path,
        )


#: ``factory(scope, state_id, result_path=..., task_timeout=...)`` -> the integration's task state.
ServiceTaskFactory = Callable[..., TaskState]


@dataclass(frozen=True)
class ServiceTask:
    """A direct service integration (``arn:aws:states:::dynamodb:updateItem`` and the like).

    Attributes:
        factory: builds the state: ``factory(scope, state_id, result_path=..., task_timeout=...)``;
            pass both through to the ``aws_stepfunctions_tasks`` class (e.g. ``tasks.DynamoUpdateItem``).
        timeout: the longest one attempt may take (the state's ``TimeoutSeconds``, and the budget's
            figure); default 10 s.
        retry_on: errors retried; default none (pass e.g. :data:`DYNAMODB_TRANSIENT_ERRORS`).
    """

    factory: ServiceTaskFactory
    timeout: Duration = field(default_factory=lambda: Duration.seconds(10))
    retry_on: Sequence[str] | None = ()

    def attempt_seconds(self, where: str) -> float:
        return self.timeout.to_seconds()

    def init_seconds(self) -> float:
        """A service integration has no Init phase (its TimeoutSeconds bounds the whole call)."""
        return 0.0

    def build(self, scope: Construct, state_id: str, *, result_path: str) -> TaskState:
        state = self.factory(scope, state_id, result_path=result_path, task_timeout=sfn.Timeout.duration(self.timeout))
        if not isinstance(state, (sfn.TaskStateBase, sfn.CustomState)):
            raise TypeError(f"{state_id}: ServiceTask.factory must return a task state, got {type(state).__name__}")
        return state
