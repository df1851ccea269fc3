"""The courier saga's stack: a deliveries table, seven step functions on the middleware, and the generic saga
on its default retries, with outcome recorders and a park.

Reserve a parcel slot -> charge the customer -> book a courier -> notify the customer.
Compensations: release the slot, refund, cancel the courier (notify has none: it is last). A
declined card skips the refund. The outcome (DELIVERED / CANCELLED / NEEDS_ATTENTION) is written by
a direct DynamoDB UpdateItem (``record_outcome``: this example's, not the library's), conditional so that
a repeat never overwrites it. Where ``examples/travel_booking`` shows the installed packages and the local
run on the generic command, this one shows the saga's recorders, a compensation that keeps failing (the park)
and a ``ServiceTask``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk import Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from aws_cdk.aws_lambda import IFunction
from constructs import Construct

from constructs_lib.function import PipelineFunction, PipelineFunctionProps
from constructs_lib.generic_saga import (
    DYNAMODB_TRANSIENT_ERRORS,
    LambdaTask,
    RetryPolicy,
    Saga,
    SagaProps,
    SagaRecorder,
    SagaStep,
    ServiceTask,
)
from constructs_lib.layers import PythonPackagesLayer, PythonPackagesLayerProps
from constructs_lib.tables import DataTable, DataTableProps, IdempotencyTable

HANDLERS_DIR = Path(__file__).resolve().parent / "handlers"
FUNCTION_TIMEOUT = Duration.seconds(10)
NAMESPACE = "CourierSaga"
ACTIONS = ("reserve", "release", "charge", "refund", "book_courier", "cancel_courier", "notify")


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
        oncall = sns.Topic(self, "Oncall")
        self.table = DataTable(self, "Deliveries", props=DataTableProps(partition_key="delivery_id")).table
        idempotency = IdempotencyTable(self, "Idempotency").table
        middleware = PythonPackagesLayer(
            self, "Middleware", props=PythonPackagesLayerProps(distributions=["lambda-resilience"])
        )
        self.functions: dict[str, IFunction] = {}
        for action in ACTIONS:
            fn = PipelineFunction(
                self,
                "".join(part.title() for part in action.split("_")),
                props=PipelineFunctionProps(
                    code_dir=HANDLERS_DIR,
                    handler=f"steps.{action}",
                    service_name=action.replace("_", "-"),
                    metrics_namespace=NAMESPACE,
                    timeout=FUNCTION_TIMEOUT,
                    layers=[middleware.layer],
                    environment={"TABLE_NAME": self.table.table_name, "IDEMPOTENCY_TABLE": idempotency.table_name},
                    alarm_topic=oncall,
                ),
            ).function
            self.table.grant(fn, "dynamodb:UpdateItem")
            idempotency.grant_read_write_data(fn)
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
                compensation_retry=RetryPolicy(interval=Duration.seconds(1), max_attempts=2),
                alarm_topic=oncall,
                alarm_label="courier saga",
            ),
        )
