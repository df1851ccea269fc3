"""The intake function's settings."""

from __future__ import annotations

from typing import NamedTuple

from order_domain import env as names
from order_domain.settings import (
    DEFAULT_IDEMPOTENCY_TTL_SECONDS,
    Env,
    environ,
    idempotent_order_fields,
    optional,
    required,
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

    @classmethod
    def from_env(cls, env: Env | None = None) -> IntakeSettings:
        env = environ(env)
        return cls(
            **idempotent_order_fields(env),
            state_machine_arn=required(env, names.STATE_MACHINE_ARN),
            dead_letter_queue_url=optional(env, names.DEAD_LETTER_QUEUE_URL),
            failures_table=optional(env, names.FAILURES_TABLE_NAME),
            throttle_requeue_queue_url=optional(env, names.THROTTLE_REQUEUE_QUEUE_URL),
        )
