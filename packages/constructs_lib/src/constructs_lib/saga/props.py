"""The saga's typed props: its steps, its outcome recorders and :class:`SagaProps` (defaults documented
on each attribute; :func:`constructs_lib.saga.validation.validate` refuses bad combinations at synth)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn

from constructs_lib.saga.tasks import (
    DEFAULT_REFUSED_INPUT_ERRORS,
    DEFAULT_RETRY_ON,
    STATE_LATENCY_SECONDS,
    RetryPolicy,
    SagaTask,
    default_compensation_retry,
)

if TYPE_CHECKING:
    from constructs_lib.monitoring import Monitoring


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
        compensate_on: business errors of the forward task that undo it and the earlier steps. Without the
            saga's ``park_unknown_errors`` its ``States.ALL`` catch does so anyway; with it, these (and
            ``skip_compensation_on``) are the only errors of the step that compensate. Default none.
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
        final_compensation: the compensation's task where it ends the chain and the
            ``compensated`` recorder is a fallback (``fallback_on``): that task records the outcome
            itself (e.g. the same function with a payload saying so). Default the compensation.
    """

    name: str
    forward: SagaTask
    compensation: SagaTask | None = None
    compensation_name: str | None = None
    result_path: str | None = None
    compensation_result_path: str | None = None
    skip_compensation_on: Sequence[str] = ()
    compensate_on: Sequence[str] = ()
    park_at_once_on: Sequence[str] = ()
    park_when_compensation_fails: bool = False
    retry: RetryPolicy | None = None
    compensation_retry: RetryPolicy | None = None
    final_compensation: SagaTask | None = None

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
        fallback_on: for ``completed`` and ``compensated`` only: the task before the recorder (the
            last step, the last compensation) records the outcome itself and ends the execution;
            the recorder runs only when that task fails with one of these errors, meaning "my effect
            is done, the outcome is not written" (never retried as the task, never compensated).
            One state transition less per execution. Default none (the recorder always runs).
    """

    name: str
    task: SagaTask
    result_path: str = "$.outcome"
    already_recorded_on: Sequence[str] = ()
    fallback_on: Sequence[str] = ()


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
        throttle_retry: the forward steps' own retrier for a Lambda throttle (:data:`THROTTLE_ERRORS` among
            their ``retry_on``), budgeted on its own; default none (``forward_retry`` retries it).
        outage_retry, outage_errors: the forward steps' retrier for errors meaning "a dependency the step calls
            is down, nothing is wrong with the item" (e.g. the step middleware's ``TransientStepError``, a
            function timed out waiting on a provider), after the throttle's retrier and ahead of
            ``forward_retry``; budgeted on its own (each attempt a whole invocation). The errors must be among
            ``retry_on``; name them in ``park_on`` too, so an outage that outlasts the retrier parks the item
            rather than undoing it. Default none (``forward_retry`` retries them).
        park_on: errors of any forward step that, once its retries are exhausted, park the saga at once
            without compensating (a throttle that outlasted its retrier: nothing is wrong with the item, the
            capacity is short, so an operator finishes it later rather than the saga undoing a valid one).
            Caught ahead of ``States.ALL``; needs the ``parked`` recorder. Default none.
        park_unknown_errors: a forward step's error that no catch names (not a business error of
            ``skip_compensation_on`` / ``compensate_on`` / ``compensate_all_on``, not a retried one) parks the
            item, nothing undone, instead of compensating it: an unknown error (a crashed function, a state
            timeout, an idempotency key reused with another payload) is no business decision, and undoing a
            valid item for it loses it silently. Needs the ``parked`` recorder. Default False (the classic
            saga: any other error compensates).
        retry_on: errors retried on forward steps and recorders whose task names none;
            default :data:`DEFAULT_RETRY_ON` (Lambda's service errors, and the step middleware's
            ``TransientStepError`` and ``UnknownStepError``). ``States.ALL`` is refused (it would retry
            business errors).
        refused_input_errors: errors of the first step meaning "the input names nothing to act on":
            the execution fails at once (state ``refused_state_name``); default
            :data:`DEFAULT_REFUSED_INPUT_ERRORS` (the step middleware's ``InvalidStepInput``).
        compensate_all_on: errors of the first step that skip the forward steps and run every
            compensation (an operator's "undo everything" entry, without a routing Choice state);
            default none.
        already_parked_on: errors any forward step or compensation may raise meaning "the item is
            parked for an operator outside this execution (already announced), and nobody asked me to
            act on it" (e.g. a redrive of an execution whose item was parked meanwhile): never retried,
            caught first, the execution fails at once (state ``already_parked_state_name``): no
            compensation, no second park. Default none.
        error_path: where a forward step's error goes; default ``$.error``.
        compensation_error_path: the error the park reads: where the first failing compensation's
            error goes (a later ThenPark failure goes to ``<its result path>_error``), and a failing
            recorder's error; default ``$.compensation_error``.
        park_error, park_cause: the park Fail state's error (also its state name) and cause;
            default ``CompensationFailed``.
        refused_state_name, refused_cause: the refused-input Fail state; default ``InputRefused``.
        already_parked_state_name, already_parked_cause: the Fail state of ``already_parked_on``;
            default ``AlreadyParked``.
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
        monitoring: the stack's :class:`constructs_lib.monitoring.Monitoring`: the state machine and its
            alarms register themselves there; default none (register them yourself).
    """

    steps: Sequence[SagaStep]
    completed: SagaRecorder | None = None
    compensated: SagaRecorder | None = None
    parked: SagaRecorder | None = None
    last_resort: SagaRecorder | None = None
    forward_retry: RetryPolicy = field(default_factory=RetryPolicy)
    compensation_retry: RetryPolicy = field(default_factory=default_compensation_retry)
    throttle_retry: RetryPolicy | None = None
    outage_retry: RetryPolicy | None = None
    outage_errors: Sequence[str] = ()
    park_on: Sequence[str] = ()
    park_unknown_errors: bool = False
    retry_on: Sequence[str] = DEFAULT_RETRY_ON
    refused_input_errors: Sequence[str] = DEFAULT_REFUSED_INPUT_ERRORS
    compensate_all_on: Sequence[str] = ()
    already_parked_on: Sequence[str] = ()
    error_path: str = "$.error"
    compensation_error_path: str = "$.compensation_error"
    park_error: str = "CompensationFailed"
    park_cause: str = "A compensation kept failing after its retries; the saga is parked (needs attention)"
    refused_state_name: str = "InputRefused"
    refused_cause: str = "The execution input names nothing this saga can act on; nothing was done"
    already_parked_state_name: str = "AlreadyParked"
    already_parked_cause: str = "The item is parked for an operator outside this execution; nothing was done"
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
    monitoring: Monitoring | None = None
