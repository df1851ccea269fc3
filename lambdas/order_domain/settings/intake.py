"""The intake function's settings."""

from __future__ import annotations

from typing import NamedTuple

from order_domain.settings import (
    DEFAULT_IDEMPOTENCY_TTL_SECONDS,
)

#: The orders queue's maxReceiveCount. AWS: for a queue a Lambda function consumes, set it to at least 5
#: so a throttled batch is retried before it is dead-lettered
#: (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html).
ORDERS_MAX_RECEIVE_COUNT = 5
#: Intake's requeues of a record whose StartExecution is throttled (lambda_resilience.backoff), and
#: their largest delay (SQS allows 900 s). The order is RECEIVED and untouched meanwhile: the stuck
#: threshold budgets this (stacks/order_constructs/sweeper.py), so 40 x 60 s, not 100 (40 still outlasts
#: the 1:100 Black Friday backlog of `make spike`, about 10 minutes, with room to spare).
THROTTLE_MAX_REQUEUES = 40
THROTTLE_MAX_DELAY_SECONDS = 60


def start_delay_budget_seconds(*, visibility_timeout_seconds: float) -> float:
    """The longest intake may hold an order RECEIVED before its execution starts under a sustained
    throttle: every requeue at its largest delay, then every receive the redrive policy allows."""
    return THROTTLE_MAX_REQUEUES * THROTTLE_MAX_DELAY_SECONDS + ORDERS_MAX_RECEIVE_COUNT * visibility_timeout_seconds


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
