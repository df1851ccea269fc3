"""The travel booking stack: a bookings table, an idempotency table, six step functions on the middleware, the
generic saga with its defaults (retries cover what the middleware raises; business outcomes never page), and an
SQS intake starting one execution per booking request.

Reserve the hotel -> book the flight -> charge the card; compensations in reverse (cancel the flight, cancel the
hotel, refund the card). A declined card skips the refund: nothing was charged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk import Duration, Stack
from aws_cdk import aws_sns as sns
from constructs import Construct

# --8<-- [start:imports]
from constructs_lib.function import PipelineFunction, PipelineFunctionProps
from constructs_lib.generic_saga import LambdaTask, Saga, SagaProps, SagaStep
from constructs_lib.layers import PythonPackagesLayer, PythonPackagesLayerProps
from constructs_lib.queue import ResilientQueue, ResilientQueueProps
from constructs_lib.tables import DataTable, DataTableProps, IdempotencyTable

# --8<-- [end:imports]

FUNCTIONS_DIR = Path(__file__).resolve().parents[1] / "functions"
NAMESPACE = "TravelBooking"
#: Each step's handler in functions/steps.py, by function construct ID.
STEPS = {
    "ReserveHotel": "reserve_hotel",
    "CancelHotel": "cancel_hotel",
    "BookFlight": "book_flight",
    "CancelFlight": "cancel_flight",
    "ChargeCard": "charge_card",
    "RefundCard": "refund_card",
}


class TravelBookingStack(Stack):
    """Attributes: ``bookings`` (the table), ``functions`` (by construct ID, the intake's ``Intake``), ``saga``,
    ``requests`` (the intake's queue and DLQ)."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(scope, construct_id, **kwargs)
        # --8<-- [start:stack]
        oncall = sns.Topic(self, "Oncall")
        self.bookings = DataTable(self, "Bookings", props=DataTableProps(partition_key="booking_id")).table
        idempotency = IdempotencyTable(self, "Idempotency").table
        # The middleware and what it requires (Powertools...), resolved from what is installed; no test helpers.
        middleware = PythonPackagesLayer(
            self, "Middleware", props=PythonPackagesLayerProps(distributions=["lambda-resilience"])
        )
        self.functions: dict[str, PipelineFunction] = {}
        for name, handler in STEPS.items():
            fn = PipelineFunction(
                self,
                name,
                props=PipelineFunctionProps(
                    code_dir=FUNCTIONS_DIR,
                    handler=f"steps.{handler}",
                    service_name=handler.replace("_", "-"),
                    metrics_namespace=NAMESPACE,
                    timeout=Duration.seconds(10),
                    layers=[middleware.layer],
                    environment={
                        "BOOKINGS_TABLE": self.bookings.table_name,
                        "IDEMPOTENCY_TABLE": idempotency.table_name,
                    },
                    alarm_topic=oncall,
                ),
            )
            self.bookings.grant(fn.function, "dynamodb:UpdateItem")
            idempotency.grant_read_write_data(fn.function)
            self.functions[name] = fn

        def task(name: str) -> LambdaTask:
            return LambdaTask(self.functions[name].function)

        self.saga = Saga(
            self,
            "BookingSaga",
            props=SagaProps(
                steps=[
                    SagaStep("ReserveHotel", task("ReserveHotel"), task("CancelHotel"), "CancelHotel"),
                    SagaStep("BookFlight", task("BookFlight"), task("CancelFlight"), "CancelFlight"),
                    SagaStep(
                        "ChargeCard",
                        task("ChargeCard"),
                        task("RefundCard"),
                        compensation_name="RefundCard",
                        skip_compensation_on=("CardDeclined",),
                    ),
                ],
                alarm_topic=oncall,
                alarm_label="travel booking",
            ),
        )
        # --8<-- [end:stack]
        # --8<-- [start:intake]
        # Booking requests from a queue (with its DLQ and their alarms), each starting one execution.
        intake = PipelineFunction(
            self,
            "Intake",
            props=PipelineFunctionProps(
                code_dir=FUNCTIONS_DIR,
                handler="booking_intake.handler",
                service_name="intake",
                metrics_namespace=NAMESPACE,
                timeout=Duration.seconds(10),
                layers=[middleware.layer],
                environment={"BOOKING_SAGA_ARN": self.saga.state_machine.state_machine_arn},
                alarm_topic=oncall,
            ),
        )
        self.requests = ResilientQueue(
            self,
            "BookingRequests",  # its queue: BookingRequestsQueue..., its DLQ: BookingRequestsDlq...
            props=ResilientQueueProps(
                alarm_topic=oncall,
                consumer=intake.function,
                consumer_timeout=intake.timeout,
                dlq_alarm_description="a booking request could not start a booking: read its DLQ attributes",
            ),
        )
        intake.function.add_environment("REQUESTS_DLQ_URL", self.requests.dlq.queue_url)
        self.requests.dlq.grant_send_messages(intake.function)  # permanent failures, dead-lettered at once
        self.saga.state_machine.grant_start_execution(intake.function)
        self.functions["Intake"] = intake
        # --8<-- [end:intake]
