"""The courier saga's stack: a deliveries table, seven tiny functions, and the generic saga.

Reserve a parcel slot -> charge the customer -> book a courier -> notify the customer.
Compensations: release the slot, refund, cancel the courier (notify has none: it is last). A
declined card skips the refund. The outcome (DELIVERED / CANCELLED / NEEDS_ATTENTION) is written by
a direct DynamoDB UpdateItem, conditional so that a repeat never overwrites it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from constructs_lib.generic_saga import (
    DYNAMODB_TRANSIENT_ERRORS,
    LAMBDA_SERVICE_ERRORS,
    LambdaTask,
    RetryPolicy,
    Saga,
    SagaProps,
    SagaRecorder,
    SagaStep,
    ServiceTask,
)

HANDLERS_DIR = Path(__file__).resolve().parent / "handlers"
FUNCTION_TIMEOUT = Duration.seconds(10)


def record_outcome(table: dynamodb.ITable, outcome: str) -> ServiceTask:
    """``SET outcome = <outcome>`` if the delivery has none yet (a repeat changes nothing)."""

    def build(scope: Construct, state_id: str, *, result_path: str, task_timeout: sfn.Timeout) -> Any:
        value = tasks.DynamoAttributeValue
        return tasks.DynamoUpdateItem(
            scope,
            state_id,
            table=table,
            key={"delivery_id": value.from_string(sfn.JsonPath.string_at("$.delivery_id"))},
            update_expression="SET #o = :o",
            condition_expression="attribute_not_exists(#o)",
            expression_attribute_names={"#o": "outcome"},
            expression_attribute_values={":o": value.from_string(outcome)},
            result_selector={"outcome": outcome},
            result_path=result_path,
            task_timeout=task_timeout,
        )

    return ServiceTask(build, retry_on=DYNAMODB_TRANSIENT_ERRORS)


class CourierSagaStack(Stack):
    """Attributes: ``table``, ``functions`` (by action), ``saga``."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.table = dynamodb.Table(
            self,
            "Deliveries",
            partition_key=dynamodb.Attribute(name="delivery_id", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            removal_policy=RemovalPolicy.DESTROY,
        )
        code = lambda_.Code.from_asset(str(HANDLERS_DIR))
        self.functions: dict[str, lambda_.Function] = {}
        for action in ("reserve", "release", "charge", "refund", "book_courier", "cancel_courier", "notify"):
            fn = lambda_.Function(
                self,
                "".join(part.title() for part in action.split("_")),
                runtime=lambda_.Runtime.PYTHON_3_12,
                architecture=lambda_.Architecture.ARM_64,
                handler=f"steps.{action}",
                code=code,
                timeout=FUNCTION_TIMEOUT,
                environment={"TABLE_NAME": self.table.table_name},
            )
            self.table.grant(fn, "dynamodb:UpdateItem")
            self.functions[action] = fn
        f = self.functions

        def task(action: str) -> LambdaTask:
            return LambdaTask(f[action])  # the timeout is read from the function

        self.saga = Saga(
            self,
            "DeliverySaga",
            props=SagaProps(
                steps=[
                    SagaStep("ReserveSlot", task("reserve"), task("release"), compensation_name="ReleaseSlot"),
                    SagaStep(
                        "ChargeCustomer",
                        task("charge"),
                        task("refund"),
                        compensation_name="RefundCustomer",
                        skip_compensation_on=("CardDeclined",),
                    ),
                    SagaStep(
                        "BookCourier", task("book_courier"), task("cancel_courier"), compensation_name="CancelCourier"
                    ),
                    SagaStep("NotifyCustomer", task("notify")),
                ],
                completed=SagaRecorder(
                    "RecordDelivered",
                    record_outcome(self.table, "DELIVERED"),
                    already_recorded_on=("DynamoDB.ConditionalCheckFailedException",),
                ),
                compensated=SagaRecorder(
                    "RecordCancelled",
                    record_outcome(self.table, "CANCELLED"),
                    already_recorded_on=("DynamoDB.ConditionalCheckFailedException",),
                ),
                parked=SagaRecorder("RecordNeedsAttention", record_outcome(self.table, "NEEDS_ATTENTION")),
                retry_on=LAMBDA_SERVICE_ERRORS,
                refused_input_errors=("InvalidDelivery",),
                compensation_retry=RetryPolicy(interval=Duration.seconds(1), max_attempts=2),
                alarm_label="courier saga",
            ),
        )
