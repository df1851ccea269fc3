"""The order saga: ReserveInventory -> ChargePayment -> ShipOrder, compensations in reverse."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

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

#: Errors worth retrying on forward steps: Lambda service faults and our transient class.
#: Step handlers re-raise every transient failure as ``TransientStepError`` (lambdas/shared/exceptions.py).
DEFAULT_TRANSIENT_ERRORS: tuple[str, ...] = (
    "TransientStepError",
    "UnknownStepError",  # unexpected (a bug?): retried like transient, then compensated
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
    "Lambda.ClientExecutionTimeoutException",
    "Sandbox.Timedout",  # the function timed out (or was killed): its idempotency record lets the retry resume
)


#: Errors meaning "this execution's input refers to nothing we can act on" (an unknown order, a
#: malformed input, a replaced payment attempt): raised by ReserveInventory before any side
#: effect, so the execution fails at once with nothing to compensate.
DEFAULT_REFUSED_INPUT_ERRORS: tuple[str, ...] = ("UnknownOrder", "InvalidStepInput", "StaleAttempt")


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

    def worst_case_seconds(self, step_timeout_seconds: float) -> float:
        """Upper bound of one task's time including all retries (every attempt times out)."""
        delays = sum(
            min(self.interval.to_seconds() * self.backoff_rate**n, self.max_delay.to_seconds())
            for n in range(self.max_attempts)
        )
        return (self.max_attempts + 1) * step_timeout_seconds + delays


@dataclass(frozen=True)
class OrderSagaProps:
    """Props for :class:`OrderSaga`.

    Attributes:
        reserve_inventory, charge_payment, ship_order: forward steps.
        refund_payment, release_inventory: compensations (idempotent, state-tolerant).
        finalize_order: records the outcome (COMPLETED / COMPENSATED / NEEDS_ATTENTION).
        step_timeout: the step functions' timeout (used for the execution budget); default 30 s.
        forward_retry: retry policy for transient errors on forward steps.
        compensation_retry: retry policy for any error on compensations; default 5 retries, 2 s .. 30 s.
        transient_errors: error names retried on forward steps.
        refused_input_errors: error names of the first step that end the execution as failed,
            without compensations (nothing was done).
        removal_policy: for the execution log group.
        log_retention: of the execution log group; default one month (prod passes one year).
        log_encryption_key: customer-managed key for the execution log group (its policy must let
            CloudWatch Logs use it); default none.
        alarm_topic: SNS topic for the execution alarms (failed, timed out, throttled); default
            none (then the caller owns alarming on ``ExecutionsFailed``, which ``ResilienceChecks``
            requires).
        alarm_period: period of those alarms (one evaluation period); default 1 minute.
    """

    reserve_inventory: lambda_.IFunction
    charge_payment: lambda_.IFunction
    ship_order: lambda_.IFunction
    refund_payment: lambda_.IFunction
    release_inventory: lambda_.IFunction
    finalize_order: lambda_.IFunction
    step_timeout: Duration = field(default_factory=lambda: Duration.seconds(30))
    forward_retry: RetryPolicy = field(default_factory=RetryPolicy)
    compensation_retry: RetryPolicy = field(
        default_factory=lambda: RetryPolicy(
            interval=Duration.seconds(2), max_attempts=5, max_delay=Duration.seconds(30)
        )
    )
    transient_errors: Sequence[str] = DEFAULT_TRANSIENT_ERRORS
    refused_input_errors: Sequence[str] = DEFAULT_REFUSED_INPUT_ERRORS
    removal_policy: RemovalPolicy = RemovalPolicy.DESTROY
    log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH
    log_encryption_key: kms.IKey | None = None
    alarm_topic: sns.ITopic | None = None
    alarm_period: Duration = field(default_factory=lambda: Duration.minutes(1))


