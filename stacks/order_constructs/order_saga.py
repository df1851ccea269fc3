"""The order saga: ReserveInventory -> ChargePayment -> ShipOrder, compensations in reverse
(CancelShipment -> RefundPayment -> ReleaseInventory).

A thin use of the generic :class:`constructs_lib.generic_saga.Saga`: this module holds the order
vocabulary (state names, business errors, the orders table's status rules), the generic one none.
The app's construct (``stacks/order_constructs``), not the library's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from constructs_lib.generic_saga import (
    LambdaTask,
    RetryPolicy,
    Saga,
    SagaProps,
    SagaRecorder,
    SagaStep,
    default_compensation_retry,
)
from constructs_lib.monitoring import Monitoring
from lambda_resilience.tracing import EXECUTION_INPUT  # the payload field the step handlers read the input by
from stacks.order_constructs.grants import KMS_FOR_DDB_WRITE
from stacks.order_constructs.saga_errors import (
    COMPENSATE_ON,
    COMPENSATION_REQUESTED,
    CONDITION_FAILED,
    DEFAULT_REFUSED_INPUT_ERRORS,
    DEFAULT_TRANSIENT_ERRORS,
    EFFECT_DONE,
    ORDER_PARKED,
    PARK_ERROR_PATH,
    SHIPMENT_NOT_CANCELLABLE,
    SHIPPING_UNAVAILABLE,
)
from stacks.order_constructs.saga_integrations import last_resort, status_write
from stacks.order_constructs.saga_retries import (
    OUTAGE_ERRORS,
    default_forward_retry,
    default_outage_retry,
    default_throttle_retry,
)

__all__ = [
    "DEFAULT_REFUSED_INPUT_ERRORS",
    "DEFAULT_TRANSIENT_ERRORS",
    "OUTAGE_ERRORS",
    "OrderSaga",
    "OrderSagaProps",
    "RetryPolicy",
]


@dataclass(frozen=True)
class OrderSagaProps:
    """Props for :class:`OrderSaga`.

    Attributes:
        reserve_inventory, charge_payment, ship_order: forward steps.
        cancel_shipment, refund_payment, release_inventory: compensations (idempotent, state-tolerant).
        finalize_order: parks an order (NEEDS_ATTENTION, its error and correlation ID, and a
            message on the needs-attention queue), keyed per execution.
        needs_attention_queue: where the last resort sends the order's references and error when
            the park itself fails (a direct SQS SendMessage; the role gets ``sqs:SendMessage`` on it only).
        orders_table: the orders table; ShipOrder and the last compensation write the outcome to it
            themselves (decision 0024); MarkCompleted / MarkCompensated, when they raise
            ``EffectDoneOutcomeNotWritten``, directly (Step Functions' DynamoDB UpdateItem
            integration, conditional).
        completed_from: the statuses COMPLETED may be recorded from; default
            ``("PAYMENT_CHARGED", "SHIPPED")`` (ShipOrder's own write failed / a pre-0024 execution).
        compensated_from: the statuses COMPENSATED may be recorded from; default ``("COMPENSATING",)``
            (both match lambdas/order_domain/status.py's TRANSITIONS; a test keeps them equal).
        step_timeout: the step functions' timeout (used for the execution budget); default 30 s.
        forward_retry: retry policy for transient errors on forward steps and outcome writes; default
            :func:`default_forward_retry` (6 retries, 2 s doubling, capped at 30 s).
        compensation_retry: retry policy for any error on compensations; default 5 retries, 2 s .. 30 s.
        throttle_retry: the forward steps' own retrier for ``Lambda.TooManyRequestsException``; default
            :func:`default_throttle_retry` (13 retries, 1 s doubling, capped at 60 s).
        outage_retry: the forward steps' own retrier for :data:`OUTAGE_ERRORS` (a dependency down); default
            :func:`default_outage_retry` (20 retries, 2 s doubling, capped at 60 s). Past it, the order parks.
        transient_errors: error names retried on forward steps.
        refused_input_errors: error names of the first step that end the execution as failed,
            without compensations (nothing was done).
        removal_policy: for the execution log group.
        log_retention: of the execution log group; default one month (prod passes one year).
        log_encryption_key: customer-managed key for the execution log group (its policy must let
            CloudWatch Logs use it); default none.
        log_level, include_execution_data: execution logging; default ALL with execution data (dev);
            prod passes ERROR without data (:attr:`StageConfig.saga_log_level`, decision 0022).
        log_group_class: the execution log group's class; default Standard. Prod passes Infrequent
            Access (:attr:`StageConfig.saga_log_class`, decision 0022); a change replaces the log group.
        log_group_name: the execution log group's name; default none (generated). The stack passes
            ``/aws/vendedlogs/states/<stack>-order-saga`` (AWS's best practice for Step Functions).
        alarm_topic: SNS topic for the execution alarms (failed, timed out, aborted, throttled); default
            none (then the caller owns alarming on ``ExecutionsFailed``, which ``ResilienceChecks``
            requires).
        alarm_period: period of those alarms (one evaluation period); default 1 minute.
        monitoring: the facade the state machine and its alarms are registered on; default none.
    """

    reserve_inventory: lambda_.IFunction
    charge_payment: lambda_.IFunction
    ship_order: lambda_.IFunction
    cancel_shipment: lambda_.IFunction
    refund_payment: lambda_.IFunction
    release_inventory: lambda_.IFunction
    finalize_order: lambda_.IFunction
    orders_table: dynamodb.ITable
    needs_attention_queue: sqs.IQueue
    completed_from: Sequence[str] = ("PAYMENT_CHARGED", "SHIPPED")
    compensated_from: Sequence[str] = ("COMPENSATING",)
    step_timeout: Duration = field(default_factory=lambda: Duration.seconds(30))
    forward_retry: RetryPolicy = field(default_factory=default_forward_retry)
    compensation_retry: RetryPolicy = field(default_factory=default_compensation_retry)
    throttle_retry: RetryPolicy = field(default_factory=default_throttle_retry)
    outage_retry: RetryPolicy = field(default_factory=default_outage_retry)
    transient_errors: Sequence[str] = DEFAULT_TRANSIENT_ERRORS
    refused_input_errors: Sequence[str] = DEFAULT_REFUSED_INPUT_ERRORS
    removal_policy: RemovalPolicy = RemovalPolicy.DESTROY
    log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH
    log_encryption_key: kms.IKey | None = None
    log_level: sfn.LogLevel = sfn.LogLevel.ALL
    include_execution_data: bool = True
    log_group_name: str | None = None
    log_group_class: logs.LogGroupClass = logs.LogGroupClass.STANDARD
    alarm_topic: sns.ITopic | None = None
    alarm_period: Duration = field(default_factory=lambda: Duration.minutes(1))
    monitoring: Monitoring | None = None


class OrderSaga(Saga):
    """A Standard workflow that never leaves an order half-done.

    Input: references only, ``{"order_id", "payment_attempt", "correlation_id"}``; each step
    reads what it needs from the orders table (no customer data in the execution history).

    - ReserveInventory fails -> ReleaseInventory (a partial reservation is released).
    - ChargePayment declined -> ReleaseInventory; any other charge failure (outcome unknown)
      -> RefundPayment (asks the provider by idempotency key, refunds only what moved) -> ReleaseInventory.
    - ShipOrder rejected by the carrier (``ShippingUnavailable``: nothing shipped) -> RefundPayment
      -> ReleaseInventory; any other ShipOrder failure (outcome unknown) -> CancelShipment (looks the
      shipment up by ShipOrder's key: cancels it, or cancels the key so a late ship is refused)
      -> RefundPayment -> ReleaseInventory.
    - CancelShipment refused by the carrier (``ShipmentNotCancellable``: the parcel was handed over)
      -> MarkNeedsAttention at once: no refund, no release (never refund a parcel that ships).
    - A forward step still throttled after its throttle retrier -> MarkNeedsAttention, nothing undone (never a
      valid order cancelled for our capacity); ``ops repair --action redrive`` finishes it (decision 0005).
    - A compensation that still fails after its retries -> NEEDS_ATTENTION and the execution fails
      (a failed refund still releases the stock first: ReleaseInventoryThenPark).
    - The outcome is written by the last step's own function (decision 0024): ShipOrder records
      COMPLETED once the parcel is booked and ends the execution; ReleaseInventory, as the last
      compensation (its payload says ``record_outcome``), records COMPENSATED and ends it. Either
      raising ``EffectDoneOutcomeNotWritten`` (the effect is done, the write failed) -> MarkCompleted /
      MarkCompensated (never retried as the step, never compensated).
    - MarkCompleted / MarkCompensated failing with anything but "already recorded", after their
      retries -> MarkNeedsAttention (the order is never left half-recorded unannounced).
    - MarkNeedsAttention failing after its retries -> NotifyNeedsAttention (the last resort: a direct
      SQS SendMessage of the references and the error, source ``saga-last-resort``) -> Fail; the
      last resort failing -> Fail too. The execution fails either way (ExecutionsFailed alarm).
    - Every route to the park leaves its error at :data:`PARK_ERROR_PATH`, the one path the park reads.
    - Any step meeting a parked order nobody asked it to act on (a Redrive after the sweeper's park) raises
      ``OrderParked`` -> AlreadyParked (Fail) at once: no compensation, no second park (decision 0029).
    - Input ``"compensate": true`` (an operator's repair): ReserveInventory raises
      ``CompensationRequested`` before anything else, caught -> CancelShipment -> RefundPayment ->
      ReleaseInventory (no refund of a possibly shipped order without cancelling its shipment first;
      no routing Choice state, so ordinary executions do not pay a transition for it).
    - The error-path outcome writes: MarkCompleted and MarkCompensated are direct DynamoDB UpdateItem tasks
      (conditional: from the allowed source statuses, for this payment attempt only; a repeat or
      a late write changes nothing and ends the execution as ``OutcomeAlreadyRecorded``);
      MarkNeedsAttention is the ``finalize_order`` function (it also notifies the queue), keyed
      per execution (``execution_name``), so a repair's park is a new park.

    The execution timeout is budgeted by the generic saga: the three forward steps and the three
    compensations at their worst case (every attempt a failed Lambda Init phase plus its timeout
    plus Step Functions' latency allowance, maximal backoff), the slower outcome write, the park,
    the last resort, plus 60 s.

    Logging: level ALL *with* execution data, on purpose. The execution input carries references
    only (``order_id``, ``payment_attempt``, ``correlation_id``; intake enforces it), each step
    returns references and statuses (no payment token, customer name or address), and the error
    objects the catches keep are error names and causes. So the execution log holds no card or
    customer data, and it is what answers "what happened to order 123?" (every state's input and
    output). Should a step ever return customer data, lower this to ERROR without execution data.
    In prod the log group is encrypted with the customer-managed key and kept a year.

    Alarms (with ``alarm_topic``): ``ExecutionsFailed``, ``ExecutionsTimedOut``, ``ExecutionsAborted``
    and ``ExecutionThrottled`` > 0 (Sum over ``alarm_period``, one evaluation period, missing data not
    breaching), each notifying the topic on ALARM. A failed execution is an order parked as
    NEEDS_ATTENTION or an input refused; a timed-out or aborted one is an order left half-done.

    Attributes (those of :class:`Saga`; a subclass, so the construct paths and logical IDs are
    the ones the hand-written saga had: no replacement of the state machine on deploy):
        state_machine: the ``sfn.StateMachine``.
        log_group: its execution log group (``/aws/vendedlogs/states/...`` when the stack names it).
        timeout: the execution timeout.
        alarms: ``{"failed" | "timed_out" | "aborted" | "throttled": alarm}``; empty without ``alarm_topic``.
    """

    def __init__(self, scope: Construct, construct_id: str, *, props: OrderSagaProps) -> None:
        retry_on = list(props.transient_errors)
        recorders = _recorders(props, retry_on)
        super().__init__(
            scope,
            construct_id,
            props=SagaProps(
                steps=_steps(props, retry_on),
                completed=recorders["completed"],
                compensated=recorders["compensated"],
                parked=recorders["parked"],
                last_resort=recorders["last_resort"],
                compensation_error_path=PARK_ERROR_PATH,
                forward_retry=props.forward_retry,
                compensation_retry=props.compensation_retry,
                throttle_retry=props.throttle_retry,
                outage_retry=props.outage_retry,
                outage_errors=[e for e in OUTAGE_ERRORS if e in retry_on],
                # Any transient or unknown error past its retriers parks a valid order for a person, never
                # compensates it: only a business outcome or an operator's request undoes an order (0005, 0032).
                park_on=retry_on,
                park_unknown_errors=True,  # an error nobody named is no business decision either (0034)
                retry_on=retry_on,
                refused_input_errors=props.refused_input_errors,
                compensate_all_on=(COMPENSATION_REQUESTED,),
                already_parked_on=(ORDER_PARKED,),
                already_parked_cause="The order is parked for an operator (already announced) and nobody asked this "
                "execution to act on it (a Redrive is not a repair); nothing was done: use ops repair or ops resolve",
                park_cause=(
                    "A compensation or an outcome write kept failing, or a shipment could not be cancelled; "
                    "the order is parked as NEEDS_ATTENTION (see the needs-attention queue)"
                ),
                refused_cause=(
                    "The execution input names no order this saga can act on (see the step's log); nothing was done"
                ),
                removal_policy=props.removal_policy,
                log_retention=props.log_retention,
                log_encryption_key=props.log_encryption_key,
                log_level=props.log_level,
                include_execution_data=props.include_execution_data,
                log_group_name=props.log_group_name,
                alarm_topic=props.alarm_topic,
                alarm_period=props.alarm_period,
                alarm_label="order saga",
            ),
        )
        if props.log_group_class != logs.LogGroupClass.STANDARD:  # the generic saga has no such prop
            cast(logs.CfnLogGroup, self.log_group.node.default_child).log_group_class = props.log_group_class.value
        # The last resort: SendMessage on the needs-attention queue only (no GetQueueUrl / attributes).
        self.state_machine.add_to_role_policy(
            iam.PolicyStatement(actions=["sqs:SendMessage"], resources=[props.needs_attention_queue.queue_arn])
        )
        key = props.orders_table.encryption_key
        if key is not None:  # DynamoDB uses the table's key on the caller's behalf (kms:ViaService)
            self.state_machine.add_to_role_policy(
                iam.PolicyStatement(actions=list(KMS_FOR_DDB_WRITE), resources=[key.key_arn])
            )
        if props.monitoring is not None:
            props.monitoring.monitor_state_machine(self.state_machine, alarms=self.alarms.values())


def _steps(props: OrderSagaProps, retry_on: list[str]) -> list[SagaStep]:
    """Reserve, charge, ship, each with its compensation and the errors that change the route."""

    def fn(function: lambda_.IFunction) -> LambdaTask:
        return LambdaTask(function, timeout=props.step_timeout, retry_on=retry_on)

    return [
        SagaStep(
            "ReserveInventory",
            fn(props.reserve_inventory),
            compensation=fn(props.release_inventory),
            # The last compensation records COMPENSATED itself (its ThenPark copy does not): the
            # references, the execution input (trace context, an operator's "compensate") and the flag.
            final_compensation=LambdaTask(
                props.release_inventory,
                timeout=props.step_timeout,
                retry_on=retry_on,
                payload={
                    "order_id": sfn.JsonPath.string_at("$.order_id"),
                    "payment_attempt": sfn.JsonPath.number_at("$.payment_attempt"),
                    "correlation_id": sfn.JsonPath.string_at("$.correlation_id"),
                    EXECUTION_INPUT: sfn.JsonPath.object_at("$$.Execution.Input"),
                    "record_outcome": "COMPENSATED",
                },
            ),
            compensation_name="ReleaseInventory",
            result_path="$.reservation",
            compensation_result_path="$.release",
            compensate_on=COMPENSATE_ON["ReserveInventory"],
        ),
        SagaStep(
            "ChargePayment",
            fn(props.charge_payment),
            compensation=fn(props.refund_payment),
            compensation_name="RefundPayment",
            result_path="$.payment",
            compensation_result_path="$.refund",
            skip_compensation_on=("PaymentDeclined",),  # declined: no money moved
            compensate_on=COMPENSATE_ON["ChargePayment"],
        ),
        SagaStep(
            "ShipOrder",
            fn(props.ship_order),
            compensation=fn(props.cancel_shipment),
            compensation_name="CancelShipment",
            result_path="$.shipment",
            compensation_result_path="$.cancellation",
            skip_compensation_on=(SHIPPING_UNAVAILABLE,),  # the carrier rejected it: nothing shipped
            compensate_on=COMPENSATE_ON["ShipOrder"],
            park_at_once_on=(SHIPMENT_NOT_CANCELLABLE,),  # never refund a parcel that ships
            # A cancel that keeps failing leaves the parcel possibly shipping: park, no refund.
            park_when_compensation_fails=True,
        ),
    ]


def _recorders(props: OrderSagaProps, retry_on: list[str]) -> dict[str, SagaRecorder]:
    """MarkCompleted / MarkCompensated (direct conditional writes, on the error path only: decision 0024),
    MarkNeedsAttention (the ``finalize_order`` function, keyed per execution), NotifyNeedsAttention (last resort)."""
    park = LambdaTask(
        props.finalize_order,
        timeout=props.step_timeout,
        retry_on=retry_on,
        payload={
            "outcome": "NEEDS_ATTENTION",
            "order_id": sfn.JsonPath.string_at("$.order_id"),
            "payment_attempt": sfn.JsonPath.number_at("$.payment_attempt"),
            "correlation_id": sfn.JsonPath.string_at("$.correlation_id"),
            "execution_name": sfn.JsonPath.string_at("$$.Execution.Name"),  # a park per execution
            # The W3C trace context the park continues (its ``traceparent``), passed as the whole
            # execution input: a path to a field the input lacks (an execution started before the
            # field existed, or by an operator) would fail the park with States.Runtime; this one never does.
            EXECUTION_INPUT: sfn.JsonPath.object_at("$$.Execution.Input"),
            "error": sfn.JsonPath.object_at(PARK_ERROR_PATH),
        },
    )
    return {
        "completed": SagaRecorder(
            "MarkCompleted",
            status_write(props.orders_table, "COMPLETED", props.completed_from),
            result_path="$.final",
            already_recorded_on=(CONDITION_FAILED,),
            fallback_on=(EFFECT_DONE,),
        ),
        "compensated": SagaRecorder(
            "MarkCompensated",
            status_write(props.orders_table, "COMPENSATED", props.compensated_from),
            result_path="$.final",
            already_recorded_on=(CONDITION_FAILED,),
            fallback_on=(EFFECT_DONE,),
        ),
        "parked": SagaRecorder("MarkNeedsAttention", park, result_path="$.final"),
        "last_resort": SagaRecorder(
            "NotifyNeedsAttention",
            last_resort(props.needs_attention_queue, PARK_ERROR_PATH),
            result_path="$.last_resort",
        ),
    }
