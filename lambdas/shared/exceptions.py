"""One exception tree for the pipeline, and the classifier of failures into three categories.

- **permanent**: the message itself is wrong and will fail the same way every time (malformed
  input, schema violation, unknown order, payload mismatch, business rejection). Dead-lettered at
  once, never retried; replay needs ``--force``.
- **transient**: a known infrastructure or provider fault that a retry can fix (throttling,
  timeouts, provider outage, an operation still in progress elsewhere). Retried through the
  redrive policy / Step Functions Retry; replayed automatically.
- **unknown**: anything else, most likely a bug (``KeyError``, ``TypeError``, an AWS error code
  we do not expect). Retried like transient (a flaky dependency may be behind it) and, once in
  the DLQ, replayable after the fix is deployed (``ops dlq replay --category unknown``). Never
  dead-lettered on the first receive: a bad deploy must not discard every order at once.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyKeyError,
    IdempotencyValidationError,
)
from botocore.exceptions import ClientError, ConnectionError, ReadTimeoutError

Category = Literal["transient", "permanent", "unknown"]
TRANSIENT: Category = "transient"
PERMANENT: Category = "permanent"
UNKNOWN: Category = "unknown"
CATEGORIES: tuple[Category, ...] = (PERMANENT, TRANSIENT, UNKNOWN)

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


class InvalidStepInput(PermanentError):
    """A saga step's input is not the documented reference object."""


class StaleAttempt(PermanentError):
    """A step or message names a payment attempt that a newer attempt has replaced."""


class OrderClosed(PermanentError):
    """A new payment attempt for an order that can take none (completed, or parked for an operator)."""


class InsufficientStock(PermanentError):
    """ReserveInventory could not reserve every item."""


class PaymentDeclined(PermanentError):
    """The payment provider declined the charge."""


class PaymentIncomplete(PermanentError):
    """Money may have moved but the charge is not complete (partly captured, or only authorised)."""


class ShippingUnavailable(PermanentError):
    """The carrier rejected the shipment."""


class ProviderRejected(PermanentError):
    """An external provider refused the request (HTTP 4xx other than 409 and 429): it will refuse it again."""


class ProviderUnavailable(TransientError):
    """An external provider failed or timed out; its outcome may be unknown."""


class OperationInProgress(TransientError):
    """Another invocation holds the idempotency record; retry after it finishes or expires."""


class AttemptInProgress(TransientError):
    """An earlier payment attempt of the same order is still running: wait for it, then retry."""


class TransientStepError(TransientError):
    """The one error name saga steps raise for transient failures (Step Functions retries it)."""


class UnknownStepError(PipelineError):
    """The error name saga steps raise for unexpected failures (a bug?): retried, then compensated."""

    category: ClassVar[Category] = UNKNOWN


def classify(exc: BaseException) -> Category:
    """Classify any exception as ``permanent``, ``transient`` or ``unknown``.

    Only failures we recognise are permanent or transient; everything else is ``unknown``
    (retried, kept, replayable), so a bug never discards a message on its first receive.
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
        # Any other AWS error (AccessDenied, ValidationException, ResourceNotFound ...) is our
        # bug or our deploy's: unknown, so it is retried and can be replayed after the fix.
        return TRANSIENT if code in TRANSIENT_AWS_CODES or status >= 500 else UNKNOWN
    if isinstance(exc, (ConnectionError, ReadTimeoutError, TimeoutError)):
        return TRANSIENT
    return UNKNOWN
