"""The intake function's settings."""

from __future__ import annotations

from typing import NamedTuple

from order_domain.settings import (
    DEFAULT_IDEMPOTENCY_TTL_SECONDS,
)


class IntakeSettings(NamedTuple):
    """The intake function."""

    idempotency_table: str
    orders_table: str
    state_machine_arn: str
    idempotency_ttl_seconds: int = DEFAULT_IDEMPOTENCY_TTL_SECONDS
    #: Permanent failures go here on their first receive (None: left to the redrive policy).
    dead_letter_queue_url: str | None = None
    #: Transient failures are recorded here for the DLQ's replay (None: not recorded).
    failures_table: str | None = None
    #: Set by the stack unless context intake_throttle_backoff=false (then a throttle burns a receive).
    throttle_requeue_queue_url: str | None = None
