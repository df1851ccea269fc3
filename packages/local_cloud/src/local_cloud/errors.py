"""The emulator's own exception for a caller's mistake (a wrong quota name or value, an unknown region
class), and the service errors it answers as AWS does (:func:`service_error`)."""

from __future__ import annotations

import uuid
from typing import Any


class LocalCloudError(Exception):
    """A caller's mistake the emulator detected; the message says what to do."""


class UsageError(LocalCloudError, ValueError):
    """An option value is invalid (a quota, a scale, a region class)."""


def service_error(client: Any, operation: str, code: str, message: str, status: int, **extra: Any) -> Exception:
    """The exception botocore raises when the service answers ``code``: the client's modeled class for the
    code (plain ``ClientError`` when the service models none), the code and message, the HTTP status and a
    request ID, which every AWS answer carries and Step Functions' service integrations quote in a
    failure's cause. ``extra`` adds top-level response fields (Lambda's ``Reason``)."""
    response: dict[str, Any] = {
        "Error": {"Code": code, "Message": message},
        "ResponseMetadata": {"HTTPStatusCode": status, "RequestId": str(uuid.uuid4())},
        **extra,
    }
    error: Exception = client.exceptions.from_code(code)(response, operation)
    return error
