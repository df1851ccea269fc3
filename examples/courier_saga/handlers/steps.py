"""The courier saga's step handlers: tiny on purpose (plain boto3, no middleware).

Each step appends what it did to the delivery's ``steps`` list in the deliveries table, so a run
shows the order in which steps and compensations ran. The execution input may name failures to
simulate, per action: ``{"delivery_id": "d-1", "fail": {"book_courier": "CourierUnavailable"}}``
(a test hook: a real handler would call the warehouse, the payment provider, the courier...).
"""

from __future__ import annotations

import os
from typing import Any

import boto3

TABLE_NAME = os.environ["TABLE_NAME"]
_dynamodb = boto3.client("dynamodb")


class InvalidDelivery(Exception):
    """The input names no delivery: refused before anything is done."""


class CardDeclined(Exception):
    """The card was declined: no money moved (the saga skips the refund)."""


class CourierUnavailable(Exception):
    """No courier could be booked."""


class NotificationFailed(Exception):
    """The customer could not be notified."""


class CompensationBroken(Exception):
    """A compensation that fails (to exercise the park path)."""


ERRORS = {e.__name__: e for e in (CardDeclined, CourierUnavailable, NotificationFailed, CompensationBroken)}


def _run(action: str, event: Any) -> dict[str, Any]:
    if not isinstance(event, dict) or not isinstance(event.get("delivery_id"), str) or not event["delivery_id"]:
        raise InvalidDelivery("the input needs a 'delivery_id' string")
    failure = (event.get("fail") or {}).get(action)
    _dynamodb.update_item(
        TableName=TABLE_NAME,
        Key={"delivery_id": {"S": event["delivery_id"]}},
        UpdateExpression="SET #steps = list_append(if_not_exists(#steps, :none), :step)",
        ExpressionAttributeNames={"#steps": "steps"},
        ExpressionAttributeValues={":none": {"L": []}, ":step": {"L": [{"S": f"{action}!" if failure else action}]}},
    )
    if failure:
        raise ERRORS[failure](f"{action} failed ({failure})")
    return {"action": action, "status": "done"}


def reserve(event: Any, context: Any) -> dict[str, Any]:
    return _run("reserve", event)


def release(event: Any, context: Any) -> dict[str, Any]:
    return _run("release", event)


def charge(event: Any, context: Any) -> dict[str, Any]:
    return _run("charge", event)


def refund(event: Any, context: Any) -> dict[str, Any]:
    return _run("refund", event)


def book_courier(event: Any, context: Any) -> dict[str, Any]:
    return _run("book_courier", event)


def cancel_courier(event: Any, context: Any) -> dict[str, Any]:
    return _run("cancel_courier", event)


def notify(event: Any, context: Any) -> dict[str, Any]:
    return _run("notify", event)
