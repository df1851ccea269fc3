"""Issue 28, class "time passes": throttle retries and the orders queue's maxReceiveCount sized from
AWS's guidance, and the saga timeout and the stuck threshold budgeted from them and from intake's
throttle requeues (an order whose saga intake is still trying to start is not stuck)."""

from __future__ import annotations

import random
from typing import Any

import order_domain.env as env_names
from constructs_lib.saga.tasks import THROTTLE_ERRORS
from lambda_resilience.backoff import MAX_DELAY_SECONDS
from order_domain.settings.intake import (
    ORDERS_MAX_RECEIVE_COUNT,
    THROTTLE_MAX_DELAY_SECONDS,
    THROTTLE_MAX_REQUEUES,
    start_delay_budget_seconds,
)
from stacks.order_constructs.order_saga import DEFAULT_TRANSIENT_ERRORS, OUTAGE_ERRORS
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


def test_forward_steps_retry_lambda_service_errors_as_aws_advises(saga_definition: dict[str, Any]) -> None:
    """Step Functions' best practice for Lambda service errors: IntervalSeconds 2, MaxAttempts 6,
    BackoffRate 2 (https://docs.aws.amazon.com/step-functions/latest/dg/bp-lambda-serviceexception.html);
    the delays' ceilings add up to more than twice a step's timeout, so a live duplicate invocation
    (the first still running, up to the step timeout) does not exhaust them. A throttle has its own retrier."""
    for name in FORWARD:
        _throttle, _outage, retry = saga_definition["States"][name]["Retry"]
        waited = (*THROTTLE_ERRORS, *OUTAGE_ERRORS)
        assert retry["ErrorEquals"] == [e for e in DEFAULT_TRANSIENT_ERRORS if e not in waited]
        assert (retry["IntervalSeconds"], retry["MaxAttempts"], retry["BackoffRate"]) == (2, 6, 2), name
        ceilings = sum(min(2 * 2**n, retry["MaxDelaySeconds"]) for n in range(retry["MaxAttempts"]))
        assert ceilings > 2 * STEP_TIMEOUT, name


def _full_jitter_totals(retry: dict[str, Any], runs: int = 20_000) -> list[float]:
    """Total wait of ``runs`` sequences of a retrier's FULL-jitter delays (each uniform in 0 .. its ceiling)."""
    rng = random.Random(40)
    ceilings = [
        min(retry["IntervalSeconds"] * retry["BackoffRate"] ** n, retry["MaxDelaySeconds"])
        for n in range(retry["MaxAttempts"])
    ]
    return [sum(rng.uniform(0, c) for c in ceilings) for _ in range(runs)]


def test_full_jitter_transient_retries_end_under_30_s_in_about_13_percent(saga_definition: dict[str, Any]) -> None:
    """Issue 40's figure, and why a throttle gets its own retrier: the transient retrier's "up to 90 s"
    ends under 30 s in about 13% of sequences (FULL jitter: each delay uniform in 0 .. its ceiling)."""
    totals = _full_jitter_totals(saga_definition["States"]["ReserveInventory"]["Retry"][2])
    assert 0.10 < sum(t < 30 for t in totals) / len(totals) < 0.16


def test_forward_steps_wait_out_a_lambda_throttle_for_minutes(saga_definition: dict[str, Any]) -> None:
    """A throttled invocation ran nothing (Lambda refused it: Lambda.TooManyRequestsException), so it is
    waited out, not compensated: its own retrier, FULL jitter, 1 s doubling to 60 s, 13 retries. Lambda scales
    each function by 1,000 execution environments every 10 seconds up to the account's concurrency
    (https://docs.aws.amazon.com/lambda/latest/dg/scaling-behavior.html): a burst is absorbed in seconds, and
    a throttle that lasts is the account's concurrency exhausted, for as long as the load stays above it.
    The retrier waits out two minutes of it in at least 99% of sequences, at most 483 s in all."""
    for name in FORWARD:
        throttle = saga_definition["States"][name]["Retry"][0]
        assert throttle["ErrorEquals"] == list(THROTTLE_ERRORS) == ["Lambda.TooManyRequestsException"]
        assert (throttle["IntervalSeconds"], throttle["BackoffRate"], throttle["MaxDelaySeconds"]) == (1, 2, 60)
        assert (throttle["MaxAttempts"], throttle["JitterStrategy"]) == (13, "FULL"), name
    totals = _full_jitter_totals(saga_definition["States"]["ReserveInventory"]["Retry"][0])
    assert sum(t >= 120 for t in totals) / len(totals) >= 0.99
    assert max(totals) <= 483


def test_forward_steps_wait_out_a_dependency_outage_for_five_minutes(saga_definition: dict[str, Any]) -> None:
    """Issue 40: a provider's or a table's outage (the step middleware's ``TransientStepError``, a function
    timed out waiting on it) is waited out, not compensated: its own retrier, after the throttle's, 2 s
    doubling to 60 s, 20 retries, FULL jitter: five minutes waited out in at least 99% of sequences (the
    chaos run's outages last 90 s), at most 962 s of delays."""
    assert OUTAGE_ERRORS == ("TransientStepError", "Sandbox.Timedout")
    for name in FORWARD:
        outage = saga_definition["States"][name]["Retry"][1]
        assert outage["ErrorEquals"] == list(OUTAGE_ERRORS), name
        assert (outage["IntervalSeconds"], outage["BackoffRate"], outage["MaxDelaySeconds"]) == (2, 2, 60)
        assert (outage["MaxAttempts"], outage["JitterStrategy"]) == (20, "FULL"), name
    totals = _full_jitter_totals(saga_definition["States"]["ChargePayment"]["Retry"][1])
    assert sum(t >= 300 for t in totals) / len(totals) >= 0.99
    assert max(totals) <= 962


def test_forward_steps_park_a_valid_order_on_any_transient_error_past_its_retries(
    saga_definition: dict[str, Any],
) -> None:
    """Nothing valid is lost (issue 40): a forward step that still fails on a transient or unknown error after
    its retriers parks the order for a person (paged; ``ops repair --action redrive`` finishes it); only a
    business outcome (or an operator's request) compensates."""
    for name in FORWARD:
        catches = saga_definition["States"][name]["Catch"]
        park = next(c for c in catches if c["Next"] == "MarkNeedsAttention")
        assert set(park["ErrorEquals"]) == set(DEFAULT_TRANSIENT_ERRORS), name
        assert catches.index(park) < len(catches) - 1 and catches[-1]["ErrorEquals"] == ["States.ALL"], name


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
