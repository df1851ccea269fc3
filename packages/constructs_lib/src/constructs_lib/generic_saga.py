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

This module is the construct and the library's public names; the parts live in
:mod:`constructs_lib.saga` by concern: ``tasks`` (tasks and retry policies), ``props`` (typed props),
``validation`` (bad combinations refused at synth), ``budget`` (the execution timeout), ``park``
(the building blocks, the park and the last resort), ``compensation`` (the compensation and park
chains), ``forward`` (the forward path) and ``alarms``.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from constructs_lib.saga.alarms import execution_alarms
from constructs_lib.saga.budget import budget_seconds
from constructs_lib.saga.compensation import build_compensations
from constructs_lib.saga.forward import build_forward
from constructs_lib.saga.park import SagaStates
from constructs_lib.saga.props import SagaProps, SagaRecorder, SagaStep
from constructs_lib.saga.tasks import (
    DEFAULT_REFUSED_INPUT_ERRORS,
    DEFAULT_RETRY_ON,
    DYNAMODB_TRANSIENT_ERRORS,
    LAMBDA_INIT_SECONDS,
    LAMBDA_SERVICE_ERRORS,
    MIDDLEWARE_STEP_ERRORS,
    STATE_LATENCY_SECONDS,
    THROTTLE_ERRORS,
    LambdaTask,
    RetryPolicy,
    SagaTask,
    ServiceTask,
    ServiceTaskFactory,
    TaskState,
    default_compensation_retry,
)
from constructs_lib.saga.validation import validate

__all__ = [
    "DEFAULT_REFUSED_INPUT_ERRORS",
    "DEFAULT_RETRY_ON",
    "DYNAMODB_TRANSIENT_ERRORS",
    "LAMBDA_INIT_SECONDS",
    "LAMBDA_SERVICE_ERRORS",
    "MIDDLEWARE_STEP_ERRORS",
    "STATE_LATENCY_SECONDS",
    "THROTTLE_ERRORS",
    "LambdaTask",
    "RetryPolicy",
    "Saga",
    "SagaProps",
    "SagaRecorder",
    "SagaStep",
    "SagaTask",
    "ServiceTask",
    "ServiceTaskFactory",
    "TaskState",
    "budget_seconds",
    "default_compensation_retry",
    "validate",
]


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
        built = SagaStates(self, props)
        self.states: dict[str, sfn.State] = built.states
        built.build_park()
        # Outcome recorders: already recorded -> end; any other error after the retries -> the park.
        fail_to = built.park_target() if props.parked is not None else None
        completed = built.recorder(props.completed, on_failure=fail_to) if props.completed else None
        compensated = built.recorder(props.compensated, on_failure=fail_to) if props.compensated else None
        compensate_from = build_compensations(built, compensated)
        start = build_forward(built, compensate_from, completed)

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
            definition_body=sfn.DefinitionBody.from_chainable(start),
            state_machine_type=sfn.StateMachineType.STANDARD,
            timeout=self.timeout,
            tracing_enabled=props.tracing,
            logs=sfn.LogOptions(
                destination=self.log_group, level=props.log_level, include_execution_data=props.include_execution_data
            ),
        )
        self.alarms: dict[str, cloudwatch.Alarm] = {}
        if props.alarm_topic is not None:
            self.alarms = execution_alarms(
                self, self.state_machine, topic=props.alarm_topic, period=props.alarm_period, label=props.alarm_label
            )
        if props.monitoring is not None:
            props.monitoring.monitor_state_machine(self.state_machine, alarms=self.alarms.values())
