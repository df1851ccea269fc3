"""Idempotency settings: command shape, business keys, in-progress expiry bounds."""

from __future__ import annotations

from lambda_resilience.exceptions import MissingIdempotencyKey

#: Field of the command dict that holds the business key, and the field hashed for validation.
KEY_FIELD = "idempotency_key"
PAYLOAD_FIELD = "payload"

#: In-progress expiry = the Lambda's remaining time, clamped to these bounds (seconds). The floor
#: keeps a nearly timed-out invocation from being taken over while it still writes; the ceiling
#: bounds how long a crashed attempt blocks redelivery (Lambda's maximum timeout).
DEFAULT_IN_PROGRESS_FLOOR_SECONDS = 5.0
DEFAULT_IN_PROGRESS_CEILING_SECONDS = 900.0


def business_key(entity_id: str, operation: str, attempt: int = 1) -> str:
    """``<entity>#<operation>#attempt-<n>`` (e.g. ``order-123#charge-payment#attempt-1``): the
    key of one business operation, readable by an operator in the idempotency table."""
    if not entity_id or not operation:
        raise MissingIdempotencyKey("entity_id and operation are required to build an idempotency key")
    if attempt < 1:
        raise MissingIdempotencyKey(f"attempt must be >= 1, got {attempt}")
    return f"{entity_id}#{operation}#attempt-{attempt}"


class InProgressExpiry:
    """Bounds (seconds) for how long an IN_PROGRESS record blocks other attempts."""

    __slots__ = ("ceiling_seconds", "floor_seconds")

    def __init__(
        self,
        floor_seconds: float = DEFAULT_IN_PROGRESS_FLOOR_SECONDS,
        ceiling_seconds: float = DEFAULT_IN_PROGRESS_CEILING_SECONDS,
    ) -> None:
        if not 0 <= floor_seconds <= ceiling_seconds:
            raise ValueError("need 0 <= floor_seconds <= ceiling_seconds")
        self.floor_seconds = floor_seconds
        self.ceiling_seconds = ceiling_seconds

    def clamp_ms(self, remaining_ms: int | None) -> int:
        """``remaining_ms`` (the Lambda's remaining time; None: unknown) within the bounds, >= 1 ms."""
        floor_ms, ceiling_ms = int(self.floor_seconds * 1000), int(self.ceiling_seconds * 1000)
        remaining = ceiling_ms if remaining_ms is None else remaining_ms
        return max(1, min(max(remaining, floor_ms), ceiling_ms))
