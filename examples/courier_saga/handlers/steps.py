"""The courier saga's step handlers, each a ``step_handler`` on the middleware (``lambda_resilience``).

Each step appends what it did to the delivery's ``steps`` list in the deliveries table, so a run
shows the order in which steps and compensations ran. The execution input may name failures to
simulate, per action: ``{"delivery_id": "d-1", "fail": {"book_courier": "CourierUnavailable"}}``
(a test hook: a real handler would call the warehouse, the payment provider, the courier...).

Each step runs once per delivery, action and ``attempt`` (``business_key``; the input's ``attempt``, default 1):
a retried or redelivered step gets the first call's result. A declined card, an unavailable courier and an
unreachable customer are :class:`~lambda_resilience.exceptions.BusinessOutcome` s: the saga routes them by
name, the middleware counts them as ``ExpectedErrors`` and the function's ``Errors - ExpectedErrors`` alarm
stays quiet. A broken compensation is a bug: raised as ``UnknownStepError``, retried, then parked (it pages).
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


class CardDeclined(BusinessOutcome):
    """The card was declined: no money moved (the saga skips the refund)."""


class CourierUnavailable(BusinessOutcome):
    """No courier could be booked."""


class NotificationFailed(BusinessOutcome):
    """The customer could not be notified: the delivery is cancelled."""


class CompensationBroken(Exception):
    """A compensation that fails (to exercise the park path): not classified, so ``UnknownStepError``."""


ERRORS: dict[str, type[Exception]] = {
    e.__name__: e for e in (CardDeclined, CourierUnavailable, NotificationFailed, CompensationBroken)
}


def parse(event: Any) -> StepInput:
    """The execution input: ``{"delivery_id": "d-1", "attempt": 1, "fail": {...}}``."""
    if not isinstance(event, dict) or not isinstance(event.get("delivery_id"), str) or not event["delivery_id"]:
        raise InvalidStepInput("the input needs a 'delivery_id' string")
    attempt = int(event.get("attempt", 1))
    payload = {"delivery_id": event["delivery_id"], "attempt": attempt, "fail": dict(event.get("fail") or {})}
    operation = os.environ["POWERTOOLS_SERVICE_NAME"]
    return StepInput(idempotency_key=business_key(payload["delivery_id"], operation, attempt), payload=payload)


def _action(action: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def run(payload: dict[str, Any]) -> dict[str, Any]:
        failure = payload["fail"].get(action)
        client("dynamodb").update_item(
            TableName=os.environ["TABLE_NAME"],
            Key={"delivery_id": {"S": payload["delivery_id"]}},
            UpdateExpression="SET #steps = list_append(if_not_exists(#steps, :none), :step)",
            ExpressionAttributeNames={"#steps": "steps"},
            ExpressionAttributeValues={
                ":none": {"L": []},
                ":step": {"L": [{"S": f"{action}!" if failure else action}]},
            },
        )
        if failure:
            raise ERRORS[failure](f"{action} failed ({failure})")
        return {"action": action, "status": "done"}

    return run


def _handler(action: str) -> Handler:
    """The function's step handler, built on its first call (its environment is the function's)."""
    built: list[Handler] = []

    def handler(event: Any, context: Any) -> dict[str, Any]:
        if not built:
            idempotent = IdempotentOperation(os.environ["IDEMPOTENCY_TABLE"], ttl_seconds=86_400, logger=logger)
            name = os.environ["POWERTOOLS_SERVICE_NAME"]
            built.append(step_handler(name, _action(action), parse=parse, idempotent=idempotent, logger=logger))
        return built[0](event, context)

    return handler


reserve = _handler("reserve")
release = _handler("release")
charge = _handler("charge")
refund = _handler("refund")
book_courier = _handler("book_courier")
cancel_courier = _handler("cancel_courier")
notify = _handler("notify")
