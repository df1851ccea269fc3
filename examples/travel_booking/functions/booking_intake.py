"""Booking requests from SQS: each valid request starts one booking saga execution, named after the booking.

The execution's name is the booking's (``booking-<id>``): a redelivered request (SQS delivers at least once)
finds the execution under way (``ExecutionAlreadyExists``) and starts nothing twice. A request that can never
start a booking is a :class:`~lambda_resilience.exceptions.PermanentError`: dead-lettered on its first receive,
with its category and correlation ID as attributes. A throttled ``StartExecution`` is transient: the record is
reported failed and SQS delivers it again.
"""

from __future__ import annotations

import json
import os
from typing import Any

from aws_lambda_powertools import Logger

from lambda_resilience.aws import client
from lambda_resilience.batch import process_sqs_batch
from lambda_resilience.dlq import FailureRouting
from lambda_resilience.exceptions import PermanentError

logger = Logger()


# --8<-- [start:intake]
class InvalidBookingRequest(PermanentError):
    """The request can never start a booking: dead-lettered at once, never retried."""


def start_booking(record: Any, correlation_id: str) -> dict[str, Any]:
    """One SQS record: ``{"booking_id": "b-1", "card": "4242-..."}`` starts the execution ``booking-b-1``."""
    try:
        body = json.loads(record.body)
    except ValueError:
        raise InvalidBookingRequest("the body is not JSON") from None
    if not isinstance(body, dict) or not isinstance(body.get("booking_id"), str) or not body["booking_id"]:
        raise InvalidBookingRequest("a booking request needs a 'booking_id' string")
    sfn = client("stepfunctions")
    execution_input = {"booking_id": body["booking_id"], "card": str(body.get("card", ""))}
    try:
        sfn.start_execution(
            stateMachineArn=os.environ["BOOKING_SAGA_ARN"],
            name=f"booking-{body['booking_id']}",  # one execution per booking, whatever SQS redelivers
            input=json.dumps({**execution_input, "correlation_id": correlation_id}),
        )
    except sfn.exceptions.ExecutionAlreadyExists:
        logger.info("booking already started", extra={"booking_id": body["booking_id"]})
    return {"booking_id": body["booking_id"]}


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    # Permanent failures go to the queue's DLQ on their first receive (None: no failures table).
    routing = FailureRouting(os.environ["REQUESTS_DLQ_URL"], None, client)
    return process_sqs_batch(event, context, start_booking, logger=logger, routing=routing)


# --8<-- [end:intake]
