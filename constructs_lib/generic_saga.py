"""A generic saga: N steps, compensations in reverse, a park state, a budgeted execution timeout.

No application vocabulary lives here: the caller names the states, the business errors and the
outcome recorders. The shape it builds (a Standard workflow)::

    F1 -> F2 -> ... -> Fn -> [completed recorder]                       (happy path)
    Fi fails             -> Ci -> C(i-1) -> ... -> C1 -> [compensated recorder]
    Fi fails with one of its ``skip_compensation_on`` errors
                         -> C(i-1) -> ... -> C1 -> [compensated recorder]
    Cj keeps failing     -> C(j-1)ThenPark -> ... -> C1ThenPark -> [parked recorder] -> Fail
    Cj fails with one of its ``park_at_once_on`` errors -> [parked recorder] -> Fail (no earlier Ci)
    a recorder fails (not ``already_recorded_on``, after its retries) -> [parked recorder] -> Fail
    [parked recorder] fails -> [last resort] -> Fail           (the last resort failing: Fail anyway)
    F1 fails with ``refused_input_errors``   -> Fail (nothing was done, nothing to compensate)
    F1 fails with ``compensate_all_on``      -> Cn -> ... -> C1 (an operator's "undo everything")

Only task states are on the happy path: no Pass, no Choice, no Succeed (a task with no ``Next``
ends the execution), so a completed execution costs one state transition per step plus one per
recorder. Steps without a compensation are skipped in the chains.

Every route to the parked recorder leaves its error at one path, ``compensation_error_path``
(default ``$.compensation_error``): the first failing compensation's error, a recorder's error, or
a ``park_at_once_on`` error. The parked recorder and the last resort read that one path.

Tasks are Lambda invocations (:class:`LambdaTask`) or direct service integrations
(:class:`ServiceTask`, e.g. ``tasks.DynamoUpdateItem`` with a condition expression).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from constructs_lib.alarms import first_occurrence_alarm

#: Lambda service faults worth retrying (the errors Step Functions documents for Lambda tasks:
#: https://docs.aws.amazon.com/step-functions/latest/dg/bp-lambda-serviceexception.html).
LAMBDA_SERVICE_ERRORS: tuple[str, ...] = (
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
    "Lambda.ClientExecutionTimeoutException",
)

#: Throttling and server errors of a direct DynamoDB integration (``DynamoDB.<error code>``).
DYNAMODB_TRANSIENT_ERRORS: tuple[str, ...] = (
    "DynamoDB.ProvisionedThroughputExceededException",
    "DynamoDB.ThrottlingException",
    "DynamoDB.RequestLimitExceeded",
    "DynamoDB.InternalServerErrorException",
)

_ALL = "States.ALL"

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


@dataclass(frozen=True)
class SagaStep:
    """One step of the saga.

    Attributes:
        name: the forward task's state name.
        forward: the forward task.
        compensation: undoes the step (idempotent, whatever state the forward task reached);
            default none (nothing to undo).
        compensation_name: its state name; default ``Undo<name>``.
        result_path: where the forward result goes; default ``$.<name>``.
        compensation_result_path: where the compensation result goes; default ``$.<compensation_name>``.
        skip_compensation_on: business errors of the forward task meaning "this step did nothing":
            its own compensation is skipped, earlier steps are still compensated. Default none.
        park_at_once_on: errors of the compensation meaning "this cannot be undone, and undoing
            the earlier steps would do harm" (e.g. a parcel the carrier will not cancel: never
            refund it): not retried, the earlier compensations are skipped and the saga parks at
            once (the ``parked`` recorder is required). Default none.
        park_when_compensation_fails: the compensation still failing after its retries (any error)
            parks at once too, without the earlier compensations: for an undo whose failure leaves
            the step's effect possibly live (a carrier that did not answer the cancel: the parcel
            may still ship, so refunding it would be harm). Needs the ``parked`` recorder. Default
            False (the earlier compensations still run, then the park).
        retry: the forward task's retry policy; default the saga's ``forward_retry``.
        compensation_retry: the compensation's retry policy (any error); default the saga's.
    """

    name: str
    forward: SagaTask
    compensation: SagaTask | None = None
    compensation_name: str | None = None
    result_path: str | None = None
    compensation_result_path: str | None = None
    skip_compensation_on: Sequence[str] = ()
    park_at_once_on: Sequence[str] = ()
    park_when_compensation_fails: bool = False
    retry: RetryPolicy | None = None
    compensation_retry: RetryPolicy | None = None

    @property
    def undo_name(self) -> str:
        return self.compensation_name or f"Undo{self.name}"


@dataclass(frozen=True)
class SagaRecorder:
    """A task that records an outcome (e.g. a conditional write of the final status).

    Attributes:
        name: its state name.
        task: the task.
        result_path: default ``$.outcome``.
        already_recorded_on: errors meaning "this outcome is already recorded" (a repeat, e.g.
            ``DynamoDB.ConditionalCheckFailedException`` of a conditional write): the execution
            ends as if the write had happened. Default none.
    """

    name: str
    task: SagaTask
    result_path: str = "$.outcome"
    already_recorded_on: Sequence[str] = ()


@dataclass(frozen=True)
class SagaProps:
    """Props for :class:`Saga`.

    Attributes:
        steps: the forward steps, first to last (at least one).
        completed: records success after the last step; default none (the last step ends it).
        compensated: records "compensated" after the last compensation; default none.
        parked: records "needs attention" before the park state fails the execution; default none.
            It reads the error at ``compensation_error_path`` (every route to it writes there).
        last_resort: runs when the ``parked`` recorder still fails after its retries (e.g. a direct
            SQS SendMessage to the alarmed queue), then the park state fails the execution; its own
            failure goes to the park state too. Its ``already_recorded_on`` is ignored. Default none.
        forward_retry: retry policy of forward steps, recorders and the last resort; default 3
            retries, 1 s .. 10 s.
        compensation_retry: retry policy of compensations, for any error; default 5 retries, 2 s .. 30 s.
        retry_on: errors retried on forward steps and recorders whose task names none;
            default :data:`LAMBDA_SERVICE_ERRORS`. ``States.ALL`` is refused (it would retry business errors).
        refused_input_errors: errors of the first step meaning "the input names nothing to act on":
            the execution fails at once (state ``refused_state_name``); default none.
        compensate_all_on: errors of the first step that skip the forward steps and run every
            compensation (an operator's "undo everything" entry, without a routing Choice state);
            default none.
        error_path: where a forward step's error goes; default ``$.error``.
        compensation_error_path: the error the park reads: where the first failing compensation's
            error goes (a later ThenPark failure goes to ``<its result path>_error``), and a failing
            recorder's error; default ``$.compensation_error``.
        park_error, park_cause: the park Fail state's error (also its state name) and cause;
            default ``CompensationFailed``.
        refused_state_name, refused_cause: the refused-input Fail state; default ``InputRefused``.
        compensated_state_name: the Succeed state used only when a failure has nothing to compensate
            and no ``compensated`` recorder; default ``Compensated``.
        already_recorded_state_name: the Succeed state of ``already_recorded_on``; default
            ``OutcomeAlreadyRecorded``.
        timeout_margin: added to the budgeted execution timeout; default 60 s.
        state_latency: Step Functions' latency allowed per task attempt in the budget; default
            :data:`STATE_LATENCY_SECONDS`.
        state_machine_name: default generated.
        removal_policy: of the execution log group; default DESTROY.
        log_retention: of the execution log group; default one month.
        log_encryption_key: customer-managed key of the execution log group; default none.
        log_level, include_execution_data: execution logging; default ALL with execution data
            (pass references only through the saga, never customer data).
        log_group_name: the execution log group's name; default generated by CloudFormation. AWS
            recommends ``/aws/vendedlogs/states/...`` for Step Functions (the resource policy CloudWatch
            Logs needs for vended logs stays under its size limit:
            https://docs.aws.amazon.com/step-functions/latest/dg/bp-cwl.html). Changing it replaces
            the log group (a new, empty one; the old one is deleted or, RETAIN, kept).
        tracing: X-Ray tracing; default on.
        alarm_topic: SNS topic for ExecutionsFailed / ExecutionsTimedOut / ExecutionsAborted /
            ExecutionThrottled > 0 alarms; default none (no alarms).
        alarm_period: period of those alarms; default 1 minute.
        alarm_label: prefix of the alarms' descriptions; default ``saga``.
    """

    steps: Sequence[SagaStep]
    completed: SagaRecorder | None = None
    compensated: SagaRecorder | None = None
    parked: SagaRecorder | None = None
    last_resort: SagaRecorder | None = None
    forward_retry: RetryPolicy = field(default_factory=RetryPolicy)
    compensation_retry: RetryPolicy = field(default_factory=default_compensation_retry)
    retry_on: Sequence[str] = LAMBDA_SERVICE_ERRORS
    refused_input_errors: Sequence[str] = ()
    compensate_all_on: Sequence[str] = ()
    error_path: str = "$.error"
    compensation_error_path: str = "$.compensation_error"
    park_error: str = "CompensationFailed"
    park_cause: str = "A compensation kept failing after its retries; the saga is parked (needs attention)"
    refused_state_name: str = "InputRefused"
    refused_cause: str = "The execution input names nothing this saga can act on; nothing was done"
    compensated_state_name: str = "Compensated"
    already_recorded_state_name: str = "OutcomeAlreadyRecorded"
    timeout_margin: Duration = field(default_factory=lambda: Duration.seconds(60))
    state_latency: Duration = field(default_factory=lambda: Duration.seconds(int(STATE_LATENCY_SECONDS)))
    state_machine_name: str | None = None
    removal_policy: RemovalPolicy = RemovalPolicy.DESTROY
    log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH
    log_encryption_key: kms.IKey | None = None
    log_level: sfn.LogLevel = sfn.LogLevel.ALL
    include_execution_data: bool = True
    log_group_name: str | None = None
    tracing: bool = True
    alarm_topic: sns.ITopic | None = None
    alarm_period: Duration = field(default_factory=lambda: Duration.minutes(1))
    alarm_label: str = "saga"


def _check_path(where: str, path: str) -> None:
    if not path.startswith("$."):
        raise ValueError(f"{where}: {path!r} must start with '$.' (a path of '$' would replace the saga's state)")


def validate(props: SagaProps) -> None:
    """Refuse prop combinations that would build a saga that cannot keep its promise (synth time)."""
    if not props.steps:
        raise ValueError("Saga needs at least one step")
    names: list[str] = []
    compensations = [s for s in props.steps if s.compensation is not None]
    for index, step in enumerate(props.steps):
        where = f"step {step.name!r}"
        names.append(step.name)
        _check_path(where, step.result_path or f"$.{step.name}")
        if step.compensation is not None:
            names.append(step.undo_name)
            _check_path(where, step.compensation_result_path or f"$.{step.undo_name}")
            if index < props.steps.index(compensations[-1]):
                names.append(f"{step.undo_name}ThenPark")
        elif step.compensation_name or step.compensation_result_path or step.compensation_retry:
            raise ValueError(f"{where}: compensation_name/result_path/retry given without a compensation")
        if step.skip_compensation_on and step.compensation is None:
            raise ValueError(f"{where}: skip_compensation_on needs a compensation to skip")
        if _ALL in step.skip_compensation_on:
            raise ValueError(f"{where}: skip_compensation_on cannot be States.ALL (name the business errors)")
        if step.park_at_once_on:
            if step.compensation is None:
                raise ValueError(f"{where}: park_at_once_on needs a compensation whose errors it names")
            if _ALL in step.park_at_once_on:
                raise ValueError(f"{where}: park_at_once_on cannot be States.ALL (name the business errors)")
            if props.parked is None:
                raise ValueError(f"{where}: park_at_once_on needs a parked recorder (the item must be announced)")
        if step.park_when_compensation_fails and (step.compensation is None or props.parked is None):
            raise ValueError(f"{where}: park_when_compensation_fails needs a compensation and a parked recorder")
        retry_on = step.forward.retry_on if step.forward.retry_on is not None else props.retry_on
        if _ALL in retry_on:
            raise ValueError(f"{where}: forward steps retry transient errors only, not States.ALL")
        step.forward.attempt_seconds(where)
        if step.compensation is not None:
            step.compensation.attempt_seconds(f"{where} compensation")
    first = props.steps[0]
    special = [*props.refused_input_errors, *props.compensate_all_on]
    if _ALL in special:
        raise ValueError("refused_input_errors / compensate_all_on cannot be States.ALL")
    overlap = set(props.refused_input_errors) & set(props.compensate_all_on) | set(special) & set(
        first.skip_compensation_on
    )
    if overlap:
        raise ValueError(f"errors {sorted(overlap)} are given two meanings on step {first.name!r}")
    if props.compensate_all_on and not compensations:
        raise ValueError("compensate_all_on needs at least one step with a compensation")
    if props.parked is not None and not compensations:
        raise ValueError("parked: no step has a compensation, so nothing can park")
    if props.last_resort is not None and props.parked is None:
        raise ValueError("last_resort: it runs when the parked recorder fails, and there is none")
    for recorder in (props.completed, props.compensated, props.parked, props.last_resort):
        if recorder is not None:
            names.append(recorder.name)
            _check_path(f"recorder {recorder.name!r}", recorder.result_path)
            if _ALL in recorder.already_recorded_on:
                raise ValueError(f"recorder {recorder.name!r}: already_recorded_on cannot be States.ALL")
            recorder.task.attempt_seconds(f"recorder {recorder.name!r}")
    names += [props.park_error, props.refused_state_name, props.compensated_state_name]
    names.append(props.already_recorded_state_name)
    _check_path("error_path", props.error_path)
    _check_path("compensation_error_path", props.compensation_error_path)
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"state names must be unique; repeated: {duplicates}")


def _task_worst(policy: RetryPolicy, task: SagaTask, where: str, latency: float) -> float:
    """One task at its worst: every attempt a failed Init (Lambda), its timeout and the state latency."""
    return policy.worst_case_seconds(task.attempt_seconds(where), task.init_seconds() + latency)


def budget_seconds(props: SagaProps) -> float:
    """The execution timeout: the longest path with every attempt of every task timing out.

    Each attempt counts its timeout, a failed Lambda Init phase (:data:`LAMBDA_INIT_SECONDS`, Lambda
    tasks only) and ``state_latency``. The path: every forward step (its retry policy exhausted),
    every compensation once (each runs either in the compensation chain or in the park chain, never
    both), the slower of the completed / compensated recorders (it may fail and park), the parked
    recorder, the last resort, plus the margin. An upper bound: no path runs every one of these.
    """
    latency = props.state_latency.to_seconds()
    total = 0.0
    for step in props.steps:
        total += _task_worst(step.retry or props.forward_retry, step.forward, step.name, latency)
        if step.compensation is not None:
            policy = step.compensation_retry or props.compensation_retry
            total += _task_worst(policy, step.compensation, step.undo_name, latency)
    outcome = [r for r in (props.completed, props.compensated) if r is not None]
    total += max((_task_worst(props.forward_retry, r.task, r.name, latency) for r in outcome), default=0.0)
    for recorder in (props.parked, props.last_resort):
        if recorder is not None:
            total += _task_worst(props.forward_retry, recorder.task, recorder.name, latency)
    return total + props.timeout_margin.to_seconds()


class Saga(Construct):
    """A Standard workflow that runs steps forward and, on failure, their compensations in reverse.

    See the module docstring for the shape. Forward steps and recorders retry their transient
    errors (``retry_on``) with ``forward_retry``; compensations retry any error with
    ``compensation_retry``. A compensation that still fails does not stop the earlier ones (they
    run as ``<name>ThenPark`` copies), then the ``parked`` recorder runs and the execution fails
    with ``park_error``: never silently half-done. A recorder that fails (other than "already
    recorded") parks too; a parked recorder that fails runs the last resort, then fails.

    Attributes:
        state_machine: the ``sfn.StateMachine``.
        log_group: its execution log group.
        timeout: the execution timeout (:func:`budget_seconds`).
        states: every state built, by name.
        alarms: ``{"failed" | "timed_out" | "aborted" | "throttled": alarm}``; empty without ``alarm_topic``.
    """

    def __init__(self, scope: Construct, construct_id: str, *, props: SagaProps) -> None:
        super().__init__(scope, construct_id)
        validate(props)
        self.props = props
        self.timeout = Duration.seconds(int(budget_seconds(props)))
        self.states: dict[str, sfn.State] = {}
        steps = list(props.steps)

        # Terminal states (built lazily: only what the definition reaches is created).
        self._park_fail: sfn.Fail | None = None
        self._compensated_end: sfn.Succeed | None = None
        self._already: sfn.Succeed | None = None

        # The park: [parked recorder] -> Fail; the recorder failing -> [last resort] -> Fail.
        parked: TaskState | None = None
        if props.parked is not None:
            on_failure: sfn.IChainable | None = None
            if props.last_resort is not None:
                last = props.last_resort
                on_failure = self._recorder(
                    SagaRecorder(last.name, last.task, last.result_path),
                    then=self._park(),
                    on_failure=self._park(),
                    failure_path=f"{last.result_path}_error",
                )
            parked = self._recorder(
                props.parked, then=self._park(), on_failure=on_failure, failure_path=f"{props.parked.result_path}_error"
            )

        def park_target() -> sfn.IChainable:
            return parked if parked is not None else self._park()

        # Outcome recorders: already recorded -> end; any other error after the retries -> the park.
        fail_to = park_target() if props.parked is not None else None
        completed = self._recorder(props.completed, on_failure=fail_to) if props.completed else None
        compensated = self._recorder(props.compensated, on_failure=fail_to) if props.compensated else None

        # The park chain: copies of compensations 0..k-1 that run after compensation k failed.
        # (a copy only where a later compensation's failure leads to it, not one that parks at once).
        def reached_from_later(i: int) -> bool:
            return any(s.compensation is not None and not s.park_when_compensation_fails for s in steps[i + 1 :])

        park_chain: dict[int, TaskState] = {}
        for i, step in enumerate(steps):
            if step.compensation is not None and reached_from_later(i):
                park_chain[i] = self._compensation_task(step, f"{step.undo_name}ThenPark")

        def park_from(i: int) -> sfn.IChainable:
            """Where to go after compensation ``i`` failed: the next earlier ThenPark copy, or park."""
            earlier = [j for j in park_chain if j < i]
            return park_chain[max(earlier)] if earlier else park_target()

        for i, task in park_chain.items():
            step = steps[i]
            result = step.compensation_result_path or f"$.{step.undo_name}"
            if step.park_at_once_on:  # the error is already recorded: keep it, park at once
                task.add_catch(park_target(), errors=list(step.park_at_once_on), result_path=f"{result}_error")
            failed_to = park_target() if step.park_when_compensation_fails else park_from(i)
            task.add_catch(failed_to, errors=[_ALL], result_path=f"{result}_error")
            task.next(park_from(i))

        # The compensation chain.
        chain: dict[int, TaskState] = {}
        for i, step in enumerate(steps):
            if step.compensation is not None:
                chain[i] = self._compensation_task(step, step.undo_name)

        def compensate_from(i: int) -> sfn.IChainable:
            """The first compensation to run when steps 0..i must be undone."""
            candidates = [j for j in chain if j <= i]
            if candidates:
                return chain[max(candidates)]
            return compensated or self._compensated()

        for i, task in chain.items():
            if steps[i].park_at_once_on:
                task.add_catch(
                    park_target(), errors=list(steps[i].park_at_once_on), result_path=props.compensation_error_path
                )
            failed_to = park_target() if steps[i].park_when_compensation_fails else park_from(i)
            task.add_catch(failed_to, errors=[_ALL], result_path=props.compensation_error_path)
            after = compensate_from(i - 1) if any(j < i for j in chain) else compensated
            if after is not None:
                task.next(after)

        # The forward steps.
        forward: list[TaskState] = []
        for i, step in enumerate(steps):
            task = step.forward.build(self, step.name, result_path=step.result_path or f"$.{step.name}")
            self.states[step.name] = task
            retry_on = step.forward.retry_on if step.forward.retry_on is not None else props.retry_on
            (step.retry or props.forward_retry).apply(task, retry_on)
            if i == 0 and props.refused_input_errors:
                refused = sfn.Fail(
                    self, props.refused_state_name, error=props.refused_state_name, cause=props.refused_cause
                )
                self.states[props.refused_state_name] = refused
                task.add_catch(refused, errors=list(props.refused_input_errors), result_path=props.error_path)
            if i == 0 and props.compensate_all_on:
                task.add_catch(
                    compensate_from(len(steps) - 1), errors=list(props.compensate_all_on), result_path=props.error_path
                )
            if step.skip_compensation_on:
                task.add_catch(
                    compensate_from(i - 1), errors=list(step.skip_compensation_on), result_path=props.error_path
                )
            task.add_catch(compensate_from(i), errors=[_ALL], result_path=props.error_path)
            if forward:
                forward[-1].next(task)
            forward.append(task)
        if completed is not None:
            forward[-1].next(completed)

        self.log_group = logs.LogGroup(
            self,
            "ExecutionLogs",
            log_group_name=props.log_group_name,
            retention=props.log_retention,
            removal_policy=props.removal_policy,
            encryption_key=props.log_encryption_key,
        )
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            state_machine_name=props.state_machine_name,
            definition_body=sfn.DefinitionBody.from_chainable(forward[0]),
            state_machine_type=sfn.StateMachineType.STANDARD,
            timeout=self.timeout,
            tracing_enabled=props.tracing,
            logs=sfn.LogOptions(
                destination=self.log_group, level=props.log_level, include_execution_data=props.include_execution_data
            ),
        )

        self.alarms: dict[str, cloudwatch.Alarm] = {}
        if props.alarm_topic is not None:
            machine = self.state_machine
            for key, name, metric, what in (
                ("failed", "ExecutionsFailedAlarm", machine.metric_failed, "executions failed (parked or refused)"),
                ("timed_out", "ExecutionsTimedOutAlarm", machine.metric_timed_out, "executions timed out (half-done)"),
                (
                    "aborted",
                    "ExecutionsAbortedAlarm",
                    machine.metric_aborted,
                    "executions aborted (stopped by an operator or a deploy: possibly half-done)",
                ),
                ("throttled", "ExecutionThrottledAlarm", machine.metric_throttled, "executions throttled"),
            ):
                self.alarms[key] = first_occurrence_alarm(
                    self,
                    name,
                    metric(period=props.alarm_period, statistic="Sum"),
                    f"{props.alarm_label}: {what}",
                    props.alarm_topic,
                )

    # -- building blocks ----------------------------------------------------------------------
    def _park(self) -> sfn.Fail:
        if self._park_fail is None:
            p = self.props
            self._park_fail = sfn.Fail(self, p.park_error, error=p.park_error, cause=p.park_cause)
            self.states[p.park_error] = self._park_fail
        return self._park_fail

    def _compensated(self) -> sfn.Succeed:
        if self._compensated_end is None:
            name = self.props.compensated_state_name
            self._compensated_end = sfn.Succeed(self, name)
            self.states[name] = self._compensated_end
        return self._compensated_end

    def _already_recorded(self) -> sfn.Succeed:
        if self._already is None:
            name = self.props.already_recorded_state_name
            self._already = sfn.Succeed(self, name, comment="The outcome was already recorded (a repeat)")
            self.states[name] = self._already
        return self._already

    def _recorder(
        self,
        recorder: SagaRecorder,
        then: sfn.IChainable | None = None,
        *,
        on_failure: sfn.IChainable | None = None,
        failure_path: str | None = None,
    ) -> TaskState:
        """A recorder task: retries its transient errors; ``already_recorded_on`` -> ``then`` (or the
        already-recorded end); any other error -> ``on_failure`` (its error at ``failure_path``,
        default ``compensation_error_path``: the one the park reads)."""
        task = recorder.task.build(self, recorder.name, result_path=recorder.result_path)
        self.states[recorder.name] = task
        retry_on = recorder.task.retry_on if recorder.task.retry_on is not None else self.props.retry_on
        self.props.forward_retry.apply(task, retry_on)
        if recorder.already_recorded_on:
            target = then if then is not None else self._already_recorded()
            task.add_catch(
                target, errors=list(recorder.already_recorded_on), result_path=f"{recorder.result_path}_error"
            )
        if on_failure is not None:
            task.add_catch(on_failure, errors=[_ALL], result_path=failure_path or self.props.compensation_error_path)
        if then is not None:
            task.next(then)
        return task

    def _compensation_task(self, step: SagaStep, name: str) -> TaskState:
        assert step.compensation is not None
        task = step.compensation.build(self, name, result_path=step.compensation_result_path or f"$.{step.undo_name}")
        self.states[name] = task
        if step.park_at_once_on:  # never retried: the next try would refuse the same way
            task.add_retry(errors=list(step.park_at_once_on), max_attempts=0)
        (step.compensation_retry or self.props.compensation_retry).apply(task, [_ALL])
        return task
