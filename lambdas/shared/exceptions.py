"""One exception tree for the pipeline, and the transient/permanent classifier.

Transient: a retry or a replay can fix it (throttling, timeouts, provider outage, an operation
still in progress elsewhere). Permanent: it will fail the same way every time (malformed input,
schema violation, payload mismatch, business rejection).
"""

from __future__ import annotations

import json
from typing import ClassVar, Literal

from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyKeyError,
    IdempotencyValidationError,
)
from botocore.exceptions import ClientError, ConnectionError, ReadTimeoutError

Category = Literal["transient", "permanent"]
TRANSIENT: Category = "transient"
PERMANENT: Category = "permanent"

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


class PipelineError(Exception):
    """Base of every error the pipeline raises on purpose."""

    category: ClassVar[Category] = PERMANENT


class PermanentError(PipelineError):
    """Retrying will not help: route to the DLQ / compensate."""

    category: ClassVar[Category] = PERMANENT


class TransientError(PipelineError):
    """Retrying may help: let the redrive policy / Step Functions Retry do its work."""

    category: ClassVar[Category] = TRANSIENT


class ConfigurationError(PermanentError):
    """A required setting is missing or invalid."""


class InvalidOrder(PermanentError):
    """Malformed JSON or a payload that violates the order schema."""


class MissingIdempotencyKey(PermanentError):
    """No idempotency key could be derived: processing would not be idempotent."""


class PayloadMismatch(PermanentError):
    """The same idempotency key arrived with a different payload."""


class InvalidTransition(PermanentError):
    """An order status change that would skip a state or move backwards."""


class UnknownOrder(PermanentError):
    """A step referenced an order that does not exist."""


class InsufficientStock(PermanentError):
    """ReserveInventory could not reserve every item."""


class PaymentDeclined(PermanentError):
    """The payment provider declined the charge."""


class PaymentIncomplete(PermanentError):
    """Money may have moved but the charge is not complete (partly captured, or only authorised)."""


class ShippingUnavailable(PermanentError):
    """The carrier rejected the shipment."""


class ProviderUnavailable(TransientError):
    """An external provider failed or timed out; its outcome may be unknown."""


class OperationInProgress(TransientError):
    """Another invocation holds the idempotency record; retry after it finishes or expires."""


class TransientStepError(TransientError):
    """The one error name saga steps raise for transient failures (Step Functions retries it)."""


def classify(exc: BaseException) -> Category:
    """Classify any exception as ``transient`` or ``permanent``.

    Unknown exceptions count as transient: a retry costs little, and the message is kept
    (redrive, then DLQ) rather than dropped.
    """
    if isinstance(exc, PipelineError):
        return exc.category
    if isinstance(exc, IdempotencyAlreadyInProgressError):
        return TRANSIENT
    if isinstance(exc, (IdempotencyValidationError, IdempotencyKeyError)):
        return PERMANENT
    if isinstance(exc, ClientError):
        code = exc.response.get("Error", {}).get("Code", "")
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        return TRANSIENT if code in TRANSIENT_AWS_CODES or status >= 500 else PERMANENT
    if isinstance(exc, (ConnectionError, ReadTimeoutError, TimeoutError)):
        return TRANSIENT
    if isinstance(exc, (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, ValueError)):
        return PERMANENT
    return TRANSIENT