class OrderSaga(Construct):
    """A Standard workflow that never leaves an order half-done.

    Input: references only, ``{"order_id", "payment_attempt", "correlation_id"}``; each step
    reads what it needs from the orders table (no customer data in the execution history).

    - ReserveInventory fails -> ReleaseInventory (a partial reservation is released).
    - ChargePayment declined -> ReleaseInventory; any other charge failure (outcome unknown)
      -> RefundPayment (asks the provider by idempotency key, refunds only what moved) -> ReleaseInventory.
    - ShipOrder fails -> RefundPayment -> ReleaseInventory.
    - A compensation that still fails after its retries -> NEEDS_ATTENTION and the execution fails
      (a failed refund still releases the stock first: ReleaseInventoryThenPark).
    - Input ``"compensate": true`` (an operator's repair) goes straight to the compensations.

    The execution timeout is budgeted: three forward steps and three compensation tasks at their
    worst case (every attempt timing out, maximal backoff) plus one finalize step, plus 60 s.

    Logging: level ALL *with* execution data, on purpose. The execution input carries references
    only (``order_id``, ``payment_attempt``, ``correlation_id``; intake enforces it), each step
    returns references and statuses (no payment token, customer name or address), and the error
    objects the catches keep are error names and causes. So the execution log holds no card or
    customer data, and it is what answers "what happened to order 123?" (every state's input and
    output). Should a step ever return customer data, lower this to ERROR without execution data.
    In prod the log group is encrypted with the customer-managed key and kept a year.

    Alarms (with ``alarm_topic``): ``ExecutionsFailed``, ``ExecutionsTimedOut`` and
    ``ExecutionThrottled`` > 0 (Sum over ``alarm_period``, one evaluation period, missing data not
    breaching), each notifying the topic on ALARM and OK. A failed execution is an order parked as
    NEEDS_ATTENTION or an input refused; a timed-out one is an order left half-done.

    Attributes:
        state_machine: the ``sfn.StateMachine``.
        log_group: its execution log group (level ALL).
        timeout: the execution timeout.
        alarms: ``{"failed" | "timed_out" | "throttled": alarm}``; empty without ``alarm_topic``.
    """

    def __init__(self, scope: Construct, construct_id: str, *, props: OrderSagaProps) -> None:
        super().__init__(scope, construct_id)
        step_s = props.step_timeout.to_seconds()
        budget = (
            3 * props.forward_retry.worst_case_seconds(step_s)
            + 3 * props.compensation_retry.worst_case_seconds(step_s)  # refund, release, release-then-park
            + props.forward_retry.worst_case_seconds(step_s)  # the one Mark* step that runs
        )
        self.timeout = Duration.seconds(int(budget) + 60)

        def step(name: str, fn: lambda_.IFunction, result: str) -> tasks.LambdaInvoke:
            return tasks.LambdaInvoke(
                self,
                name,
                lambda_function=fn,
                payload_response_only=True,
                retry_on_service_exceptions=False,
                result_path=f"$.{result}",
            )

        def finalize(name: str, outcome: str, error_path: str | None = None) -> tasks.LambdaInvoke:
            payload: dict[str, object] = {
                "outcome": outcome,
                "order_id": sfn.JsonPath.string_at("$.order_id"),
                "payment_attempt": sfn.JsonPath.number_at("$.payment_attempt"),
                "correlation_id": sfn.JsonPath.string_at("$.correlation_id"),
            }
            if error_path:
                payload["error"] = sfn.JsonPath.object_at(error_path)
            task = tasks.LambdaInvoke(
                self,
                name,
                lambda_function=props.finalize_order,
                payload=sfn.TaskInput.from_object(payload),
                payload_response_only=True,
                retry_on_service_exceptions=False,
                result_path="$.final",
            )
            self._retry(task, list(props.transient_errors), props.forward_retry)
            return task

        reserve = step("ReserveInventory", props.reserve_inventory, "reservation")
        charge = step("ChargePayment", props.charge_payment, "payment")
        ship = step("ShipOrder", props.ship_order, "shipment")
        refund = step("RefundPayment", props.refund_payment, "refund")
        release = step("ReleaseInventory", props.release_inventory, "release")
        for forward in (reserve, charge, ship):
            self._retry(forward, list(props.transient_errors), props.forward_retry)
        for compensation in (refund, release):
            self._retry(compensation, ["States.ALL"], props.compensation_retry)

        completed = finalize("MarkCompleted", "COMPLETED").next(sfn.Succeed(self, "OrderCompleted"))
        compensated = finalize("MarkCompensated", "COMPENSATED").next(sfn.Succeed(self, "OrderCompensated"))
        needs_attention = finalize("MarkNeedsAttention", "NEEDS_ATTENTION", "$.compensation_error").next(
            sfn.Fail(
                self,
                "CompensationFailed",
                error="CompensationFailed",
                cause="A compensation kept failing after its retries; the order is parked as NEEDS_ATTENTION",
            )
        )

        error_path = "$.error"
        # A refund that keeps failing must not also keep the stock: release it, then park the order.
        release_then_park = step("ReleaseInventoryThenPark", props.release_inventory, "release")
        self._retry(release_then_park, ["States.ALL"], props.compensation_retry)
        release_then_park.add_catch(needs_attention, errors=["States.ALL"], result_path="$.release_error")
        release_then_park.next(needs_attention)
        refund.add_catch(release_then_park, errors=["States.ALL"], result_path="$.compensation_error")
        release.add_catch(needs_attention, errors=["States.ALL"], result_path="$.compensation_error")
        refund.next(release)
        release.next(compensated)

        refused = sfn.Fail(
            self,
            "InputRefused",
            error="InputRefused",
            cause="The execution input names no order this saga can act on (see the step's log); nothing was done",
        )
        reserve.add_catch(refused, errors=list(props.refused_input_errors), result_path=error_path)
        reserve.add_catch(release, errors=["States.ALL"], result_path=error_path)
        charge.add_catch(release, errors=["PaymentDeclined"], result_path=error_path)
        charge.add_catch(refund, errors=["States.ALL"], result_path=error_path)
        ship.add_catch(refund, errors=["States.ALL"], result_path=error_path)

        reserve.next(charge).next(ship).next(completed)
        # An operator's repair (`ops repair --action compensate`) starts at the compensations.
        route = sfn.Choice(self, "Route", comment="compensate=true (repair) skips to the compensations")
        route.when(
            sfn.Condition.and_(
                sfn.Condition.is_present("$.compensate"), sfn.Condition.boolean_equals("$.compensate", True)
            ),
            refund,
        )
        route.otherwise(reserve)
        definition = route

        self.log_group = logs.LogGroup(
            self,
            "ExecutionLogs",
            retention=props.log_retention,
            removal_policy=props.removal_policy,
            encryption_key=props.log_encryption_key,
        )
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            definition_body=sfn.DefinitionBody.from_chainable(definition),
            state_machine_type=sfn.StateMachineType.STANDARD,
            timeout=self.timeout,
            tracing_enabled=True,
            logs=sfn.LogOptions(destination=self.log_group, level=sfn.LogLevel.ALL, include_execution_data=True),
        )

        self.alarms: dict[str, cloudwatch.Alarm] = {}
        if props.alarm_topic is not None:
            machine = self.state_machine
            for key, name, metric, what in (
                (
                    "failed",
                    "ExecutionsFailedAlarm",
                    machine.metric_failed,
                    "executions failed (order parked or input refused)",
                ),
                (
                    "timed_out",
                    "ExecutionsTimedOutAlarm",
                    machine.metric_timed_out,
                    "executions timed out (order half-done)",
                ),
                ("throttled", "ExecutionThrottledAlarm", machine.metric_throttled, "executions throttled"),
            ):
                self.alarms[key] = first_occurrence_alarm(
                    self,
                    name,
                    metric(period=props.alarm_period, statistic="Sum"),
                    f"order saga: {what}",
                    props.alarm_topic,
                )

    @staticmethod
    def _retry(task: tasks.LambdaInvoke, errors: list[str], policy: RetryPolicy) -> None:
        task.add_retry(
            errors=errors,
            interval=policy.interval,
            backoff_rate=policy.backoff_rate,
            max_attempts=policy.max_attempts,
            max_delay=policy.max_delay,
            jitter_strategy=sfn.JitterType.FULL,
        )
