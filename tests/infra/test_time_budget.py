"""Issue 28, class "time passes": throttle retries and the orders queue's maxReceiveCount sized from
AWS's guidance, and the saga timeout and the stuck threshold budgeted from them and from intake's
throttle requeues (an order whose saga intake is still trying to start is not stuck)."""

from __future__ import annotations

from typing import Any

import order_domain.env as env_names
from lambda_resilience.backoff import MAX_DELAY_SECONDS
from order_domain.settings.intake import (
    ORDERS_MAX_RECEIVE_COUNT,
    THROTTLE_MAX_DELAY_SECONDS,
    THROTTLE_MAX_REQUEUES,
    start_delay_budget_seconds,
)
from stacks.order_constructs.order_saga import DEFAULT_TRANSIENT_ERRORS
from tests.infra.conftest import SynthResult

FORWARD = ("ReserveInventory", "ChargePayment", "ShipOrder")
STEP_TIMEOUT = 30


def test_orders_queue_redrives_after_at_least_five_receives(dev: SynthResult) -> None:
    """AWS: for a queue a Lambda function consumes, set maxReceiveCount to at least 5, so a throttled
    batch is retried before it is dead-lettered
    (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html)."""
    assert ORDERS_MAX_RECEIVE_COUNT >= 5
    assert dev.stack.orders_queue.max_receive_count == ORDERS_MAX_RECEIVE_COUNT
    queues = dev.template.find_resources("AWS::SQS::Queue")
    counts = {
        q["Properties"]["RedrivePolicy"]["maxReceiveCount"]
        for q in queues.values()
        if "RedrivePolicy" in q["Properties"]
    }
    assert ORDERS_MAX_RECEIVE_COUNT in counts


def test_forward_steps_retry_lambda_throttles_as_aws_advises(saga_definition: dict[str, Any]) -> None:
    """Step Functions' best practice for Lambda service errors: IntervalSeconds 2, MaxAttempts 6,
    BackoffRate 2 (https://docs.aws.amazon.com/step-functions/latest/dg/bp-lambda-serviceexception.html);
    the delays' ceilings add up to more than twice a step's timeout, so a live duplicate invocation
    (the first still running, up to the step timeout) does not exhaust them."""
    for name in FORWARD:
        (retry,) = saga_definition["States"][name]["Retry"]
        assert "Lambda.TooManyRequestsException" in retry["ErrorEquals"] == list(DEFAULT_TRANSIENT_ERRORS)
        assert (retry["IntervalSeconds"], retry["MaxAttempts"], retry["BackoffRate"]) == (2, 6, 2), name
        ceilings = sum(min(2 * 2**n, retry["MaxDelaySeconds"]) for n in range(retry["MaxAttempts"]))
        assert ceilings > 2 * STEP_TIMEOUT, name


def test_stuck_threshold_exceeds_the_saga_timeout_plus_intakes_start_delay(dev: SynthResult) -> None:
    """Under a sustained StartExecution throttle intake requeues an order up to THROTTLE_MAX_REQUEUES
    times (each delay at most THROTTLE_MAX_DELAY_SECONDS), then lets SQS redeliver it up to
    maxReceiveCount times: all that time the order is RECEIVED and untouched, and not stuck."""
    assert THROTTLE_MAX_DELAY_SECONDS <= MAX_DELAY_SECONDS
    start_delay = start_delay_budget_seconds(visibility_timeout_seconds=6 * STEP_TIMEOUT)
    assert start_delay == THROTTLE_MAX_REQUEUES * THROTTLE_MAX_DELAY_SECONDS + ORDERS_MAX_RECEIVE_COUNT * 180
    saga_timeout = dev.stack.saga.timeout.to_seconds()
    sweeper = dev.template.find_resources("AWS::Lambda::Function")
    stuck = [
        int(f["Properties"]["Environment"]["Variables"][env_names.STUCK_AFTER_SECONDS])
        for f in sweeper.values()
        if env_names.STUCK_AFTER_SECONDS in f["Properties"].get("Environment", {}).get("Variables", {})
    ]
    assert stuck and stuck[0] > saga_timeout + start_delay
