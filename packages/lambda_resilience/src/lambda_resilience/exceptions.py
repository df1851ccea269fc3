"""The package's one exception tree.

Every error raised on purpose derives from :class:`ResilienceError` and carries a ``category``
(see :mod:`lambda_resilience.classification`). Applications derive their own business errors
from :class:`PermanentError` or :class:`TransientError` so that batch processing, DLQ routing and
step handlers treat them correctly without knowing them.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

Category = Literal["transient", "permanent", "unknown"]
TRANSIENT: Category = "transient"
PERMANENT: Category = "permanent"
UNKNOWN: Category = "unknown"
CATEGORIES: tuple[Category, ...] = (PERMANENT, TRANSIENT, UNKNOWN)


class ResilienceError(Exception):
    """Base of every error raised on purpose (by this package or by an application built on it)."""

    category: ClassVar[Category] = PERMANENT


class PermanentError(ResilienceError):
    """Retrying will not help: dead-letter the message / compensate."""

    category: ClassVar[Category] = PERMANENT


class BusinessOutcome(PermanentError):
    """A permanent error that is a normal business result (a declined card, an unstocked SKU, an
    undeliverable address): raised so a workflow can route it by name, counted as an expected
    error (``ExpectedErrors``), never paged on."""


class TransientError(ResilienceError):
    """Retrying may help: let the redrive policy / Step Functions Retry do its work."""

    category: ClassVar[Category] = TRANSIENT


class DependencyUnavailable(TransientError):
    """What the application calls outside its own AWS resources (a partner's API: a payment provider, a
    carrier) failed transiently: a 5xx or 429, a timeout, a refused connection, an answer off its contract.
    Derive the adapter's transient error from it: :func:`~lambda_resilience.step.step_handler` counts it (or a
    failure it caused, ``raise ... from``) as ``DependencyFailures`` too, so an outage alarm reads the
    dependency's trouble only, never the step's own throttled AWS calls or an idempotency record in progress."""


class ConfigurationError(PermanentError):
    """A required setting is missing or invalid."""


class MissingIdempotencyKey(PermanentError):
    """No idempotency key could be derived: processing would not be idempotent."""


class PayloadMismatch(PermanentError):
    """The same idempotency key arrived with a different payload."""


class InvalidStepInput(PermanentError):
    """A workflow step's input is not the object the step documents."""


class OperationInProgress(TransientError):
    """Another invocation holds the idempotency record; retry after it finishes or expires."""


class TransientStepError(TransientError):
    """The one error name workflow steps raise for transient failures (Step Functions retries it)."""


class EffectDoneOutcomeNotWritten(PermanentError):
    """A workflow step's effect is done (a parcel booked, stock given back) but recording the
    workflow's outcome failed (throttled, refused by a concurrent writer, a bug): the workflow must
    record the outcome another way and never compensate the effect. Raised under this name, never
    retried as the step (its effect would be asked for again), counted as expected unless its
    cause is unknown."""


class UnknownStepError(ResilienceError):
    """The error name workflow steps raise for unexpected failures (a bug?): retried, then compensated."""

    category: ClassVar[Category] = UNKNOWN


class UncachedAnswer(Exception):  # an answer, not an error: never classified, never logged as a failure
    """Raised by an idempotent operation to answer ``result`` without storing it under the key.

    An idempotency record holds an effect's outcome. An answer that depends on the moment (a
    compensation that does nothing because of the order's status right now: "stale") must be computed
    again on every call, or a later, legitimate call with the same key (an operator's repair, a Step
    Functions Redrive) replays a no-op. :class:`~lambda_resilience.idempotency.IdempotentOperation`
    returns ``result`` to its caller; Powertools deletes the in-progress record, as for any exception."""

    def __init__(self, result: dict[str, Any]) -> None:
        super().__init__("an answer of the moment: returned, not stored")
        self.result = result
