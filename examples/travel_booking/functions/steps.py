"""The travel booking saga's six steps, each a Step Functions task on the step middleware (``step_handler``).

Each step writes what it did to the booking's item (``hotel``, ``flight``, ``payment``) in the bookings table, once
per booking (``business_key``): a redelivered or retried step gets the first call's result. A declined card is a
:class:`~lambda_resilience.exceptions.BusinessOutcome`: the saga routes it (no refund), the middleware counts it as
``ExpectedErrors`` and the function's ``Errors - ExpectedErrors`` alarm stays quiet. A throttled DynamoDB call is
transient: raised as ``TransientStepError``, which the saga's default retries cover.

The environment (``BOOKINGS_TABLE``, ``IDEMPOTENCY_TABLE``, Powertools' service and namespace) is the function's,
read when the handler is built and on each call, as on Lambda.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger

from lambda_resilience.aws import client
from lambda_resilience.exceptions import BusinessOutcome, InvalidStepInput
from lambda_resilience.idempotency import IdempotentOperation, business_key
from lambda_resilience.step import Handler, StepInput, step_handler

logger = Logger()
#: A test hook standing for the card network's answer: this card is declined.
DECLINED_CARD = "4000-0000-0000-0002"


# --8<-- [start:step]
class CardDeclined(BusinessOutcome):
    """The card was declined: no money moved (the saga skips the refund)."""


def parse(event: Any) -> StepInput:
    """The execution input: ``{"booking_id": "b-1", "card": "4242-...", "nights": 2}``."""
    if not isinstance(event, dict) or not isinstance(event.get("booking_id"), str) or not event["booking_id"]:
        raise InvalidStepInput("the input needs a 'booking_id' string")
    payload = {"booking_id": event["booking_id"], "card": str(event.get("card", ""))}
    operation = os.environ["POWERTOOLS_SERVICE_NAME"]
    return StepInput(idempotency_key=business_key(payload["booking_id"], operation), payload=payload)


def _set(attribute: str, value: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """An action writing ``attribute = value`` on the booking's item."""

    def action(payload: dict[str, Any]) -> dict[str, Any]:
        client("dynamodb").update_item(
            TableName=os.environ["BOOKINGS_TABLE"],
            Key={"booking_id": {"S": payload["booking_id"]}},
            UpdateExpression="SET #a = :v",
            ExpressionAttributeNames={"#a": attribute},
            ExpressionAttributeValues={":v": {"S": value}},
        )
        return {attribute: value}

    return action


def charge(payload: dict[str, Any]) -> dict[str, Any]:
    if payload["card"] == DECLINED_CARD:
        raise CardDeclined(f"card ending {payload['card'][-4:]} declined")
    return _set("payment", "CHARGED")(payload)


def _handler(action: Callable[[dict[str, Any]], dict[str, Any]]) -> Handler:
    """The function's step handler, built on its first call (its environment is the function's)."""
    built: list[Handler] = []

    def handler(event: Any, context: Any) -> dict[str, Any]:
        if not built:
            idempotent = IdempotentOperation(os.environ["IDEMPOTENCY_TABLE"], ttl_seconds=86_400, logger=logger)
            name = os.environ["POWERTOOLS_SERVICE_NAME"]
            built.append(step_handler(name, action, parse=parse, idempotent=idempotent, logger=logger))
        return built[0](event, context)

    return handler


reserve_hotel = _handler(_set("hotel", "RESERVED"))
cancel_hotel = _handler(_set("hotel", "CANCELLED"))
book_flight = _handler(_set("flight", "BOOKED"))
cancel_flight = _handler(_set("flight", "CANCELLED"))
charge_card = _handler(charge)
refund_card = _handler(_set("payment", "REFUNDED"))
# --8<-- [end:step]
