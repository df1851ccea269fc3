"""Classify any failure as ``permanent``, ``transient`` or ``unknown``.

- **permanent**: the message itself is wrong and will fail the same way every time (malformed
  input, schema violation, payload mismatch, business rejection). Dead-lettered at once, never
  retried; replay needs ``force``.
- **transient**: a known infrastructure or provider fault that a retry can fix (throttling,
  timeouts, an operation still in progress elsewhere). Retried; replayed automatically.
- **unknown**: anything else, most likely a bug (``KeyError``, ``TypeError``, an AWS error code
  nobody expected). Retried like transient and, once in the DLQ, replayable after the fix is
  deployed. Never dead-lettered on the first receive: a bad deploy must not discard every message.
"""

from __future__ import annotations

from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyKeyError,
    IdempotencyValidationError,
)
from botocore.exceptions import ClientError, ConnectionError, ReadTimeoutError

from lambda_resilience.exceptions import (
    CATEGORIES,
    PERMANENT,
    TRANSIENT,
    UNKNOWN,
    Category,
    ResilienceError,
)

__all__ = ["CATEGORIES", "PERMANENT", "TRANSIENT", "TRANSIENT_AWS_CODES", "UNKNOWN", "Category", "classify"]

#: AWS error codes that mean "slow down / try again".
TRANSIENT_AWS_CODES = frozenset(
    {
        "ThrottlingException",
        "Throttling",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "TooManyRequestsException",
        "RequestThrottled",
        "ServiceUnavailable",
        "InternalServerError",
        "InternalFailure",
        "TransactionConflictException",
        "LimitExceededException",
    }
)


def classify(exc: BaseException) -> Category:
    """The category of ``exc``: only recognised failures are permanent or transient.

    Everything else is ``unknown`` (retried, kept, replayable), so a bug never discards a
    message on its first receive.
    """
    if isinstance(exc, ResilienceError):
        return exc.category
    if isinstance(exc, IdempotencyAlreadyInProgressError):
        return TRANSIENT
    if isinstance(exc, (IdempotencyValidationError, IdempotencyKeyError)):
        return PERMANENT
    if isinstance(exc, ClientError):
        code = exc.response.get("Error", {}).get("Code", "")
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        # Any other AWS error (AccessDenied, ValidationException, ResourceNotFound ...) is a bug
        # or a deploy's: unknown, so it is retried and can be replayed after the fix.
        return TRANSIENT if code in TRANSIENT_AWS_CODES or status >= 500 else UNKNOWN
    if isinstance(exc, (ConnectionError, ReadTimeoutError, TimeoutError)):
        return TRANSIENT
    return UNKNOWN
